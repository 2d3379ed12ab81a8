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
// `weft run` and `weft train` read BUNDLE/manifest.json and execute the
// bundle's executable with `--bundle BUNDLE` (and `--train` for training)
// followed by the remaining arguments: directly for a world size of 1,
// through `mpirun -n N` otherwise. Exit codes: 0 success, 2 bad usage or bad
// input, 1 anything else (the executable's own code otherwise).
//
// `weft export` writes the bundle's source model (BUNDLE/source.onnx, which
// weftc copies into every bundle) with the parameters of a training
// checkpoint in place of its initializers. The checkpoint is DIR/latest (or
// the newest step-* directory), or DIR itself when it is a step-* directory;
// for a multi-rank bundle, rank 0's state file, and every rank's for the
// parameters the plan splits (JoinShards.h). It is verified as `weft train
// --resume` verifies it (runtime/executor/Checkpoint.h: sizes, SHA-256,
// tensors) against the signature the bundle's executable prints with
// --print-signature: that signature's SHA-256 is what every checkpoint
// records, so a checkpoint of another model (or of the same model compiled
// with other flags) is refused. The ONNX half lives in
// ExportOnnx.cpp, which runtime-only builds (no ONNX) leave out.
//
// `weft calibrate` measures this machine through weft's own runtime and
// writes a cluster description ("weft-cluster/1", what `weftc --cluster
// FILE.json` reads): it checks its arguments and the output path, then
// starts N ranks (default: one per hardware thread) of weft-calibrate
// (Calibrate.cpp, installed beside `weft`) exactly as `weft run` starts a
// bundle's executable (execRanks). Rank 0 writes the file atomically.
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
#include "tools/weft/JoinShards.h"
#include "weft/runtime/Executor.h"
#include "weft/runtime/FileUtil.h"
#include "weft/runtime/Json.h"
#include "weft/runtime/Version.h"

#ifdef WEFT_HAVE_ONNX
#include "tools/weft/ExportOnnx.h"
#endif

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;

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
    "[--resume] [--trace FILE.json]";

const char *const kExportUsage =
    "usage: weft export BUNDLE --checkpoint DIR -o TRAINED.onnx";

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

/// Writes `text` to `out`, ending it with a newline.
void putLine(const char *text, std::FILE *out) {
  std::fputs(text, out);
  if (text[0] && text[std::strlen(text) - 1] != '\n')
    std::fputc('\n', out);
}

int error(int code, const std::string &message, const char *usage = nullptr) {
  std::fflush(stdout);
  std::fprintf(stderr, "weft: error: %s\n", message.c_str());
  if (usage)
    putLine(usage, stderr);
  return code;
}

/// Whether `arg` asks for a command's help (--help or -h).
bool isHelpOption(const std::string &arg) {
  return arg == "--help" || arg == "-h";
}

/// Prints a command's help `text` on stdout.
int printHelp(const char *text) {
  putLine(text, stdout);
  return kExitOk;
}

/// Takes `arg` as the command's BUNDLE argument; on a second one prints the
/// error and returns false.
bool takeBundleArgument(const std::string &arg, std::string &bundle,
                        const char *usage) {
  if (!bundle.empty()) {
    error(kExitBadInput, "unexpected argument '" + arg + "'", usage);
    return false;
  }
  bundle = arg;
  return true;
}

/// Reads the value of option `name` at argv[i] (NAME=VALUE, or NAME VALUE
/// advancing i past it), which may be given once (`given`) and not empty;
/// on bad usage prints the error and returns false.
bool readOptionValue(int argc, char **argv, int &i, const std::string &name,
                     std::string &value, bool &given, const char *usage) {
  const std::string arg = argv[i];
  if (given) {
    error(kExitBadInput, "option '" + name + "' given twice", usage);
    return false;
  }
  if (name.size() < arg.size()) {
    value = arg.substr(name.size() + 1);
  } else {
    if (i + 1 >= argc) {
      error(kExitBadInput, "option '" + arg + "' needs a value", usage);
      return false;
    }
    value = argv[++i];
  }
  if (value.empty()) {
    error(kExitBadInput, "option '" + name + "' needs a value", usage);
    return false;
  }
  given = true;
  return true;
}

