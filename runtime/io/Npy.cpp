//===- Npy.cpp - NumPy .npy files
//-------------------------------------------===//

#include "weft/runtime/Npy.h"

#include "weft/runtime/FileUtil.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string_view>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace weft {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

/// The subset of Python literals that appears in .npy headers.
struct PyValue {
  enum Kind { None, Bool, Int, Str, Tuple, List, Dict } kind = None;
  bool b = false;
  int64_t i = 0;
  std::string str;
  std::vector<PyValue> items;    // Tuple/List elements, Dict values
  std::vector<std::string> keys; // Dict keys (strings only)
};

class PyLiteralParser {
public:
  explicit PyLiteralParser(std::string_view text) : s_(text) {}

  bool parse(PyValue &out, std::string &error) {
    skipSpace();
    if (!parseValue(out, 0))
      return report(error);
    skipSpace();
    if (pos_ != s_.size()) {
      err_ = "unexpected text after the header dict";
      return report(error);
    }
    return true;
  }

private:
  bool report(std::string &error) {
    error = "malformed header (" + err_ + " at header offset " +
            std::to_string(pos_) + ")";
    return false;
  }
  bool fail(const char *what) {
    err_ = what;
    return false;
  }
  void skipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' ||
                                s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }

  bool parseValue(PyValue &out, int depth) {
    if (depth > 16)
      return fail("nesting too deep");
    char c = peek();
    if (c == '\'' || c == '"')
      return parseString(out);
    if (c == '{')
      return parseDict(out, depth);
    if (c == '(' || c == '[')
      return parseSeq(out, depth);
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseInt(out);
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      out.kind = PyValue::Bool;
      out.b = true;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      out.kind = PyValue::Bool;
      out.b = false;
      return true;
    }
    if (s_.substr(pos_, 4) == "None") {
      pos_ += 4;
      out.kind = PyValue::None;
      return true;
    }
    return fail("unexpected character");
  }

  bool parseString(PyValue &out) {
    char quote = s_[pos_++];
    out.kind = PyValue::Str;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\') {
        ++pos_;
        if (pos_ >= s_.size())
          break;
      }
      out.str.push_back(s_[pos_++]);
    }
    if (pos_ >= s_.size())
      return fail("unterminated string");
    ++pos_;
    return true;
  }

  bool parseInt(PyValue &out) {
    size_t start = pos_;
    if (peek() == '-')
      ++pos_;
    if (!(peek() >= '0' && peek() <= '9'))
      return fail("expected a digit");
    while (peek() >= '0' && peek() <= '9')
      ++pos_;
    std::string digits(s_.substr(start, pos_ - start));
    if (peek() == 'L' || peek() == 'l') // Python 2 longs
      ++pos_;
    errno = 0;
    char *end = nullptr;
    long long v = std::strtoll(digits.c_str(), &end, 10);
    if (errno != 0 || !end || *end != '\0')
      return fail("integer out of range");
    out.kind = PyValue::Int;
    out.i = v;
    return true;
  }

  bool parseSeq(PyValue &out, int depth) {
    char close = s_[pos_] == '(' ? ')' : ']';
    out.kind = s_[pos_] == '(' ? PyValue::Tuple : PyValue::List;
    ++pos_;
    while (true) {
      skipSpace();
      if (peek() == close) {
        ++pos_;
        return true;
      }
      PyValue item;
      if (!parseValue(item, depth + 1))
        return false;
      out.items.push_back(std::move(item));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == close) {
        ++pos_;
        return true;
      }
      return fail("expected ',' or the end of a sequence");
    }
  }

  bool parseDict(PyValue &out, int depth) {
    out.kind = PyValue::Dict;
    ++pos_;
    while (true) {
      skipSpace();
      if (peek() == '}') {
        ++pos_;
        return true;
      }
      if (peek() != '\'' && peek() != '"')
        return fail("expected a string key");
      PyValue key;
      if (!parseString(key))
        return false;
      skipSpace();
      if (peek() != ':')
        return fail("expected ':'");
      ++pos_;
      skipSpace();
      PyValue value;
      if (!parseValue(value, depth + 1))
        return false;
      for (const std::string &k : out.keys)
        if (k == key.str)
          return fail("duplicate key");
      out.keys.push_back(std::move(key.str));
      out.items.push_back(std::move(value));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string err_;
};

/// Maps a NumPy dtype string to a weft dtype.
bool dtypeFromDescr(const std::string &descr, int expectedDType, WeftDType &out,
                    std::string &error) {
  if (descr.size() < 2) {
    error = "unsupported dtype '" + descr + "'";
    return false;
  }
  char order = descr[0];
  std::string code = descr.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    error = "unsupported dtype '" + descr + "'";
    return false;
  }
  if (code == "O") {
    error = "object arrays (dtype '" + descr + "') are not supported";
    return false;
  }
  // Single-byte types: the byte order character does not matter.
  if (code == "i1" || code == "u1" || code == "b1") {
    out = code == "i1" ? WEFT_I8 : code == "u1" ? WEFT_U8 : WEFT_BOOL;
    return true;
  }
  if (expectedDType == WEFT_BF16 &&
      (descr == "<u2" || descr == "|V2" || descr == "<V2")) {
    out = WEFT_BF16;
    return true;
  }
  struct Entry {
    const char *code;
    WeftDType dtype;
  };
  static const Entry entries[] = {{"f4", WEFT_F32},
                                  {"f2", WEFT_F16},
                                  {"f8", WEFT_F64},
                                  {"i8", WEFT_I64},
                                  {"i4", WEFT_I32}};
  for (const Entry &e : entries) {
    if (code != e.code)
      continue;
    if (order == '>') {
      error = "big-endian data (dtype '" + descr +
              "') is not supported; save it as '<" + code + "'";
      return false;
    }
    if (order == '|') {
      error = "unsupported dtype '" + descr + "'";
      return false;
    }
    out = e.dtype;
    return true;
  }
  if (descr == "<u2" || descr == "|V2" || descr == "<V2") {
    error = "unsupported dtype '" + descr +
            "' (read as bfloat16 only where bf16 is expected)";
    return false;
  }
  if (order == '>') {
    error = "big-endian data (dtype '" + descr + "') is not supported";
    return false;
  }
  error = "unsupported dtype '" + descr + "'";
  return false;
}

