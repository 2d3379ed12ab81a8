//===- Checkpoint.h - Training checkpoints --------------------------------===//
//
// A checkpoint directory DIR holds
//
//   DIR/step-00000006/state.safetensors  every params buffer of the model
//                                        (parameters, optimizer state, step
//                                        counter) by signature name, with
//                                        __metadata__ {format, step,
//                                        data_position, signature_sha256}
//   DIR/step-00000006/state.rank<R>.safetensors
//                                        instead, for a multi-rank bundle:
//                                        rank R's params buffers (its blocks
//                                        of split ones), metadata also
//                                        {rank, world_size}
//   DIR/step-00000006/checkpoint.json    {"format_version": 1, "step": 6,
//                                         "data_position": 48,
//                                         "signature_sha256": "...",
//                                         "loss": ..., "world_size": W,
//                                         "files": {"state.safetensors":
//                                           {"bytes": N, "sha256": "..."}}}
//                                        (several ranks: one entry per
//                                        rank's file, with its "rank")
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
// Several ranks (DIR on a file system they all see): the save is
// collective. Rank 0 creates the temporary directory (named with its pid),
// every rank writes and hashes its own state file there, the sizes and
// hashes are gathered, and rank 0 alone writes checkpoint.json, renames the
// directory into place and updates DIR/latest, exactly as above; every rank
// returns the same outcome.
//
// (For tests, WEFT_TEST_SLOW_SAVE_MS=N sleeps N ms in the middle of every
// save, after the state file is written, so a test can kill the process
// while a save is under way.)
//
// Loading verifies everything before touching the model: checkpoint.json,
// its world size, the size and SHA-256 of this rank's state file, the
// signature, and every tensor's dtype and shape. Every problem is bad input
// (exit code 2) naming the file. Each rank loads only its own file.
//
// Rank 0 also writes DIR/step-*/signature.json, the signature of the bundle
// that saved (its SHA-256 is signature_sha256). A checkpoint written by
// another plan of the same model (another number of ranks, other splits,
// another pipeline; the bundle compiled with other parallelism flags) is
// resumed through it (Reshard.h): every rank reads every writing rank's
// file, verified as above, puts each tensor together under the writer's
// layout and keeps its own block under this bundle's. The two must hold
// the same state (names, roles, dtypes, whole shapes), else the checkpoint
// is refused as another model's; so is one of another plan without
// signature.json (written before it existed).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_EXECUTOR_CHECKPOINT_H
#define WEFT_RUNTIME_EXECUTOR_CHECKPOINT_H

#include "weft/runtime/Executor.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace weft {

/// "step-00000006".
std::string checkpointDirName(int64_t step);
/// Parses "step-<digits>" (8 or more digits); false for anything else.
bool parseCheckpointDirName(const std::string &name, int64_t &step);

/// Whether `dir` holds a checkpoint (dir/latest, or a step-* directory left
/// by a save killed before it wrote dir/latest); `which` names it.
bool findCheckpoint(const std::string &dir, std::string &which);

struct CheckpointInfo {
  std::string path; ///< DIR/step-...
  int64_t step = 0;
  int64_t dataPosition = 0;
  double loss = 0; ///< the loss of the last step (NaN when unknown)
  /// The order the run read its data in: "sequential" or "shuffle:SEED"
  /// (checkpoint.json's "data_order"; sequential when absent).
  std::string dataOrder = "sequential";
};

class CheckpointStore {
public:
  /// `signatureJson` is the model's weft_model_signature string; its SHA-256
  /// identifies the model a checkpoint belongs to. The store reads and
  /// writes the state file of `rank` of `worldSize`.
  CheckpointStore(std::string dir, std::string_view signatureJson,
                  int64_t rank = 0, int64_t worldSize = 1);

  /// "state.safetensors" (one rank) or "state.rank<R>.safetensors".
  static std::string stateFileName(int64_t rank, int64_t worldSize);

  const std::string &dir() const { return dir_; }
  /// What later saves record as the run's data order (CheckpointInfo).
  void setDataOrder(std::string order) { dataOrder_ = std::move(order); }
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
  /// Like loadStep(), into `params` (one per entry of `sig`, which is this
  /// store's signature; entries this rank does not hold stay empty).
  Status loadStepInto(const ModelSignature &sig, const std::string &name,
                      std::vector<HostTensor> &params,
                      CheckpointInfo &info) const;

  /// Saves every params buffer of `executor` as the checkpoint of `step`
  /// (collective for several ranks). Failures are exit code 1 (the previous
  /// checkpoint stays intact); several ranks: every rank fails, the one
  /// that knows why with the message.
  Status save(const Executor &executor, int64_t step, int64_t dataPosition,
              double loss) const;

private:
  Status verify(const std::string &name, const ModelSignature &sig,
                CheckpointInfo &info) const;
  /// The checkpoint `name` was written under another plan (its world size
  /// or signature differs) and recorded that plan's signature: its text.
  bool writtenElsewhere(const std::string &name, std::string &writer) const;
  /// The signature SHA-256 and world size checkpoint.json of `name` records
  /// (false when it cannot be read).
  bool recordedPlan(const std::string &name, std::string &sha,
                    int64_t &world) const;
  /// Why checkpoint `name` (of another plan) cannot move to this one: no
  /// signature.json, no source model recorded, another model; empty when
  /// it can (`writer` then gets its signature).
  std::string reshardRefusal(const std::string &name,
                             std::string *writer = nullptr) const;
  Status loadResharded(const ModelSignature &sig, const std::string &name,
                       const std::string &writerJson,
                       std::vector<HostTensor> &params,
                       CheckpointInfo &info) const;
  /// Rank 0's part of a save: checkpoint.json, the rename, DIR/latest.
  Status
  publish(const std::string &tmp, const std::string &name, int64_t step,
          int64_t dataPosition, double loss,
          const std::vector<std::pair<uint64_t, std::string>> &files) const;
  void prune(int64_t keepStep) const;

  std::string dir_;
  std::string signatureJson_, signatureSha_;
  std::string dataOrder_ = "sequential";
  int64_t rank_ = 0, worldSize_ = 1;
};

} // namespace weft

#endif // WEFT_RUNTIME_EXECUTOR_CHECKPOINT_H