/// Checks that `output` names a file in an existing directory, its
/// directory into `outDir` (`example`: a file to suggest when `output` is a
/// directory); on failure prints the error and returns false.
bool checkOutputFile(const std::string &output, const std::string &example,
                     std::string &outDir) {
  if (output.back() == '/' || weft::isDirectory(output)) {
    error(kExitBadInput, "output '" + output +
                             "' is a directory; give the file to write, "
                             "e.g. " +
                             example);
    return false;
  }
  outDir = weft::parentPath(output);
  if (!weft::isDirectory(outDir)) {
    error(kExitBadInput, "cannot write output '" + output + "': directory '" +
                             outDir + "' does not exist");
    return false;
  }
  return true;
}

/// argv for execv / execvp: pointers into `args`, then a null.
std::vector<char *> execArgv(std::vector<std::string> &args) {
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(&a[0]);
  argv.push_back(nullptr);
  return argv;
}

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

struct Manifest {
  std::string executable;
  std::string target = "cpu"; ///< "target" (cpu or cuda)
  int64_t worldSize = 1;
  std::string sourceModelFile; ///< "" when the bundle has none
};

/// Reads BUNDLE/manifest.json; on failure returns false with the reason.
bool readManifest(const std::string &bundle, Manifest &out,
                  std::string &reason) {
  std::string path = weft::joinPath(bundle, "manifest.json");
  if (!weft::isDirectory(bundle)) {
    reason = "'" + bundle + "' is not a directory";
    return false;
  }
  std::string text, err;
  if (!weft::readFile(path, text, err)) {
    reason = err;
    return false;
  }
  weft::JsonValue root;
  if (!weft::parseJson(text, root, err)) {
    reason = path + " is not valid JSON: " + err;
    return false;
  }
  if (!root.isObject()) {
    reason = path + " is not a JSON object";
    return false;
  }
  if (const weft::JsonValue *version = root.get("format_version")) {
    if (!version->isInteger() || version->asInt() != 1) {
      reason = path + " has an unsupported \"format_version\" (this weft "
                      "reads 1)";
      return false;
    }
  }
  const weft::JsonValue *exe = root.get("executable");
  if (!exe || !exe->isString() || exe->asString().empty()) {
    reason = path + " has no \"executable\"";
    return false;
  }
  out.executable = exe->asString();
  if (out.executable.find('/') != std::string::npos || out.executable == "." ||
      out.executable == "..") {
    reason = path + ": \"executable\" must be a file name inside the bundle";
    return false;
  }
  const weft::JsonValue *world = root.get("world_size");
  if (!world || !world->isInteger() || world->asInt() < 1) {
    reason = path + " has no valid \"world_size\"";
    return false;
  }
  out.worldSize = world->asInt();
  if (const weft::JsonValue *target = root.get("target")) {
    if (!target->isString() ||
        (target->asString() != "cpu" && target->asString() != "cuda")) {
      reason = path + ": \"target\" must be \"cpu\" or \"cuda\"";
      return false;
    }
    out.target = target->asString();
  }
  if (const weft::JsonValue *source = root.get("source_model_file"))
    if (source->isString())
      out.sourceModelFile = source->asString();
  return true;
}

/// Reads the manifest of BUNDLE (the command's argument, "" when not
/// given); on failure prints the error (with `usage` when BUNDLE is
/// missing) and returns false.
bool readBundleManifest(const std::string &bundle, Manifest &manifest,
                        const char *usage) {
  if (bundle.empty()) {
    error(kExitBadInput, "missing BUNDLE", usage);
    return false;
  }
  std::string reason;
  if (readManifest(bundle, manifest, reason))
    return true;
  error(kExitBadInput, "not a weft bundle: " + bundle + " (" + reason + ")");
  return false;
}

