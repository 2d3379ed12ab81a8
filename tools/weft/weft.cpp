//===- weft.cpp - The weft runner and launcher ----------------------------===//
//
//   weft run BUNDLE [-n N] --input NAME=FILE.npy ... --output-dir DIR
//            [--repeat N] [--warmup W] [--quiet]
//   weft train BUNDLE [-n N] --data NAME=FILE.npy ... --steps K
//            [--metrics FILE.jsonl] [--checkpoint-dir DIR] [--save-every K]
//            [--resume] [--trace FILE.json]
//   weft export BUNDLE --checkpoint DIR -o TRAINED.onnx
//   weft calibrate [-n N] -o CLUSTER.json [--quick]
//   weft relink BUNDLE
//   weft --help | --version
//
// `weft run` and `weft train` read BUNDLE/manifest.json and start the
// bundle's executable with `--bundle BUNDLE` (and `--train` for training)
// followed by the remaining arguments: directly for a world size of 1,
// through `mpirun -n N` otherwise, weft staying their parent so that no
// job ends without a word (Launch.h). Exit codes: 0 success, 2 bad usage or
// bad input, 1 anything else (the executable's own code otherwise).
//
// `weft export` (ExportCommand.cpp) writes the bundle's source model with
// the parameters of a training checkpoint, verified against the bundle's
// model signature.
//
// `weft calibrate` measures this machine through weft's own runtime and
// writes a cluster description ("weft-cluster/1", what `weftc --cluster
// FILE.json` reads): it checks its arguments and the output path, then
// starts N ranks (default: one per hardware thread) of weft-calibrate
// (Calibrate.cpp, installed beside `weft`) exactly as `weft run` starts a
// bundle's executable (runRanks). Rank 0 writes the file atomically.
//
// `weft relink BUNDLE` links the bundle's model.o (weftc keeps it in
// --target cuda bundles) again with the runtime of the build this weft
// belongs to (tools/BundleLink.h), replacing BUNDLE's executable: a bundle
// compiled on one machine runs on another (a GPU machine without MLIR)
// whose weft was built there (runtime-only). manifest.json's "target" picks
// the runtime.
//
//===----------------------------------------------------------------------===//

#include "runtime/executor/Checkpoint.h"
#include "tools/BundleLink.h"
#include "tools/weft/Cli.h"
#include "tools/weft/Launch.h"
#include "weft/runtime/FileUtil.h"
#include "weft/runtime/Version.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace weft::cli;

namespace {

const char *const kUsage =
    "usage: weft <command> [arguments]\n"
    "\n"
    "commands:\n"
    "  run BUNDLE [-n N] --input NAME=FILE.npy ... --output-dir DIR\n"
    "      [--repeat N] [--warmup W] [--quiet]\n"
    "                 run a compiled bundle on .npy inputs\n"
    "  train BUNDLE [-n N] --data NAME=FILE.npy ... --steps K\n"
    "      [--metrics FILE.jsonl] [--checkpoint-dir DIR] [--save-every K]\n"
    "      [--resume] [--trace FILE.json]\n"
    "                 train a bundle compiled with --train\n"
    "  export BUNDLE --checkpoint DIR -o TRAINED.onnx\n"
    "                 write the bundle's source model with the trained\n"
    "                 parameters of a checkpoint\n"
    "  calibrate [-n N] -o CLUSTER.json [--quick]\n"
    "                 measure this machine with N ranks (default: one per\n"
    "                 hardware thread) and write a cluster file for\n"
    "                 weftc --cluster\n"
    "  relink BUNDLE  link the bundle's model.o again with this weft's\n"
    "                 runtime (a cuda bundle carried to a GPU machine)\n"
    "\n"
    "options:\n"
    "  --help         print this help\n"
    "  --version      print the version\n";

const char *const kRunUsage =
    "usage: weft run BUNDLE [-n N] --input NAME=FILE.npy ... --output-dir DIR "
    "[--repeat N] [--warmup W] [--quiet]";

const char *const kTrainUsage =
    "usage: weft train BUNDLE [-n N] --data NAME=FILE.npy ... --steps K "
    "[--metrics FILE.jsonl] [--checkpoint-dir DIR] [--save-every K] "
    "[--resume] [--max-restarts R] [--shuffle SEED] [--trace FILE.json]";

const char *const kRelinkUsage = "usage: weft relink BUNDLE";

const char *const kCalibrateUsage =
    "usage: weft calibrate [-n N] -o CLUSTER.json [--quick] [--target "
    "cpu|cuda]";

const char *const kCalibrateHelp =
    "usage: weft calibrate [-n N] -o CLUSTER.json [--quick] [--target "
    "cpu|cuda]\n"
    "\n"
    "--target cuda measures this machine's GPU instead (weft-calibrate-cuda:\n"
    "bf16/fp32 GEMM rates through the CUDA backend's kernels, memory and L2\n"
    "bandwidth, AdamW, launch overhead; the links between GPUs are the\n"
    "datasheet figures of its family). Otherwise:\n"
    "\n"
    "Measures this machine through weft's runtime with N ranks (default: one\n"
    "per hardware thread), one kernel thread each, and writes CLUSTER.json\n"
    "(format weft-cluster/1) for 'weftc compile|plan --cluster "
    "CLUSTER.json':\n"
    "one core's fp32/bf16 GEMM rates and efficiency curve, memory bandwidth,\n"
    "per-kernel overhead, alpha-beta fits of all_reduce, all_gather,\n"
    "reduce_scatter (groups of 2..N ranks) and send/recv, and how much of an\n"
    "asynchronous all_reduce hides behind compute. --quick measures fewer\n"
    "sizes with fewer repetitions (for tests; the figures are rougher).\n";

bool parsePositive(const std::string &text, int64_t &out) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || !end || *end != '\0' || v < 1)
    return false;
  out = v;
  return true;
}

