//===- ExportCommand.cpp - weft export: trained parameters into ONNX ------===//
//
//   weft export BUNDLE --checkpoint DIR -o TRAINED.onnx
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
//===----------------------------------------------------------------------===//

#include "runtime/executor/Checkpoint.h"
#include "tools/weft/Cli.h"
#include "tools/weft/JoinShards.h"
#include "weft/runtime/Executor.h"
#include "weft/runtime/FileUtil.h"

#ifdef WEFT_HAVE_ONNX
#include "tools/weft/ExportOnnx.h"
#endif

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace weft::cli {

namespace {

const char *const kExportUsage =
    "usage: weft export BUNDLE --checkpoint DIR -o TRAINED.onnx";

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

} // namespace

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

} // namespace weft::cli