std::string absolutePath(const std::string &path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf))
    return buf;
  return path;
}

/// Whether `arg` is the -n option of the commands that start ranks (-n N,
/// -nN or -n=N).
bool isRanksOption(const std::string &arg) {
  return arg == "-n" || arg.compare(0, 3, "-n=") == 0 ||
         (arg.size() > 2 && arg.compare(0, 2, "-n") == 0 && arg[2] >= '0' &&
          arg[2] <= '9');
}

/// BUNDLE's executable (absolute: `bundleAbs` is BUNDLE's absolute path);
/// when it is missing prints the error and returns false.
bool bundleExecutable(const std::string &bundle, const std::string &bundleAbs,
                      const Manifest &manifest, std::string &exe) {
  exe = weft::joinPath(bundleAbs, manifest.executable);
  if (::access(exe.c_str(), X_OK) == 0)
    return true;
  error(kExitBadInput, "not a weft bundle: " + bundle + " (its executable '" +
                           manifest.executable +
                           "' is missing or not executable)");
  return false;
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

/// Executes `exe` with `exeArgs` as `ranks` ranks, the way every weft
/// command starts ranks: directly for one, through `mpirun --oversubscribe
/// -n N` otherwise (mpirun's exit code is the ranks'). Returns only on
/// failure (exit code 1; `whyMpi` says what needed mpirun).
int execRanks(int64_t ranks, const std::string &exe,
              const std::vector<std::string> &exeArgs,
              const std::string &whyMpi) {
  std::vector<std::string> args;
  if (ranks > 1) {
    args = {"mpirun", "--oversubscribe", "-n", std::to_string(ranks)};
    // Open MPI refuses to start as root without these (containers).
    if (::geteuid() == 0) {
      ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
      ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    }
  }
  args.push_back(exe);
  args.insert(args.end(), exeArgs.begin(), exeArgs.end());
  std::vector<char *> cargs = execArgv(args);
  std::fflush(stdout);
  std::fflush(stderr);
  if (ranks > 1) {
    ::execvp("mpirun", cargs.data());
    return error(kExitFailure, std::string("cannot run mpirun: ") +
                                   std::strerror(errno) + " (" + whyMpi + ")");
  }
  ::execv(exe.c_str(), cargs.data());
  return error(kExitFailure,
               "cannot execute '" + exe + "': " + std::strerror(errno));
}

/// `weft run` (train = false) and `weft train`: checks the bundle and -n,
/// then executes the bundle's executable.
int launchCommand(bool train, int argc, char **argv) {
  const char *usage = train ? kTrainUsage : kRunUsage;
  const char *command = train ? "train" : "run";
  std::string bundle;
  int64_t ranks = 0; // 0: not given
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
    if (arg == "--bundle" || arg.compare(0, 9, "--bundle=") == 0)
      return error(kExitBadInput,
                   std::string("give the bundle as the first argument of "
                               "'weft ") +
                       command + "', not with --bundle",
                   usage);
    bool takesValue = train
                          ? (arg == "--data" || arg == "--steps" ||
                             arg == "--metrics" || arg == "--checkpoint-dir" ||
                             arg == "--save-every" || arg == "--trace")
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

  std::vector<std::string> args = {"--bundle", bundleAbs};
  if (train)
    args.push_back("--train");
  args.insert(args.end(), forwarded.begin(), forwarded.end());
  return execRanks(ranks, exe, args,
                   "a bundle for " + std::to_string(ranks) +
                       " ranks needs MPI");
}

#ifdef WEFT_HAVE_ONNX
/// Strips trailing slashes ("ck/" -> "ck"; "/" stays).
std::string stripSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  return path;
}

/// Whether `path` (absolute, resolved) is `dir` or lies under it.
bool isInside(const std::string &path, const std::string &dir) {
  if (dir.empty() || path.compare(0, dir.size(), dir) != 0)
    return false;
  return path.size() == dir.size() || dir == "/" || path[dir.size()] == '/';
}