struct NpyLayout {
  WeftDType dtype = WEFT_F32;
  std::vector<int64_t> shape;
  uint64_t dataOffset = 0;
  uint64_t dataBytes = 0;
};

/// Bytes needed to know the header's length: magic, version, length field.
constexpr size_t kPreambleMax = kMagicLen + 2 + 4;

/// Parses the preamble at `p` (`avail` bytes available). On success sets the
/// offset and length of the header dict.
bool parsePreamble(const unsigned char *p, size_t avail, uint64_t &dictOffset,
                   uint64_t &dictLen, std::string &error) {
  if (avail < kMagicLen + 2 || std::memcmp(p, kMagic, kMagicLen) != 0) {
    error = "not a .npy file (bad magic)";
    return false;
  }
  unsigned major = p[kMagicLen], minor = p[kMagicLen + 1];
  if (major == 1) {
    if (avail < kMagicLen + 4) {
      error = "truncated header";
      return false;
    }
    dictLen = p[8] | (uint64_t(p[9]) << 8);
    dictOffset = 10;
  } else if (major == 2 || major == 3) {
    if (avail < kMagicLen + 6) {
      error = "truncated header";
      return false;
    }
    dictLen = p[8] | (uint64_t(p[9]) << 8) | (uint64_t(p[10]) << 16) |
              (uint64_t(p[11]) << 24);
    dictOffset = 12;
  } else {
    error = "unsupported .npy format version " + std::to_string(major) + "." +
            std::to_string(minor);
    return false;
  }
  return true;
}

