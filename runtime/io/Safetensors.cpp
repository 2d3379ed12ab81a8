//===- Safetensors.cpp - safetensors files
//----------------------------------===//

#include "weft/runtime/Safetensors.h"

#include "weft/runtime/FileUtil.h"
#include "weft/runtime/Json.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_set>

namespace weft {

namespace {

/// The reference implementation refuses headers above 100 MB as well.
constexpr uint64_t kMaxHeaderBytes = 100ull * 1000 * 1000;

const char *const kSafetensorsNames[] = {"F32", "F16", "BF16", "F64", "I64",
                                         "I32", "I8",  "U8",   "BOOL"};

/// Reads a non-negative exact integer.
bool getIndex(const JsonValue &v, int64_t &out) {
  if (!v.isInteger() || v.asInt() < 0)
    return false;
  out = v.asInt();
  return true;
}

} // namespace

const char *safetensorsDTypeName(int64_t dtype) {
  if (dtype < 0 || dtype > WEFT_BOOL)
    return "?";
  return kSafetensorsNames[dtype];
}

bool parseSafetensorsDType(std::string_view name, WeftDType &out) {
  for (int i = 0; i <= WEFT_BOOL; ++i) {
    if (name == kSafetensorsNames[i]) {
      out = static_cast<WeftDType>(i);
      return true;
    }
  }
  return false;
}

SafetensorsReader::~SafetensorsReader() { close(); }

void SafetensorsReader::close() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
  tensors_.clear();
  index_.clear();
  metadata_.clear();
}

const SafetensorsEntry *SafetensorsReader::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

bool SafetensorsReader::open(const std::string &path, std::string &error) {
  close();
  path_ = path;
  auto fail = [&](const std::string &reason) {
    error = path + ": " + reason;
    close();
    return false;
  };
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0)
    return fail(std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd_, &st) != 0)
    return fail(std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return fail("not a regular file");
  uint64_t fileSize = static_cast<uint64_t>(st.st_size);
  if (fileSize < 8)
    return fail("too small to be a safetensors file (" +
                std::to_string(fileSize) + " bytes)");
  unsigned char lenBytes[8];
  std::string reason;
  if (!readFully(fd_, lenBytes, 8, 0, reason))
    return fail("cannot read: " + reason);
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | lenBytes[i];
  if (headerLen == 0)
    return fail("invalid header length 0");
  if (headerLen > fileSize - 8)
    return fail("header length " + std::to_string(headerLen) +
                " exceeds the file size (" + std::to_string(fileSize) +
                " bytes)");
  if (headerLen > kMaxHeaderBytes)
    return fail("header length " + std::to_string(headerLen) +
                " is larger than the 100 MB limit");
  std::string header(headerLen, '\0');
  if (!readFully(fd_, &header[0], headerLen, 8, reason))
    return fail("cannot read the header: " + reason);
  JsonValue root;
  if (!parseJson(header, root, reason))
    return fail("invalid JSON header (offsets count from the header's start "
                "at byte 8): " +
                reason);
  if (!root.isObject())
    return fail("the header is not a JSON object");

  uint64_t dataStart = 8 + headerLen;
  uint64_t bufferSize = fileSize - dataStart;
  std::vector<std::pair<uint64_t, uint64_t>> ranges; // (begin, end)
  std::vector<size_t> rangeOwner;
  for (size_t i = 0; i < root.size(); ++i) {
    const std::string &name = root.keyAt(i);
    const JsonValue &info = root.valueAt(i);
    if (name == "__metadata__") {
      if (!info.isObject())
        return fail("\"__metadata__\" is not an object");
      for (size_t m = 0; m < info.size(); ++m) {
        if (!info.valueAt(m).isString())
          return fail("metadata '" + info.keyAt(m) + "' is not a string");
        metadata_.emplace_back(info.keyAt(m), info.valueAt(m).asString());
      }
      continue;
    }
    std::string what = "tensor '" + name + "': ";
    if (!info.isObject())
      return fail(what + "entry is not an object");
    const JsonValue *dtype = info.get("dtype");
    const JsonValue *shape = info.get("shape");
    const JsonValue *offsets = info.get("data_offsets");
    if (!dtype || !dtype->isString())
      return fail(what + "missing or non-string \"dtype\"");
    if (!shape || !shape->isArray())
      return fail(what + "missing or non-array \"shape\"");
    if (!offsets || !offsets->isArray() || offsets->size() != 2)
      return fail(what + "\"data_offsets\" is not an array of two integers");
    SafetensorsEntry entry;
    entry.name = name;
    if (!parseSafetensorsDType(dtype->asString(), entry.dtype))
      return fail(what + "unsupported dtype '" + dtype->asString() + "'");
    for (size_t d = 0; d < shape->size(); ++d) {
      int64_t dim;
      if (!getIndex(shape->at(d), dim))
        return fail(what + "invalid dimension in \"shape\"");
      entry.shape.push_back(dim);
    }
    int64_t begin, end;
    if (!getIndex(offsets->at(0), begin) || !getIndex(offsets->at(1), end))
      return fail(what + "\"data_offsets\" is not an array of two integers");
    if (begin > end)
      return fail(what + "data_offsets [" + std::to_string(begin) + ", " +
                  std::to_string(end) + "] end before they begin");
    if (static_cast<uint64_t>(end) > bufferSize)
      return fail(what + "data_offsets [" + std::to_string(begin) + ", " +
                  std::to_string(end) + "] run past the end of the file (" +
                  std::to_string(bufferSize) + " data bytes)");
    int64_t count = 0, elementSize = weftDTypeSize(entry.dtype);
    if (!shapeNumElements(entry.shape, count, elementSize))
      return fail(what + "shape " + formatShape(entry.shape) + " is too large");
    if (end - begin != count * elementSize)
      return fail(what + "holds " + std::to_string(end - begin) +
                  " bytes but " + dtype->asString() + formatShape(entry.shape) +
                  " needs " + std::to_string(count * elementSize));
    entry.fileOffset = dataStart + static_cast<uint64_t>(begin);
    entry.byteSize = static_cast<uint64_t>(end - begin);
    if (end > begin) {
      ranges.emplace_back(begin, end);
      rangeOwner.push_back(tensors_.size());
    }
    index_.emplace(name, tensors_.size());
    tensors_.push_back(std::move(entry));
  }

  std::vector<size_t> order(ranges.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ranges[a].first < ranges[b].first;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    size_t prev = order[k - 1], cur = order[k];
    if (ranges[cur].first < ranges[prev].second)
      return fail("tensors '" + tensors_[rangeOwner[prev]].name + "' and '" +
                  tensors_[rangeOwner[cur]].name + "' overlap");
  }
  return true;
}