/// Runs `exe --print-signature` and returns what it prints, without the
/// final newline.
bool readSignature(const std::string &exe, std::string &out,
                   std::string &reason) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    reason = std::string("cannot create a pipe: ") + std::strerror(errno);
    return false;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid < 0) {
    reason = std::string("cannot fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return false;
  }
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0)
      ::dup2(devnull, STDERR_FILENO);
    std::string flag = "--print-signature";
    char *args[] = {const_cast<char *>(exe.c_str()), &flag[0], nullptr};
    ::execv(exe.c_str(), args);
    ::_exit(127);
  }
  ::close(fds[1]);
  out.clear();
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    reason =
        "'" + exe + " --print-signature' failed (" +
        (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                           : std::string("killed by a signal")) +
        "; a bundle linked by an older weftc lacks that flag: "
        "recompile it)";
    return false;
  }
  if (!out.empty() && out.back() == '\n')
    out.pop_back();
  return true;
}
#endif // WEFT_HAVE_ONNX

/// `weft export BUNDLE --checkpoint DIR -o TRAINED.onnx`.
int exportCommand(int argc, char **argv) {
  const char *usage = kExportUsage;
  std::string bundle, checkpoint, output;
  bool haveCheckpoint = false, haveOutput = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (isHelpOption(arg))
      return printHelp(usage);
    std::string *value = nullptr;
    bool *given = nullptr;
    std::string name = arg.substr(0, arg.find('='));
    if (name == "--checkpoint") {
      value = &checkpoint;
      given = &haveCheckpoint;
    } else if (name == "-o" || name == "--output") {
      value = &output;
      given = &haveOutput;
    }
    if (value) {
      if (!readOptionValue(argc, argv, i, name, *value, *given, usage))
        return kExitBadInput;
      continue;
    }
    if (!arg.empty() && arg[0] == '-')
      return error(kExitBadInput, "unknown option '" + arg + "'", usage);
    if (!takeBundleArgument(arg, bundle, usage))
      return kExitBadInput;
  }
  if (bundle.empty())
    return error(kExitBadInput, "missing BUNDLE", usage);
  if (!haveCheckpoint)
    return error(kExitBadInput,
                 "missing --checkpoint DIR (the checkpoint directory of "
                 "'weft train --checkpoint-dir', or one of its step-* "
                 "directories)",
                 usage);
  if (!haveOutput)
    return error(kExitBadInput, "missing -o TRAINED.onnx", usage);
#ifndef WEFT_HAVE_ONNX
  return error(kExitBadInput,
               "weft was built without ONNX support (a runtime-only build); "
               "'weft export' needs the full build");
