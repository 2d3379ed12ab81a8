//===- FusedJit.h - Fused elementwise kernels compiled at run time --------===//
//
// weft_cuda_k_fused interprets a program's micro-ops (FusedLowering.h) one
// at a time, with its slots in local memory: on long chains (GELU's
// gradient) the interpreter, not the memory, sets the pace. The first call
// of a program instead compiles a kernel for it with NVRTC: the same calls
// of FusedDevice.cuh in the same order, as straight-line code with every
// slot a named array the compiler keeps in registers, and each operand's
// element type and access fixed. The same bits as the interpreter's.
//
// A kernel is specialized on what the source names (FusedJitProgram): the
// micro-ops, the slots, each operand's dtype and access, each result's
// dtype and the index width. Pointers, sizes, divisors, strides,
// alignment and immediates stay in the parameter block, so one kernel
// serves every layer of a model. Compiled kernels are kept on disk
// (fusedJitCacheDir), so a later process loads them instead of compiling.
//
// Host-only C++ (NVRTC, no CUDA runtime): the unit tests compile sources
// on machines without a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CUDA_FUSEDJIT_H
#define WEFT_RUNTIME_KERNELS_CUDA_FUSEDJIT_H

#include "runtime/kernels/cuda/FusedLowering.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft {
namespace cuda {

/// The name of the kernel in a compiled source.
constexpr const char *kFusedJitKernel = "weft_fused_jit";

/// What a generated kernel is specialized on.
struct FusedJitProgram {
  std::vector<FusedMicroOp> ops;
  int numSlots = 0;
  std::vector<uint8_t> operandType;   // WEFT_F32, WEFT_BF16 or WEFT_F16
  std::vector<uint8_t> operandAccess; // cpu::FusedAccess
  std::vector<uint8_t> resultType;
  bool index64 = false; // int64_t indices and Divider64, else 32-bit
  int block = 256;      // threads per block (__launch_bounds__)

  /// Bytes that differ exactly when the sources differ: the cache's key.
  std::string key() const;
};

/// The CUDA source of the kernel for `prog` (it includes FusedDevice.cuh:
/// compile it with fusedJitCompile), or "" when a micro-op or type is not
/// one the generator knows (the caller interprets).
std::string fusedJitSource(const FusedJitProgram &prog);

/// Compiles `source` with NVRTC into a cubin for sm_<arch> (90 for
/// compute capability 9.0), with FusedDevice.cuh and the headers it
/// includes as weft was built with them, and NVRTC's options `extra`
/// after weft's. False when it fails; `log` gets NVRTC's log either way.
bool fusedJitCompile(const std::string &source, int arch,
                     std::vector<char> &cubin, std::string &log,
                     const std::vector<std::string> &extra = {});

/// The directory compiled kernels are kept in between processes:
/// $WEFT_CACHE_DIR/cuda-fused, else $XDG_CACHE_HOME/weft/cuda-fused, else
/// $HOME/.cache/weft/cuda-fused; "" when WEFT_CACHE_DIR is "off" or none
/// of them is set.
std::string fusedJitCacheDir();

/// fusedJitCompile through the cache: a cubin an earlier process compiled
/// from the same source, headers, architecture and NVRTC is read instead
/// (`cached` says which); a new one is written there (atomically; a cache
/// that cannot be written is skipped, it never fails the compile).
bool fusedJitCompileCached(const std::string &source, int arch,
                           std::vector<char> &cubin, std::string &log,
                           bool &cached);

} // namespace cuda
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CUDA_FUSEDJIT_H