bool SafetensorsReader::readData(const SafetensorsEntry &entry, void *dst,
                                 std::string &error) const {
  if (fd_ < 0) {
    error = path_ + ": not open";
    return false;
  }
  std::string reason;
  if (!readFully(fd_, dst, entry.byteSize, entry.fileOffset, reason)) {
    error = path_ + ": tensor '" + entry.name + "': cannot read: " + reason;
    return false;
  }
  return true;
}

bool SafetensorsReader::readTensor(const SafetensorsEntry &entry,
                                   HostTensor &out, std::string &error) const {
  out.dtype = entry.dtype;
  out.shape = entry.shape;
  if (!out.data.allocate(entry.byteSize)) {
    error = path_ + ": tensor '" + entry.name + "': out of memory allocating " +
            std::to_string(entry.byteSize) + " bytes";
    return false;
  }
  return readData(entry, out.data.data(), error);
}

bool writeSafetensors(const std::string &path,
                      const std::vector<SafetensorsTensorRef> &tensors,
                      const SafetensorsMetadata &metadata, std::string &error) {
  JsonValue header = JsonValue::object();
  if (!metadata.empty()) {
    JsonValue &meta = header.set("__metadata__", JsonValue::object());
    for (const auto &kv : metadata) {
      if (meta.get(kv.first)) {
        error = path + ": duplicate metadata key '" + kv.first + "'";
        return false;
      }
      meta.set(kv.first, JsonValue::string(kv.second));
    }
  }
  std::unordered_set<std::string> names;
  std::vector<FileChunk> chunks;
  chunks.reserve(tensors.size() + 2);
  chunks.push_back({nullptr, 0}); // length + header, filled in below
  int64_t offset = 0;
  for (const SafetensorsTensorRef &t : tensors) {
    std::string what = path + ": tensor '" + t.name + "': ";
    if (t.name == "__metadata__") {
      error = what + "the name is reserved";
      return false;
    }
    if (!names.insert(t.name).second) {
      error = what + "written twice";
      return false;
    }
    int64_t elementSize = weftDTypeSize(t.dtype), count = 0;
    if (elementSize == 0) {
      error = what + "invalid dtype code " + std::to_string(t.dtype);
      return false;
    }
    if (!shapeNumElements(t.shape, count, elementSize) ||
        offset > INT64_MAX - count * elementSize) {
      error = what + "invalid shape " + formatShape(t.shape);
      return false;
    }
    int64_t bytes = count * elementSize;
    if (bytes && !t.data) {
      error = what + "no data";
      return false;
    }
    JsonValue info = JsonValue::object();
    info.set("dtype", JsonValue::string(safetensorsDTypeName(t.dtype)));
    JsonValue &shape = info.set("shape", JsonValue::array());
    for (int64_t d : t.shape)
      shape.push(JsonValue::integer(d));
    JsonValue &offsets = info.set("data_offsets", JsonValue::array());
    offsets.push(JsonValue::integer(offset));
    offsets.push(JsonValue::integer(offset + bytes));
    header.append(t.name, std::move(info));
    offset += bytes;
    chunks.push_back({t.data, static_cast<size_t>(bytes)});
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string prefix(8, '\0');
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i)
    prefix[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  prefix += text;
  chunks[0] = {prefix.data(), prefix.size()};
  std::string reason;
  if (!writeFileAtomic(path, chunks, reason)) {
    error = path + ": " + reason;
    return false;
  }
  return true;
}

} // namespace weft
