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
//   {"steps": K, "final_loss": ..., "mean_step_time_s": ...,
//    "samples_per_s": ...}
//
// Bad usage or input (data files, checkpoints) is reported before anything
// is written, with exit code 2.
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
  std::string checkpointDir;
  int64_t saveEvery = 0; ///< 0: only after the last step
  bool resume = false;
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