/// Whether `arg` is the -n option of the commands that start ranks (-n N,
/// -nN or -n=N).
bool isRanksOption(const std::string &arg) {
  return arg == "-n" || arg.compare(0, 3, "-n=") == 0 ||
         (arg.size() > 2 && arg.compare(0, 2, "-n") == 0 && arg[2] >= '0' &&
          arg[2] <= '9');
}

/// Reads the number of ranks of the -n option at argv[i] (advancing i past
/// a separate value); on bad usage prints the error and returns false.
bool readRanks(int argc, char **argv, int &i, int64_t &ranks,
               const char *usage) {
  std::string arg = argv[i], value;
  if (arg == "-n") {
    if (i + 1 >= argc) {
      error(kExitBadInput, "-n needs a number of ranks", usage);
      return false;
    }
    value = argv[++i];
  } else {
    value = arg.substr(arg[2] == '=' ? 3 : 2);
  }
  if (!parsePositive(value, ranks)) {
    error(kExitBadInput,
          "-n expects a positive number of ranks, got '" + value + "'", usage);
    return false;
  }
  return true;
}

/// `weft run` (train = false) and `weft train`: checks the bundle and -n,
/// then runs the bundle's executable.
int launchCommand(bool train, int argc, char **argv) {
  const char *usage = train ? kTrainUsage : kRunUsage;
  const char *command = train ? "train" : "run";
  std::string bundle, checkpointDir;
  int64_t ranks = 0; // 0: not given
  int64_t maxRestarts = 0;
  bool resume = false;
  std::vector<std::string> forwarded;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (isHelpOption(arg))
      return printHelp(usage);
    if (isRanksOption(arg)) {
      if (!readRanks(argc, argv, i, ranks, usage))
        return kExitBadInput;
      continue;
    }
    if (train && arg == "--max-restarts") {
      std::string value = i + 1 < argc ? argv[++i] : "";
      if (!parsePositive(value, maxRestarts) && value != "0")
        return error(kExitBadInput,
                     "--max-restarts expects a number of restarts (0 or "
                     "more), got '" +
                         value + "'",
                     usage);
      continue;
    }
    if (train && arg == "--checkpoint-dir" && i + 1 < argc)
      checkpointDir = argv[i + 1];
    resume |= train && arg == "--resume";
    if (arg == "--bundle" || arg.compare(0, 9, "--bundle=") == 0)
      return error(kExitBadInput,
                   std::string("give the bundle as the first argument of "
                               "'weft ") +
                       command + "', not with --bundle",
                   usage);
    bool takesValue =
        train ? (arg == "--data" || arg == "--steps" || arg == "--metrics" ||
                 arg == "--checkpoint-dir" || arg == "--save-every" ||
                 arg == "--trace" || arg == "--shuffle")
              : (arg == "--input" || arg == "--output-dir" ||
                 arg == "--repeat" || arg == "--warmup");
    if (takesValue) {
      if (i + 1 >= argc)
        return error(kExitBadInput, "option '" + arg + "' needs a value",
                     usage);
      forwarded.push_back(arg);
      forwarded.push_back(argv[++i]);
      continue;
    }
    if (!arg.empty() && arg[0] == '-') {
      forwarded.push_back(arg); // checked by the executable
      continue;
    }
    if (!takeBundleArgument(arg, bundle, usage))
      return kExitBadInput;
  }

  Manifest manifest;
  if (!readBundleManifest(bundle, manifest, usage))
    return kExitBadInput;
  if (ranks == 0)
    ranks = manifest.worldSize;
  if (ranks != manifest.worldSize)
    return error(kExitBadInput, "-n " + std::to_string(ranks) +
                                    " does not match the bundle's world size " +
                                    std::to_string(manifest.worldSize) +
                                    " (recompile with --devices " +
                                    std::to_string(ranks) + " to run on " +
                                    std::to_string(ranks) + " ranks)");

  std::string bundleAbs = absolutePath(bundle), exe;
  if (!bundleExecutable(bundle, bundleAbs, manifest, exe))
    return kExitBadInput;

  if (maxRestarts > 0 && checkpointDir.empty())
    return error(kExitBadInput,
                 "--max-restarts needs --checkpoint-dir: a restarted job "
                 "resumes from the latest checkpoint there (--save-every K "
                 "saves one every K steps)",
                 usage);

  std::vector<std::string> args = {"--bundle", bundleAbs};
  if (train)
    args.push_back("--train");
  args.insert(args.end(), forwarded.begin(), forwarded.end());
  const std::string whyMpi =
      "a bundle for " + std::to_string(ranks) + " ranks needs MPI";
  for (int64_t restart = 0;; ++restart) {
    int code = runRanks(ranks, exe, args, whyMpi);
    // Bad input fails alike every time; a stop asked for is not a failure.
    if (code == kExitOk || code == kExitBadInput || stopRequested())
      return code;
    if (restart == maxRestarts) {
      if (maxRestarts > 0)
        error(code, "the job failed " + std::to_string(maxRestarts + 1) +
                        " times; giving up (--max-restarts " +
                        std::to_string(maxRestarts) + ")");
      return code;
    }
    std::string which, from = "from the start (no checkpoint yet)";
    if (weft::findCheckpoint(checkpointDir, which)) {
      from = "from the checkpoint " + which;
      std::string name, unread;
      if (!weft::isDirectory(which) && weft::readFile(which, name, unread) &&
          !name.empty())
        from = "from the checkpoint " +
               weft::joinPath(checkpointDir,
                              name.substr(0, name.find_first_of("\r\n")));
      if (!resume)
        args.push_back("--resume");
      resume = true;
    }
    std::fflush(stdout);
    std::fprintf(stderr,
                 "weft: the job failed (exit code %d); restart %lld of %lld "
                 "%s\n",
                 code, static_cast<long long>(restart + 1),
                 static_cast<long long>(maxRestarts), from.c_str());
    std::fflush(stderr);
  }
}