bool parseDict(std::string_view dict, int expectedDType, NpyLayout &layout,
               std::string &error) {
  PyValue header;
  PyLiteralParser parser(dict);
  if (!parser.parse(header, error))
    return false;
  if (header.kind != PyValue::Dict) {
    error = "malformed header (not a dict)";
    return false;
  }
  const PyValue *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (size_t i = 0; i < header.keys.size(); ++i) {
    const std::string &key = header.keys[i];
    if (key == "descr")
      descr = &header.items[i];
    else if (key == "fortran_order")
      fortran = &header.items[i];
    else if (key == "shape")
      shape = &header.items[i];
    else {
      error = "malformed header (unexpected key '" + key + "')";
      return false;
    }
  }
  if (!descr || !fortran || !shape) {
    error = std::string("malformed header (missing '") +
            (!descr     ? "descr"
             : !fortran ? "fortran_order"
                        : "shape") +
            "')";
    return false;
  }
  if (descr->kind == PyValue::List) {
    error = "structured dtypes are not supported";
    return false;
  }
  if (descr->kind != PyValue::Str) {
    error = "malformed header ('descr' is not a string)";
    return false;
  }
  if (fortran->kind != PyValue::Bool) {
    error = "malformed header ('fortran_order' is not True or False)";
    return false;
  }
  if (shape->kind != PyValue::Tuple) {
    error = "malformed header ('shape' is not a tuple)";
    return false;
  }
  if (!dtypeFromDescr(descr->str, expectedDType, layout.dtype, error))
    return false;
  layout.shape.clear();
  for (const PyValue &d : shape->items) {
    if (d.kind != PyValue::Int || d.i < 0) {
      error = "malformed header (bad dimension in 'shape')";
      return false;
    }
    layout.shape.push_back(d.i);
  }
  if (fortran->b) {
    // numpy.save writes fortran_order only for arrays that are Fortran- but
    // not C-contiguous, whose bytes are not in row-major order.
    error = "fortran_order arrays are not supported; save a C-order array "
            "(numpy.ascontiguousarray)";
    return false;
  }
  int64_t bytes = 0;
  if (!shapeNumElements(layout.shape, bytes, weftDTypeSize(layout.dtype))) {
    error = "shape " + formatShape(layout.shape) + " is too large";
    return false;
  }
  layout.dataBytes = static_cast<uint64_t>(bytes * weftDTypeSize(layout.dtype));
  return true;
}

std::string describeLayout(const NpyLayout &layout) {
  return formatTensorType(layout.dtype, layout.shape);
}

bool checkDataSize(const NpyLayout &layout, uint64_t available,
                   std::string &error) {
  if (available < layout.dataBytes) {
    error = "truncated data: the header promises " + describeLayout(layout) +
            " (" + std::to_string(layout.dataBytes) + " bytes) but only " +
            std::to_string(available) + " bytes follow it";
    return false;
  }
  if (available > layout.dataBytes) {
    error = std::to_string(available - layout.dataBytes) +
            " unexpected bytes after the data of " + describeLayout(layout);
    return false;
  }
  return true;
}

bool allocateTensor(const NpyLayout &layout, HostTensor &out,
                    std::string &error) {
  out.dtype = layout.dtype;
  out.shape = layout.shape;
  if (!out.data.allocate(layout.dataBytes)) {
    error = "out of memory allocating " + std::to_string(layout.dataBytes) +
            " bytes";
    return false;
  }
  return true;
}

} // namespace

const char *npyDescr(int64_t dtype) {
  switch (dtype) {
  case WEFT_F32:
    return "<f4";
  case WEFT_F16:
    return "<f2";
  case WEFT_BF16:
    return "<u2";
  case WEFT_F64:
    return "<f8";
  case WEFT_I64:
    return "<i8";
  case WEFT_I32:
    return "<i4";
  case WEFT_I8:
    return "|i1";
  case WEFT_U8:
    return "|u1";
  case WEFT_BOOL:
    return "|b1";
  default:
    return "?";
  }
}

