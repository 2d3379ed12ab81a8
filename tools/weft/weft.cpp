//===- weft.cpp - The weft runner and launcher ----------------------------===//
//
//   weft run BUNDLE [-n N] --input NAME=FILE.npy ... --output-dir DIR
//            [--repeat N] [--warmup W] [--quiet]
//   weft train BUNDLE [-n N] --data NAME=FILE.npy ... --steps K
//            [--metrics FILE.jsonl] [--checkpoint-dir DIR] [--save-every K]
//            [--resume]
//   weft export ...   (not implemented yet)
//   weft --help | --version
//
// `weft run` and `weft train` read BUNDLE/manifest.json and execute the
// bundle's executable with `--bundle BUNDLE` (and `--train` for training)
// followed by the remaining arguments: directly for a world size of 1,
// through `mpirun -n N` otherwise. Exit codes: 0 success, 2 bad usage or bad
// input, 1 anything else (the executable's own code otherwise).
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/FileUtil.h"
#include "weft/runtime/Json.h"
#include "weft/runtime/Version.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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
    "      [--resume]\n"
    "                 train a bundle compiled with --train\n"
    "  export BUNDLE --checkpoint DIR -o TRAINED.onnx\n"
    "                 write trained weights back to ONNX (not implemented "
    "yet)\n"
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
    "[--resume]";

int error(int code, const std::string &message, const char *usage = nullptr) {
  std::fflush(stdout);
  std::fprintf(stderr, "weft: error: %s\n", message.c_str());
  if (usage) {
    std::fputs(usage, stderr);
    if (usage[0] && usage[std::strlen(usage) - 1] != '\n')
      std::fputc('\n', stderr);
  }
  return code;
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
  int64_t worldSize = 1;
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
  return true;
}

std::string absolutePath(const std::string &path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf))
    return buf;
  return path;
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
    if (arg == "--help" || arg == "-h") {
      std::printf("%s\n", usage);
      return kExitOk;
    }
    if (arg == "-n" || arg.compare(0, 3, "-n=") == 0 ||
        (arg.size() > 2 && arg.compare(0, 2, "-n") == 0 && arg[2] >= '0' &&
         arg[2] <= '9')) {
      std::string value;
      if (arg == "-n") {
        if (i + 1 >= argc)
          return error(kExitBadInput, "-n needs a number of ranks", usage);
        value = argv[++i];
      } else {
        value = arg.substr(arg[2] == '=' ? 3 : 2);
      }
      if (!parsePositive(value, ranks))
        return error(kExitBadInput,
                     "-n expects a positive number of ranks, got '" + value +
                         "'",
                     usage);
      continue;
    }
    if (arg == "--bundle" || arg.compare(0, 9, "--bundle=") == 0)
      return error(kExitBadInput,
                   std::string("give the bundle as the first argument of "
                               "'weft ") +
                       command + "', not with --bundle",
                   usage);
    bool takesValue =
        train ? (arg == "--data" || arg == "--steps" || arg == "--metrics" ||
                 arg == "--checkpoint-dir" || arg == "--save-every")
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
    if (!bundle.empty())
      return error(kExitBadInput, "unexpected argument '" + arg + "'", usage);
    bundle = arg;
  }
  if (bundle.empty())
    return error(kExitBadInput, "missing BUNDLE", usage);

  Manifest manifest;
  std::string reason;
  if (!readManifest(bundle, manifest, reason))
    return error(kExitBadInput,
                 "not a weft bundle: " + bundle + " (" + reason + ")");
  if (ranks == 0)
    ranks = manifest.worldSize;
  if (ranks != manifest.worldSize)
    return error(kExitBadInput, "-n " + std::to_string(ranks) +
                                    " does not match the bundle's world size " +
                                    std::to_string(manifest.worldSize) +
                                    " (recompile with --devices " +
                                    std::to_string(ranks) + " to run on " +
                                    std::to_string(ranks) + " ranks)");

  std::string bundleAbs = absolutePath(bundle);
  std::string exe = weft::joinPath(bundleAbs, manifest.executable);
  if (::access(exe.c_str(), X_OK) != 0)
    return error(kExitBadInput, "not a weft bundle: " + bundle +
                                    " (its executable '" + manifest.executable +
                                    "' is missing or not executable)");

  std::vector<std::string> args;
  if (manifest.worldSize > 1) {
    args = {"mpirun", "--oversubscribe", "-n", std::to_string(ranks)};
    // Open MPI refuses to start as root without these (containers).
    if (::geteuid() == 0) {
      ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
      ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    }
  }
  args.push_back(exe);
  args.push_back("--bundle");
  args.push_back(bundleAbs);
  if (train)
    args.push_back("--train");
  args.insert(args.end(), forwarded.begin(), forwarded.end());
  std::vector<char *> cargs;
  for (std::string &a : args)
    cargs.push_back(&a[0]);
  cargs.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  if (manifest.worldSize > 1) {
    ::execvp("mpirun", cargs.data());
    return error(kExitFailure, std::string("cannot run mpirun: ") +
                                   std::strerror(errno) + " (a bundle for " +
                                   std::to_string(ranks) + " ranks needs MPI)");
  }
  ::execv(exe.c_str(), cargs.data());
  return error(kExitFailure,
               "cannot execute '" + exe + "': " + std::strerror(errno));
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
    return error(kExitBadInput,
                 "'weft " + command + "' is not implemented yet");
  return error(kExitBadInput, "unknown command '" + command + "'", kUsage);
}