#else
  // The bundle and its source model.
  Manifest manifest;
  if (!readBundleManifest(bundle, manifest, usage))
    return kExitBadInput;
  if (manifest.sourceModelFile.empty())
    return error(kExitBadInput,
                 "bundle " + bundle +
                     " has no source model (it was compiled by an older "
                     "weftc; compile the model again to export from it)");
  std::string sourcePath = weft::joinPath(bundle, manifest.sourceModelFile);
  if (!weft::fileExists(sourcePath) || weft::isDirectory(sourcePath))
    return error(kExitBadInput, "bundle " + bundle +
                                    " lacks its source model " + sourcePath +
                                    " (the file is missing)");
  std::string bundleAbs = absolutePath(bundle);
  if (!isInside(absolutePath(sourcePath), bundleAbs))
    return error(kExitBadInput, weft::joinPath(bundle, "manifest.json") +
                                    ": \"source_model_file\" must name a "
                                    "file inside the bundle");
  std::string exe;
  if (!bundleExecutable(bundle, bundleAbs, manifest, exe))
    return kExitBadInput;

  // The output: a file name in an existing directory, outside the bundle
  // and the checkpoint directory.
  std::string outDir;
  if (!checkOutputFile(
          output, weft::joinPath(stripSlashes(output), "trained.onnx"), outDir))
    return kExitBadInput;
  std::string outAbs =
      weft::joinPath(absolutePath(outDir), weft::fileName(output));
  if (isInside(outAbs, bundleAbs))
    return error(kExitBadInput, "refusing to write '" + output +
                                    "' inside the bundle " + bundle +
                                    "; write the exported model elsewhere");

  // The checkpoint: DIR/latest, or DIR itself when it is a step-* directory.
  std::string ckpt = stripSlashes(checkpoint);
  std::string storeDir = ckpt, stepName;
  int64_t step = 0;
  if (weft::parseCheckpointDirName(weft::fileName(ckpt), step) &&
      weft::isDirectory(ckpt)) {
    storeDir = weft::parentPath(ckpt);
    stepName = weft::fileName(ckpt);
  }
  if (!weft::isDirectory(storeDir))
    return error(kExitBadInput,
                 "checkpoint directory '" + checkpoint + "' " +
                     (weft::fileExists(storeDir) ? "is not a directory"
                                                 : "does not exist"));
  if (isInside(outAbs, absolutePath(storeDir)))
    return error(kExitBadInput, "refusing to write '" + output +
                                    "' inside the checkpoint directory " +
                                    storeDir +
                                    "; write the exported model elsewhere");

  // The model's signature, from the bundle's executable.
  std::string signature, reason;
  if (!readSignature(exe, signature, reason))
    return error(kExitBadInput, "cannot read the model signature of bundle " +
                                    bundle + ": " + reason);
  weft::Executor executor;
  weft::Status status = executor.init(signature, nullptr);
  if (!status.ok())
    return error(kExitBadInput, "bundle " + bundle +
                                    ": its executable's signature is "
                                    "invalid: " +
                                    status.message);
  if (!executor.signature().isTraining())
    return error(kExitBadInput,
                 "bundle " + bundle +
                     " was compiled for inference; export needs the "
                     "training bundle (weftc compile --train) that wrote "
                     "the checkpoint");
  // Several ranks: parameters the plan splits are put together from every
  // rank's state file (JoinShards.h); the others come from rank 0's.
  std::vector<weft::WholeParam> whole;
  weft::CheckpointInfo info;
  if (stepName.empty()) {
    std::string which;
    weft::CheckpointStore store(storeDir, signature, 0,
                                executor.signature().worldSize);
    if (!store.hasCheckpoint(which))
      return error(kExitBadInput,
                   "no checkpoint in " + storeDir +
                       " (no 'latest' file and no step-* directory)");
  }
  status = weft::loadWholeParams(signature, storeDir, stepName, whole, info);
  if (!status.ok())
    return error(status.code, status.message);
  std::vector<weft::ExportParam> params;
  for (const weft::WholeParam &p : whole)
    params.push_back({p.name, p.dtype, p.shape, p.data.data(), p.data.size()});
  weft::ExportSummary summary;
  status = weft::exportOnnxModel(sourcePath, params, output, summary);
  if (!status.ok())
    return error(status.code, status.message);
  std::printf("exported %s: %zu trained parameters from %s (step %lld), "
              "%zu other initializers unchanged%s%s\n",
              output.c_str(), summary.replaced, info.path.c_str(),
              static_cast<long long>(info.step), summary.kept,
              summary.dataFile.empty() ? "" : "; external data in ",
              summary.dataFile.c_str());
  return kExitOk;
#endif
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
    return execRanks(1, exe, args, "");
  }
  std::string exe = weft::joinPath(dir.empty() ? "." : dir, "weft-calibrate");
  if (::access(exe.c_str(), X_OK) != 0)
    return error(kExitFailure, "cannot find weft-calibrate beside weft (" +
                                   exe + ": " + std::strerror(errno) + ")");
  std::vector<std::string> args = {"-o", outAbs, "--ranks",
                                   std::to_string(ranks)};
  if (quick)
    args.push_back("--quick");
  return execRanks(ranks, exe, args,
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
