//===- Trainer.h - `weft train`: the training loop of a bundle ------------===//
//
// A training bundle's executable (signature "mode": "train", ModelABI.h) runs
//
//   model --train [--bundle DIR] --data NAME=FILE.npy ... --steps K
//         [--metrics FILE.jsonl] [--checkpoint-dir DIR] [--save-every K]
//         [--resume]
//
// Each step copies the next global batch of every --data file into the
// inputs (DataLoader.h), calls weft_model_run once (which updates the params
// buffers in place) and reads the loss, output 0. --steps is the total step
// count: a resumed run continues from the checkpoint's step up to K.
// Checkpoints (Checkpoint.h) go to --checkpoint-dir every --save-every steps
// and always after the last step. At the end one JSON line goes to stdout:
//
//   {"world_size": N, "peak_memory_bytes": ..., "steps": K,
//    "final_loss": ..., "mean_step_time_s": ..., "samples_per_s": ...}
//
// (peak_memory_bytes: the largest resident set, getrusage's ru_maxrss, over
// the ranks: host memory, also for cuda bundles). Bad usage or input (data
// files, checkpoints) is reported before anything is written, with exit
// code 2.
//
// A cuda bundle (Device.h) runs the same loop on the GPU: the executor
// uploads each step's batch and downloads the loss; the state comes back to
// the host only for checkpoints (Executor::fetchParams). The device's
// communicators start once every rank has prepared and end before the
// ranks finish.
//
// A multi-rank bundle runs this loop on every rank (RankStart.h starts
// them): each rank reads the whole --data files and copies its block of
// every global batch; rank 0 alone shows the progress line, writes
// --metrics and prints the summary (step times are its own). Every rank
// checks its input before any rank writes anything, and all fail together
// (the message once when they fail alike). Checkpoints hold a state file
// per rank (Checkpoint.h); --resume needs the same number of ranks.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_EXECUTOR_TRAINER_H
#define WEFT_RUNTIME_EXECUTOR_TRAINER_H

#include "weft/runtime/Executor.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace weft {

struct TrainOptions {
  std::string bundleDir; ///< empty: the executable's directory
  std::vector<std::pair<std::string, std::string>> data; ///< name, file
  int64_t steps = 0;
  std::string metricsFile;
  std::string traceFile; ///< --trace: Chrome trace of every rank (Trace.h)
  std::string checkpointDir;
  int64_t saveEvery = 0; ///< 0: only after the last step
  bool resume = false;
  /// --shuffle SEED: each epoch's rows in an order of their own
  /// (DataLoader.h's shuffledRow).
  bool shuffle = false;
  uint64_t shuffleSeed = 0;
  bool help = false;
};

/// Parses the executable's arguments (argv[0] excluded); `--train` itself is
/// accepted and ignored.
Status parseTrainOptions(int argc, char *const *argv, TrainOptions &out);

/// The usage line for program `prog`.
std::string trainUsage(const std::string &prog);

/// main() of a bundle executable given --train. Returns the exit code.
int trainMain(int argc, char **argv, const char *signatureJson,
              WeftModelRunFn run);

} // namespace weft

#endif // WEFT_RUNTIME_EXECUTOR_TRAINER_H