bool parseNpy(const void *bytes, size_t size, const std::string &name,
              HostTensor &out, std::string &error, int expectedDType) {
  const unsigned char *p = static_cast<const unsigned char *>(bytes);
  uint64_t dictOffset = 0, dictLen = 0;
  std::string reason;
  NpyLayout layout;
  if (!parsePreamble(p, size, dictOffset, dictLen, reason)) {
    error = name + ": " + reason;
    return false;
  }
  if (dictOffset + dictLen > size) {
    error = name + ": truncated header";
    return false;
  }
  std::string_view dict(reinterpret_cast<const char *>(p + dictOffset),
                        dictLen);
  if (!parseDict(dict, expectedDType, layout, reason) ||
      !checkDataSize(layout, size - dictOffset - dictLen, reason) ||
      !allocateTensor(layout, out, reason)) {
    error = name + ": " + reason;
    return false;
  }
  if (layout.dataBytes)
    std::memcpy(out.data.data(), p + dictOffset + dictLen, layout.dataBytes);
  return true;
}

/// Opens `path` and reads its header into `layout` (dataOffset: where the
/// data starts); false with the error otherwise. `fd` is then open.
static bool openNpy(const std::string &path, int expectedDType, int &fd,
                    NpyLayout &layout, uint64_t &fileSize, std::string &error) {
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    error = path + ": cannot stat: " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    error = path + ": not a regular file";
    return false;
  }
  fileSize = static_cast<uint64_t>(st.st_size);
  unsigned char preamble[kPreambleMax];
  size_t preambleLen = fileSize < kPreambleMax ? fileSize : kPreambleMax;
  std::string reason;
  uint64_t dictOffset = 0, dictLen = 0;
  if (!readFully(fd, preamble, preambleLen, 0, reason)) {
    error = path + ": cannot read: " + reason;
    return false;
  }
  if (!parsePreamble(preamble, preambleLen, dictOffset, dictLen, reason)) {
    error = path + ": " + reason;
    return false;
  }
  if (dictOffset + dictLen > fileSize) {
    error = path + ": truncated header";
    return false;
  }
  std::string dict(dictLen, '\0');
  if (!readFully(fd, &dict[0], dictLen, dictOffset, reason)) {
    error = path + ": cannot read: " + reason;
    return false;
  }
  if (!parseDict(dict, expectedDType, layout, reason) ||
      !checkDataSize(layout, fileSize - dictOffset - dictLen, reason)) {
    error = path + ": " + reason;
    return false;
  }
  layout.dataOffset = dictOffset + dictLen;
  return true;
}

namespace {
struct FdCloser {
  int fd = -1;
  ~FdCloser() {
    if (fd >= 0)
      ::close(fd);
  }
};
} // namespace

bool readNpy(const std::string &path, HostTensor &out, std::string &error,
             int expectedDType) {
  FdCloser file;
  NpyLayout layout;
  uint64_t fileSize = 0;
  std::string reason;
  if (!openNpy(path, expectedDType, file.fd, layout, fileSize, error))
    return false;
  if (!allocateTensor(layout, out, reason)) {
    error = path + ": " + reason;
    return false;
  }
  if (layout.dataBytes && !readFully(file.fd, out.data.data(), layout.dataBytes,
                                     layout.dataOffset, reason)) {
    error = path + ": cannot read data: " + reason;
    return false;
  }
  return true;
}

MappedNpy::~MappedNpy() { reset(); }

void MappedNpy::reset() {
  if (base_)
    ::munmap(base_, length_);
  base_ = nullptr;
  length_ = 0;
  data_ = nullptr;
  bytes_ = 0;
  shape_.clear();
}

MappedNpy::MappedNpy(MappedNpy &&other) noexcept { *this = std::move(other); }