/// `weft calibrate [-n N] -o CLUSTER.json [--quick]`.
int calibrateCommand(int argc, char **argv) {
  const char *usage = kCalibrateUsage;
  int64_t ranks = 0; // 0: not given
  std::string output;
  bool haveOutput = false, quick = false;
  std::string target = "cpu";
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (isHelpOption(arg))
      return printHelp(kCalibrateHelp);
    if (isRanksOption(arg)) {
      if (!readRanks(argc, argv, i, ranks, usage))
        return kExitBadInput;
      continue;
    }
    if (arg == "--quick") {
      quick = true;
      continue;
    }
    if (arg == "--target" || arg.rfind("--target=", 0) == 0) {
      if (arg == "--target" && i + 1 >= argc)
        return error(kExitBadInput, "option '--target' needs a value", usage);
      target = arg == "--target" ? argv[++i] : arg.substr(9);
      if (target != "cpu" && target != "cuda")
        return error(kExitBadInput,
                     "--target must be cpu or cuda, not '" + target + "'",
                     usage);
      continue;
    }
    std::string name = arg.substr(0, arg.find('='));
    if (name == "-o" || name == "--output") {
      if (!readOptionValue(argc, argv, i, name, output, haveOutput, usage))
        return kExitBadInput;
      continue;
    }
    if (!arg.empty() && arg[0] == '-')
      return error(kExitBadInput, "unknown option '" + arg + "'", usage);
    return error(kExitBadInput, "unexpected argument '" + arg + "'", usage);
  }
  if (!haveOutput)
    return error(kExitBadInput, "missing -o CLUSTER.json", usage);
  const int64_t ranksGiven = ranks;
  if (ranks == 0) {
    unsigned cores = std::thread::hardware_concurrency();
    ranks = cores > 0 ? cores : 1;
  }

  // The output: a file in an existing, writable directory (checked before
  // any rank starts; weft-calibrate checks again).
  std::string outDir;
  if (!checkOutputFile(output, weft::joinPath(output, "cluster.json"), outDir))
    return kExitBadInput;
  if (::access(outDir.c_str(), W_OK | X_OK) != 0)
    return error(kExitBadInput,
                 "cannot write output '" + output + "': directory '" + outDir +
                     "' is not writable (" + std::strerror(errno) + ")");
  std::string outAbs =
      weft::joinPath(absolutePath(outDir), weft::fileName(output));

  std::string dir = weft::executableDirectory();
  if (target == "cuda") {
    if (ranksGiven > 1)
      return error(kExitBadInput,
                   "--target cuda measures one GPU: -n must be 1", usage);
    std::string exe =
        weft::joinPath(dir.empty() ? "." : dir, "weft-calibrate-cuda");
    if (::access(exe.c_str(), X_OK) != 0)
      return error(kExitFailure,
                   "cannot find weft-calibrate-cuda beside weft (" + exe +
                       ": " + std::strerror(errno) +
                       "); weft was built without the CUDA backend?");
    std::vector<std::string> args = {"-o", outAbs};
    if (quick)
      args.push_back("--quick");
    return runRanks(1, exe, args, "");
  }
  std::string exe = weft::joinPath(dir.empty() ? "." : dir, "weft-calibrate");
  if (::access(exe.c_str(), X_OK) != 0)
    return error(kExitFailure, "cannot find weft-calibrate beside weft (" +
                                   exe + ": " + std::strerror(errno) + ")");
  std::vector<std::string> args = {"-o", outAbs, "--ranks",
                                   std::to_string(ranks)};
  if (quick)
    args.push_back("--quick");
  return runRanks(ranks, exe, args,
                  "calibrating " + std::to_string(ranks) +
                      " ranks needs MPI; -n 1 runs without it");
}

