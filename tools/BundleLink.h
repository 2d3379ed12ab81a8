//===- BundleLink.h - How a bundle's model.o becomes its executable -------===//
//
// `weftc compile` links the model's object file with the runtime of its
// --target, and `weft relink BUNDLE` links a bundle's kept model.o again
// with the runtime of the build it belongs to (a GPU machine builds its own
// runtime: the bundle carries model.o there). Both use this link line:
//
//   CXX model.o -o model LIBDIR/lib<runtime>_main.a LIBDIR/lib<runtime>.a
//       <the libraries this build found for the target>
//
// with <runtime> weft_runtime (cpu) or weft_runtime_cuda (cuda). CMake
// compiles in the driver (WEFT_CXX_COMPILER), the build's lib directory
// (WEFT_RUNTIME_LIB_DIR) and per target the libraries, '|'-separated
// (WEFT_LINK_CPU: OpenBLAS, MPI; WEFT_LINK_CUDA: cudart, cuBLASLt, NCCL with
// their rpaths, MPI); an empty list means the build has no runtime for the
// target. $WEFT_CXX and $WEFT_RUNTIME_LIB_DIR override the driver and the
// directory.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_BUNDLELINK_H
#define WEFT_TOOLS_BUNDLELINK_H

#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace weft {

/// The '|'-separated libraries this build links `target`'s bundles with
/// ("" when it has no runtime for it).
inline const char *bundleTargetLibraries(const std::string &target) {
  if (target == "cpu")
    return WEFT_LINK_CPU;
  if (target == "cuda")
    return WEFT_LINK_CUDA;
  return "";
}

/// Whether this build has a runtime for `target`; otherwise `error` says
/// why not.
inline bool bundleTargetAvailable(const std::string &target,
                                  std::string &error) {
  if (target != "cpu" && target != "cuda") {
    error = "unknown target '" + target + "' (expected cpu or cuda)";
    return false;
  }
  if (*bundleTargetLibraries(target))
    return true;
  error = target == "cuda"
              ? "--target cuda needs weft built with its CUDA runtime "
                "(WEFT_ENABLE_CUDA), but nvcc, nccl.h or libnccl were not "
                "found when this weft was configured"
              : "this weft was built without libweft_runtime (OpenBLAS was "
                "not found when it was configured: pass "
                "-DWEFT_OPENBLAS_ROOT=DIR)";
  return false;
}

/// The archive name stem of `target`'s runtime.
inline std::string bundleRuntimeName(const std::string &target) {
  return target == "cuda" ? "weft_runtime_cuda" : "weft_runtime";
}

/// The directory of the runtime's archives: $WEFT_RUNTIME_LIB_DIR, else
/// `toolDir`/../lib when it holds `target`'s archive (an installed or moved
/// tree), else the build tree's.
inline std::string bundleRuntimeLibDir(const std::string &target,
                                       const std::string &toolDir) {
  if (const char *env = std::getenv("WEFT_RUNTIME_LIB_DIR"))
    if (*env)
      return env;
  if (!toolDir.empty()) {
    std::string dir = toolDir + "/../lib";
    std::string lib = dir + "/lib" + bundleRuntimeName(target) + ".a";
    struct stat st;
    if (::stat(lib.c_str(), &st) == 0)
      return dir;
  }
  return WEFT_RUNTIME_LIB_DIR;
}

/// The link command (argv, the driver first) for `target`.
inline std::vector<std::string> bundleLinkCommand(const std::string &target,
                                                  const std::string &libDir,
                                                  const std::string &object,
                                                  const std::string &exe) {
  std::string driver = WEFT_CXX_COMPILER;
  if (const char *env = std::getenv("WEFT_CXX"))
    if (*env)
      driver = env;
  const std::string runtime = bundleRuntimeName(target);
  std::vector<std::string> args = {driver,
                                   object,
                                   "-o",
                                   exe,
                                   libDir + "/lib" + runtime + "_main.a",
                                   libDir + "/lib" + runtime + ".a"};
  std::string libs = bundleTargetLibraries(target);
  size_t at = 0;
  while (at <= libs.size()) {
    size_t bar = libs.find('|', at);
    if (bar == std::string::npos)
      bar = libs.size();
    if (bar > at)
      args.push_back(libs.substr(at, bar - at));
    at = bar + 1;
  }
  return args;
}

} // namespace weft

#endif // WEFT_TOOLS_BUNDLELINK_H
