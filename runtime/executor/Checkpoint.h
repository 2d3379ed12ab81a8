//===- Checkpoint.h - Training checkpoints --------------------------------===//
//
// A checkpoint directory DIR holds
//
//   DIR/step-00000006/state.safetensors  every params buffer of the model
//                                        (parameters, optimizer state, step
//                                        counter) by signature name, with
//                                        __metadata__ {format, step,
//                                        data_position, signature_sha256}
//   DIR/step-00000006/checkpoint.json    {"format_version": 1, "step": 6,
//                                         "data_position": 48,
//                                         "signature_sha256": "...",
//                                         "loss": ...,
//                                         "files": {"state.safetensors":
//                                           {"bytes": N, "sha256": "..."}}}
//   DIR/latest                           "step-00000006\n"
//
// A save writes DIR/.step-<8 digits>.tmp-<pid>/ (every file and the
// directory fsync'ed), renames it into place (atomically exchanging an older
// directory of the same step), fsyncs DIR, then replaces DIR/latest
// atomically. Only then are older checkpoints removed: the new one and the
// newest before it are kept. A save killed at any point leaves the previous
// checkpoint and DIR/latest intact; its temporary directory is ignored and
// removed by the next successful save.
//
// (For tests, WEFT_TEST_SLOW_SAVE_MS=N sleeps N ms in the middle of every
// save, after state.safetensors is written, so a test can kill the process
// while a save is under way.)
//
// Loading verifies everything before touching the model: checkpoint.json,
// the size and SHA-256 of state.safetensors, the signature (a checkpoint of
// another model is refused), and every tensor's dtype and shape. Every
// problem is bad input (exit code 2) naming the file.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_EXECUTOR_CHECKPOINT_H
#define WEFT_RUNTIME_EXECUTOR_CHECKPOINT_H

#include "weft/runtime/Executor.h"

#include <cstdint>
#include <string>

namespace weft {

/// "step-00000006".
std::string checkpointDirName(int64_t step);
/// Parses "step-<digits>" (8 or more digits); false for anything else.
bool parseCheckpointDirName(const std::string &name, int64_t &step);

struct CheckpointInfo {
  std::string path; ///< DIR/step-...
  int64_t step = 0;
  int64_t dataPosition = 0;
  double loss = 0; ///< the loss of the last step (NaN when unknown)
};

class CheckpointStore {
public:
  /// `signatureJson` is the model's weft_model_signature string; its SHA-256
  /// identifies the model a checkpoint belongs to.
  CheckpointStore(std::string dir, std::string_view signatureJson);

  const std::string &dir() const { return dir_; }
  const std::string &signatureSha256() const { return signatureSha_; }

  /// Whether DIR holds a checkpoint (DIR/latest or a step-* directory);
  /// `which` names it.
  bool hasCheckpoint(std::string &which) const;

  /// Finds the checkpoint DIR/latest names (or, without DIR/latest, the
  /// newest step-* directory), verifies it and reads every params buffer of
  /// `executor` from it. Writes nothing.
  Status load(Executor &executor, CheckpointInfo &info) const;
  /// Like load(), for the checkpoint DIR/`name` (a step-* directory) whatever
  /// DIR/latest says (`weft export DIR/step-...`).
  Status loadStep(Executor &executor, const std::string &name,
                  CheckpointInfo &info) const;

  /// Saves every params buffer of `executor` as the checkpoint of `step`.
  /// Failures are exit code 1 (the previous checkpoint stays intact).
  Status save(const Executor &executor, int64_t step, int64_t dataPosition,
              double loss) const;

private:
  Status verify(const std::string &name, const ModelSignature &sig,
                CheckpointInfo &info) const;
  void prune(int64_t keepStep) const;

  std::string dir_;
  std::string signatureSha_;
};

} // namespace weft

#endif // WEFT_RUNTIME_EXECUTOR_CHECKPOINT_H