/// `weft relink BUNDLE`.
int relinkCommand(int argc, char **argv) {
  const char *usage = kRelinkUsage;
  std::string bundle;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (isHelpOption(arg))
      return printHelp(usage);
    if (!arg.empty() && arg[0] == '-')
      return error(kExitBadInput, "unknown option '" + arg + "'", usage);
    if (!takeBundleArgument(arg, bundle, usage))
      return kExitBadInput;
  }
  Manifest manifest;
  if (!readBundleManifest(bundle, manifest, usage))
    return kExitBadInput;
  std::string object = weft::joinPath(bundle, "model.o");
  if (!weft::fileExists(object))
    return error(kExitBadInput,
                 bundle + " has no model.o to link (weftc compile keeps it in "
                          "--target cuda bundles; compile a cpu bundle again "
                          "instead)");
  std::string reason;
  if (!weft::bundleTargetAvailable(manifest.target, reason))
    return error(kExitFailure, "cannot relink " + bundle + ": " + reason);
  std::string libDir =
      weft::bundleRuntimeLibDir(manifest.target, weft::executableDirectory());
  std::string archive = weft::joinPath(
      libDir, "lib" + weft::bundleRuntimeName(manifest.target) + ".a");
  if (!weft::fileExists(archive))
    return error(kExitFailure,
                 "cannot relink " + bundle + ": " + archive +
                     " does not exist (build the targets " +
                     weft::bundleRuntimeName(manifest.target) + " and " +
                     weft::bundleRuntimeName(manifest.target) + "_main)");

  // Linked beside the executable, then renamed over it.
  std::string exe = weft::joinPath(bundle, manifest.executable);
  std::string scratch = exe + ".relink-" + std::to_string(::getpid());
  std::vector<std::string> args =
      weft::bundleLinkCommand(manifest.target, libDir, object, scratch);
  std::vector<char *> cargs = execArgv(args);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid < 0)
    return error(kExitFailure,
                 std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::execvp(cargs[0], cargs.data());
    std::fprintf(stderr, "weft: error: cannot execute '%s': %s\n", cargs[0],
                 std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ::unlink(scratch.c_str());
    std::string command;
    for (const std::string &a : args)
      command += (command.empty() ? "" : " ") + a;
    return error(kExitFailure, "linking " + exe + " failed: " + command);
  }
  if (::rename(scratch.c_str(), exe.c_str()) != 0) {
    int err = errno;
    ::unlink(scratch.c_str());
    return error(kExitFailure,
                 "cannot replace " + exe + ": " + std::strerror(err));
  }
  std::printf("weft: relinked %s (target %s) with %s\n", exe.c_str(),
              manifest.target.c_str(), archive.c_str());
  return kExitOk;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return error(kExitBadInput, "missing command", kUsage);
  std::string command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    std::printf("%s", kUsage);
    return kExitOk;
  }
  if (command == "--version") {
    std::printf("weft %s\n", WEFT_VERSION_STRING);
    return kExitOk;
  }
  if (command == "run" || command == "train")
    return launchCommand(command == "train", argc - 2, argv + 2);
  if (command == "export")
    return exportCommand(argc - 2, argv + 2);
  if (command == "calibrate")
    return calibrateCommand(argc - 2, argv + 2);
  if (command == "relink")
    return relinkCommand(argc - 2, argv + 2);
  return error(kExitBadInput, "unknown command '" + command + "'", kUsage);
}
