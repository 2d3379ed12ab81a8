//===- DataLoader.h - Training batches from .npy files --------------------===//
//
// `weft train --data NAME=FILE.npy` gives each input of a training model a
// file of N >= B rows (B: the global batch, dim 0 of the input) with the
// input's dtype and dims after dim 0. Step s uses rows [s*B, (s+1)*B) of
// every file, modulo N, wrapping row by row (DESIGN.md, "Data and training
// semantics"). The trainer tracks the absolute row position s*B (the "data
// position" of checkpoints); the loader maps it onto each file.
//
// Several ranks: B is the global batch (an input split along dim 0 over G
// ranks has B / G rows on each) and every rank checks the whole files
// against it (the files are mapped, not read: a file larger than memory
// works, and the ranks of a host share its pages); a rank copies only its block
// of the window (block i of G: rows [s*B + i*B/G, s*B + (i+1)*B/G) modulo N),
// or, for an input split along dim 1 (sequence parallelism), its block of every
// row.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_EXECUTOR_DATALOADER_H
#define WEFT_RUNTIME_EXECUTOR_DATALOADER_H

#include "weft/runtime/Executor.h"
#include "weft/runtime/Npy.h"
#include "weft/runtime/Tensor.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace weft {

/// `count` consecutive rows starting at row `start` of a file.
struct RowRange {
  int64_t start = 0;
  int64_t count = 0;
  bool operator==(const RowRange &o) const {
    return start == o.start && count == o.count;
  }
};

/// With `weft train --shuffle SEED`, absolute row r (epoch e = r / rows,
/// index i = r % rows) reads file row shuffledRow(seed, r, rows): each epoch
/// a permutation of the rows of its own, drawn without storing it (a
/// 4-round Feistel network on the next even power of two at least `rows`,
/// keyed by splitmix64 of the seed and the epoch, walked until it lands
/// below `rows`). test/tools/weft_tools.py's shuffled_row is its Python
/// twin, which the training checks feed PyTorch's loop with.
int64_t shuffledRow(uint64_t seed, int64_t row, int64_t rows);

/// The rows [position, position + batch) modulo `rows` as contiguous ranges
/// of the file, in order (several when the window wraps; at most two when
/// batch <= rows). Requires position >= 0, batch >= 0 and rows >= 1.
std::vector<RowRange> rowWindow(int64_t position, int64_t batch, int64_t rows);

class DataLoader {
public:
  /// Matches the (name, file) pairs of --data with the signature's inputs
  /// (each exactly once) and reads every file, checking its dtype, its dims
  /// after dim 0 and that it has at least B rows. Errors are bad input.
  Status open(const ModelSignature &sig,
              const std::vector<std::pair<std::string, std::string>> &data);

  /// Rows of the file of input `index`.
  int64_t rows(size_t index) const { return sources_[index].rows; }
  /// The global batch B.
  int64_t batch() const { return batch_; }

  /// Reads rows in each epoch's shuffled order from now on.
  void setShuffle(uint64_t seed) {
    shuffle_ = true;
    seed_ = seed;
  }
  /// "sequential" or "shuffle:SEED" (what checkpoints record).
  std::string order() const {
    return shuffle_ ? "shuffle:" + std::to_string(seed_) : "sequential";
  }

  /// Copies the global batch whose first row is the absolute row `position`
  /// into `inputs[i]` (B rows of input i each, in signature order).
  void fill(int64_t position, std::vector<HostTensor *> &inputs) const;

private:
  struct Source {
    std::string file;
    MappedNpy data; ///< mapped, not read: ranks share one copy per host
    int64_t rows = 0;
    uint64_t rowBytes = 0; ///< of this rank's part of a row
    /// This rank's rows of the global window: [firstRow, + localRows).
    int64_t firstRow = 0, localRows = 0;
    /// Sequence parallelism: the rank's block `column` of `columns` in
    /// every row.
    int64_t column = 0, columns = 1;
  };
  std::vector<Source> sources_;
  int64_t batch_ = 0;
  bool shuffle_ = false;
  uint64_t seed_ = 0;
};

} // namespace weft

#endif // WEFT_RUNTIME_EXECUTOR_DATALOADER_H
