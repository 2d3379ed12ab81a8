//===- DataLoader.cpp - Training batches from .npy files ------------------===//

#include "DataLoader.h"

#include "weft/runtime/Npy.h"

#include <cstring>

namespace weft {

std::vector<RowRange> rowWindow(int64_t position, int64_t batch, int64_t rows) {
  std::vector<RowRange> ranges;
  if (rows <= 0 || batch <= 0 || position < 0)
    return ranges;
  int64_t start = position % rows;
  int64_t left = batch;
  while (left > 0) {
    int64_t count = rows - start < left ? rows - start : left;
    ranges.push_back({start, count});
    left -= count;
    start = 0;
  }
  return ranges;
}

static std::string listInputs(const ModelSignature &sig) {
  std::string s;
  for (const TensorSpec &spec : sig.inputs)
    s += (s.empty() ? "" : ", ") + spec.name;
  return s;
}

/// "f32[*,4]": the type a data file of `spec` needs (any number of rows).
static std::string dataFileType(const TensorSpec &spec) {
  std::string s = std::string(dtypeName(spec.dtype)) + "[N";
  for (size_t d = 1; d < spec.shape.size(); ++d)
    s += "," + std::to_string(spec.shape[d]);
  return s + "]";
}

Status
DataLoader::open(const ModelSignature &sig,
                 const std::vector<std::pair<std::string, std::string>> &data) {
  sources_.clear();
  batch_ = sig.globalBatch();
  // Names first: unknown, duplicate and missing inputs are reported before
  // any file is read.
  std::vector<int> fileOf(sig.inputs.size(), -1);
  for (size_t k = 0; k < data.size(); ++k) {
    const std::string &name = data[k].first;
    size_t index = sig.inputs.size();
    for (size_t i = 0; i < sig.inputs.size(); ++i)
      if (sig.inputs[i].name == name)
        index = i;
    if (index == sig.inputs.size())
      return Status::badInput("--data: unknown input '" + name + "' (in " +
                              data[k].second +
                              "); the model's inputs are: " + listInputs(sig));
    if (fileOf[index] >= 0)
      return Status::badInput("--data: input '" + name + "' is given twice (" +
                              data[fileOf[index]].second + " and " +
                              data[k].second + ")");
    fileOf[index] = static_cast<int>(k);
  }
  for (size_t i = 0; i < sig.inputs.size(); ++i)
    if (fileOf[i] < 0)
      return Status::badInput(
          "missing --data for input '" + sig.inputs[i].name +
          "' (a .npy file " + "of " + dataFileType(sig.inputs[i]) +
          " with N >= " + std::to_string(batch_) + " rows); pass --data " +
          sig.inputs[i].name + "=FILE.npy");

  sources_.resize(sig.inputs.size());
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    const TensorSpec &spec = sig.inputs[i];
    Source &src = sources_[i];
    src.file = data[fileOf[i]].second;
    std::string error;
    if (!mapNpy(src.file, src.data, error, spec.dtype))
      return Status::badInput("--data for input '" + spec.name + "': " + error);
    std::string where =
        "--data for input '" + spec.name + "' (" + src.file + "): ";
    // This rank's block of the global batch (split along dim 0) or of
    // every row (split along dim 1, sequence parallelism).
    const InputBlock block = inputBlockOf(spec);
    const std::vector<int64_t> &global = block.whole;
    src.localRows = spec.shape.empty() ? 0 : spec.shape[0];
    src.firstRow = spec.shardDim == 0 ? block.index * src.localRows : 0;
    // Dim 1 split alone (sequence parallelism) or after the rows.
    src.column = spec.shardDim == 1 ? block.index : block.sequenceIndex;
    src.columns = spec.shardDim == 1 ? block.parts : block.sequenceParts;
    const std::vector<int64_t> &shape = src.data.shape();
    bool dimsMatch = shape.size() == spec.shape.size() && !shape.empty();
    for (size_t d = 1; dimsMatch && d < shape.size(); ++d)
      dimsMatch = shape[d] == global[d];
    if (src.data.dtype() != spec.dtype || !dimsMatch)
      return Status::badInput(
          where + "expected " + dataFileType(spec) + ", got " +
          formatTensorType(src.data.dtype(), shape) +
          (src.data.dtype() != spec.dtype ? " (wrong dtype)"
                                          : " (wrong shape after dim 0)"));
    src.rows = shape[0];
    if (src.rows < batch_)
      return Status::badInput(where + "has " + std::to_string(src.rows) +
                              " rows, the global batch needs " +
                              std::to_string(batch_));
    src.rowBytes = src.localRows
                       ? spec.byteSize / static_cast<uint64_t>(src.localRows)
                       : 0;
  }
  return Status::success();
}

static uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int64_t shuffledRow(uint64_t seed, int64_t row, int64_t rows) {
  const uint64_t epoch = static_cast<uint64_t>(row / rows);
  const uint64_t index = static_cast<uint64_t>(row % rows);
  if (rows <= 1)
    return 0;
  // Half the bits of the smallest even width holding rows - 1.
  int bits = 0;
  while ((uint64_t{1} << bits) < static_cast<uint64_t>(rows))
    ++bits;
  const int half = (bits + 1) / 2;
  const uint64_t mask = (uint64_t{1} << half) - 1;
  const uint64_t key = splitmix64(seed ^ splitmix64(epoch));
  uint64_t x = index;
  do {
    uint64_t left = x >> half, right = x & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      uint64_t f =
          splitmix64(right ^ (key + round * 0x9E3779B97F4A7C15ull)) & mask;
      uint64_t next = left ^ f;
      left = right;
      right = next;
    }
    x = (left << half) | right;
  } while (x >= static_cast<uint64_t>(rows));
  return static_cast<int64_t>(x);
}

void DataLoader::fill(int64_t position,
                      std::vector<HostTensor *> &inputs) const {
  for (size_t i = 0; i < sources_.size(); ++i) {
    const Source &src = sources_[i];
    const char *from = static_cast<const char *>(src.data.data());
    char *to = static_cast<char *>(inputs[i]->data.data());
    // A file row holds `columns` blocks of this rank's row size.
    const size_t fileRow = src.rowBytes * static_cast<size_t>(src.columns);
    const size_t skip = src.rowBytes * static_cast<size_t>(src.column);
    if (shuffle_) {
      const int64_t first = position + src.firstRow;
      for (int64_t k = 0; k < src.localRows; ++k) {
        const int64_t row = shuffledRow(seed_, first + k, src.rows);
        std::memcpy(to, from + static_cast<size_t>(row) * fileRow + skip,
                    src.rowBytes);
        to += src.rowBytes;
      }
      continue;
    }
    for (const RowRange &r :
         rowWindow(position + src.firstRow, src.localRows, src.rows)) {
      if (src.columns == 1) {
        size_t bytes = static_cast<size_t>(r.count) * src.rowBytes;
        if (bytes)
          std::memcpy(to, from + static_cast<size_t>(r.start) * fileRow, bytes);
        to += bytes;
        continue;
      }
      for (int64_t row = r.start; row < r.start + r.count; ++row) {
        std::memcpy(to, from + static_cast<size_t>(row) * fileRow + skip,
                    src.rowBytes);
        to += src.rowBytes;
      }
    }
  }
}

} // namespace weft