MappedNpy &MappedNpy::operator=(MappedNpy &&other) noexcept {
  if (this != &other) {
    reset();
    dtype_ = other.dtype_;
    shape_ = std::move(other.shape_);
    base_ = other.base_;
    length_ = other.length_;
    data_ = other.data_;
    bytes_ = other.bytes_;
    other.base_ = nullptr;
    other.length_ = 0;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

/// A mapped file cut short under the process raises SIGBUS at the first
/// read past its new end: said in words rather than a silent crash.
static void onBusError(int) {
  static const char message[] =
      "weft: error: bus error (SIGBUS) reading a memory-mapped file: a "
      "--data .npy file was truncated or replaced while the run read it\n";
  ssize_t unused = ::write(STDERR_FILENO, message, sizeof message - 1);
  (void)unused;
  ::_exit(1);
}

static void reportBusErrors() {
  static bool installed = false;
  if (installed)
    return;
  installed = true;
  struct sigaction current = {};
  if (::sigaction(SIGBUS, nullptr, &current) != 0 ||
      current.sa_handler != SIG_DFL)
    return; // someone else's handler stays
  struct sigaction handler = {};
  handler.sa_handler = onBusError;
  sigemptyset(&handler.sa_mask);
  ::sigaction(SIGBUS, &handler, nullptr);
}

bool mapNpy(const std::string &path, MappedNpy &out, std::string &error,
            int expectedDType) {
  out.reset();
  FdCloser file;
  NpyLayout layout;
  uint64_t fileSize = 0;
  if (!openNpy(path, expectedDType, file.fd, layout, fileSize, error))
    return false;
  out.dtype_ = layout.dtype;
  out.shape_ = layout.shape;
  out.bytes_ = layout.dataBytes;
  if (fileSize == 0)
    return true;
  void *base = ::mmap(nullptr, fileSize, PROT_READ, MAP_SHARED, file.fd, 0);
  if (base == MAP_FAILED) {
    error = path + ": cannot map: " + std::strerror(errno);
    return false;
  }
  reportBusErrors();
  out.base_ = base;
  out.length_ = fileSize;
  out.data_ = static_cast<const unsigned char *>(base) + layout.dataOffset;
  return true;
}

std::string npyHeader(int64_t dtype, const std::vector<int64_t> &shape) {
  std::string dict = "{'descr': '";
  dict += npyDescr(dtype);
  dict += "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      dict += ", ";
    dict += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    dict += ",";
  dict += "), }";
  // Version 1.0 stores the dict's length in 2 bytes, 2.0 in 4.
  size_t preamble = kMagicLen + 2 + 2;
  unsigned major = 1;
  if (dict.size() + 1 + preamble + 64 > 65535) {
    preamble = kMagicLen + 2 + 4;
    major = 2;
  }
  size_t total = preamble + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict.push_back('\n');
  std::string header(kMagic, kMagicLen);
  header.push_back(static_cast<char>(major));
  header.push_back('\0');
  uint64_t len = dict.size();
  header.push_back(static_cast<char>(len & 0xff));
  header.push_back(static_cast<char>((len >> 8) & 0xff));
  if (major == 2) {
    header.push_back(static_cast<char>((len >> 16) & 0xff));
    header.push_back(static_cast<char>((len >> 24) & 0xff));
  }
  return header + dict;
}

bool writeNpy(const std::string &path, int64_t dtype,
              const std::vector<int64_t> &shape, const void *data,
              std::string &error) {
  int64_t elementSize = weftDTypeSize(dtype);
  int64_t count = 0;
  if (elementSize == 0) {
    error = path + ": cannot write dtype code " + std::to_string(dtype);
    return false;
  }
  if (!shapeNumElements(shape, count, elementSize)) {
    error = path + ": invalid shape " + formatShape(shape);
    return false;
  }
  std::string header = npyHeader(dtype, shape);
  std::vector<FileChunk> chunks = {
      {header.data(), header.size()},
      {data, static_cast<size_t>(count * elementSize)}};
  std::string reason;
  if (!writeFileAtomic(path, chunks, reason)) {
    error = path + ": " + reason;
    return false;
  }
  return true;
}

bool writeNpy(const std::string &path, const HostTensor &tensor,
              std::string &error) {
  return writeNpy(path, tensor.dtype, tensor.shape, tensor.data.data(), error);
}

} // namespace weft
