//===- Fused.cu - GPU fused elementwise kernel ----------------------------===//
//
// The GPU twin of runtime/kernels/cpu/Fused.cpp: one pass over memory for a
// chain of elementwise instructions (FusedProgram.h, decoded and checked on
// the host as the CPU kernel does). The host lowers the program to the
// micro-ops of FusedLowering.h and fills a parameter block (FusedDevice.cuh:
// the micro-ops, immediates and the operands' broadcast descriptions, read
// in place from the constant bank as a __grid_constant__, under the 4 KB
// limit). Two kernels run it:
//
//   - the one FusedJit.h compiles with NVRTC for the program, on its first
//     call (cached for the process): straight-line code, its slots in
//     registers. The default;
//   - the interpreter below, which runs any program's micro-ops from the
//     parameter block with its slots in local memory: where NVRTC fails or
//     is not wanted (WEFT_CUDA_FUSED=interpret).
//
// Each thread runs the micro-ops on groups of V consecutive elements
// (grid-stride). Operands are read with 16-byte loads when the group is
// whole and the operand's pointer (and period) allow, element by element
// otherwise; results are stored the same way. The full-shape operands of
// the next group are prefetched into L2.
//
// The bits are those of the unfused GPU kernels, from either kernel:
// ElementwiseMath.cuh's element functions (as weft_cuda_k_unary /
// weft_cuda_k_binary) and DeviceScalar.cuh's rounding (as
// weft_cuda_k_cast). Additions, subtractions, products and quotients use
// the __f*_rn intrinsics, which the compiler never contracts into an FMA
// with a neighbouring instruction. pow, the largest function, runs element
// by element in a loop so the kernel holds one copy of it per form.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Broadcast.h"
#include "runtime/kernels/cpu/FusedProgram.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/DataKernelUtil.cuh"
#include "runtime/kernels/cuda/ElementwiseMath.cuh"
#include "runtime/kernels/cuda/FusedDevice.cuh"
#include "runtime/kernels/cuda/FusedJit.h"
#include "runtime/kernels/cuda/FusedLowering.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::data;
using namespace weft::cuda::fused;
using cpu::FusedAccess;
using cpu::FusedProgram;

namespace {

/// Slots of the small and the large interpreter: the runtime reserves
/// local memory for every thread the GPU holds at the largest size a
/// launched kernel declares, so most programs take the small one.
constexpr int kFewSlots = 8;
constexpr int kMaxSlots = WEFT_FUSED_MAX_REGISTERS;

static_assert(kMaxOps == kMaxFusedMicroOps, "parameter block size");
static_assert(kAccessFull == static_cast<int>(FusedAccess::Full) &&
                  kAccessScalar == static_cast<int>(FusedAccess::Scalar) &&
                  kAccessSuffix == static_cast<int>(FusedAccess::Suffix) &&
                  kAccessGeneral == static_cast<int>(FusedAccess::General),
              "access codes");

/// A micro-op packed in 32 bits (see FusedMicroOp).
constexpr uint32_t kSourceShift = 8, kIndexShift = 11, kRoundShift = 17,
                   kSpillBit = 1u << 19, kSpillShift = 20, kResultShift = 26;

uint32_t packMicroOp(const FusedMicroOp &m) {
  return m.code | uint32_t(m.source) << kSourceShift |
         uint32_t(m.index) << kIndexShift | uint32_t(m.round) << kRoundShift |
         (m.spill ? kSpillBit : 0u) | uint32_t(m.spillSlot) << kSpillShift |
         uint32_t(m.result) << kResultShift;
}

static_assert(sizeof(FusedParams<uint32_t, IntDivider>) <= 4000, "params");
static_assert(sizeof(FusedParams<int64_t, Divider64>) <= 4000, "params");

//===-- the machine -------------------------------------------------------===//

/// The interpreter: any program's micro-ops, from the parameter block.
template <class Index, class Div, int kSlots>
__global__ void __launch_bounds__(kBlock)
    fusedKernel(const __grid_constant__ FusedParams<Index, Div> p) {
  float file[kSlots][V];
  const Index numel = p.numel;
  forEachGroup(p, [&](Index base, bool whole) {
    float acc[V] = {};
    for (int j = 0; j < p.numOps; ++j) {
      const uint32_t w = p.ops[j];
      if (w & kSpillBit)
        copyAll(file[(w >> kSpillShift) & 63], acc);
      // The step's input.
      float t[V];
      const int index = (w >> kIndexShift) & 63;
      switch ((w >> kSourceShift) & 7) {
      case kSourceAcc:
        copyAll(t, acc);
        break;
      case kSourceImm:
        fillAll(t, p.imm[index]);
        break;
      case kSourceSlot:
        copyAll(t, file[index]);
        break;
      case kSourceOperand:
        loadOperand(p.operand[index], base, whole, numel, t);
        break;
      default:
        break;
      }
      const int code = static_cast<int>(w & 0xffu);
      switch (code) {
      case WEFT_UNARY_NEG:
        unaryAll<WEFT_UNARY_NEG>(acc);
        break;
      case WEFT_UNARY_SQRT:
        unaryAll<WEFT_UNARY_SQRT>(acc);
        break;
      case WEFT_UNARY_EXP:
        unaryAll<WEFT_UNARY_EXP>(acc);
        break;
      case WEFT_UNARY_LOG:
        unaryAll<WEFT_UNARY_LOG>(acc);
        break;
      case WEFT_UNARY_TANH:
        unaryAll<WEFT_UNARY_TANH>(acc);
        break;
      case WEFT_UNARY_ERF:
        unaryAll<WEFT_UNARY_ERF>(acc);
        break;
      case WEFT_UNARY_RELU:
        unaryAll<WEFT_UNARY_RELU>(acc);
        break;
      case WEFT_UNARY_SIGMOID:
        unaryAll<WEFT_UNARY_SIGMOID>(acc);
        break;
      case kMicroBinary + WEFT_BINARY_ADD:
        binaryAll<false>(acc, t, AddRn{});
        break;
      case kMicroBinary + WEFT_BINARY_SUB:
        binaryAll<false>(acc, t, SubRn{});
        break;
      case kMicroBinary + WEFT_BINARY_MUL:
        binaryAll<false>(acc, t, MulRn{});
        break;
      case kMicroBinary + WEFT_BINARY_DIV:
        binaryAll<false>(acc, t, DivRn{});
        break;
      case kMicroBinary + WEFT_BINARY_POW:
        binaryRotating<false>(acc, t, PowOp{});
        break;
      case kMicroBinary + WEFT_BINARY_MAX:
        binaryAll<false>(acc, t, MaxOp{});
        break;
      case kMicroBinary + WEFT_BINARY_MIN:
        binaryAll<false>(acc, t, MinOp{});
        break;
      case kMicroBinaryRev + WEFT_BINARY_ADD:
        binaryAll<true>(acc, t, AddRn{});
        break;
      case kMicroBinaryRev + WEFT_BINARY_SUB:
        binaryAll<true>(acc, t, SubRn{});
        break;
      case kMicroBinaryRev + WEFT_BINARY_MUL:
        binaryAll<true>(acc, t, MulRn{});
        break;
      case kMicroBinaryRev + WEFT_BINARY_DIV:
        binaryAll<true>(acc, t, DivRn{});
        break;
      case kMicroBinaryRev + WEFT_BINARY_POW:
        binaryRotating<true>(acc, t, PowOp{});
        break;
      case kMicroBinaryRev + WEFT_BINARY_MAX:
        binaryAll<true>(acc, t, MaxOp{});
        break;
      case kMicroBinaryRev + WEFT_BINARY_MIN:
        binaryAll<true>(acc, t, MinOp{});
        break;
      case kMicroPowScalar:
        binaryRotating<false>(acc, t, PowScalar{});
        break;
      case kMicroPowScalarRev:
        binaryRotating<true>(acc, t, PowScalar{});
        break;
      case kMicroMove:
        copyAll(acc, t);
        break;
      case kMicroKeep:
        break;
      default: // kMicroStore
        storeResult(p.result[(w >> kResultShift) & 7], base, whole, numel, t);
        break;
      }
      const int round = (w >> kRoundShift) & 3;
      if (round == WEFT_BF16)
        roundAll<WEFT_BF16>(acc);
      else if (round == WEFT_F16)
        roundAll<WEFT_F16>(acc);
    }
  });
}

//===-- compiled kernels --------------------------------------------------===//

/// The kernels FusedJit.h compiled in this process, by program key; null
/// where compiling failed (the program is interpreted).
class JitCache {
public:
  static JitCache &get() {
    static JitCache cache;
    return cache;
  }

  /// The kernel for `prog`, compiled on first use; null when the
  /// interpreter must run it.
  cudaKernel_t kernel(const FusedJitProgram &prog) {
    if (!enabled_)
      return nullptr;
    std::string key = prog.key();
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = kernels_.find(key);
    if (it != kernels_.end())
      return it->second;
    if (capturing()) {
      // Loading a module is no stream work: compile on an eager run.
      failCapture("a fused kernel compiled for the first time");
      return nullptr;
    }
    cudaKernel_t k = compile(prog);
    kernels_.emplace(std::move(key), k);
    return k;
  }

private:
  JitCache() {
    const char *mode = std::getenv("WEFT_CUDA_FUSED");
    if (mode && std::strcmp(mode, "interpret") == 0)
      enabled_ = false;
    else if (mode && *mode && std::strcmp(mode, "jit") != 0)
      std::fprintf(stderr,
                   "weft: WEFT_CUDA_FUSED=%s is neither jit nor interpret: "
                   "compiling the fused kernels (jit)\n",
                   mode);
  }

  cudaKernel_t compile(const FusedJitProgram &prog) {
    const std::string source = fusedJitSource(prog);
    std::vector<char> cubin;
    std::string log;
    bool cached = false;
    if (source.empty()) {
      log = "no source for the program";
    } else if (fusedJitCompileCached(source, computeCapability(), cubin, log,
                                     cached)) {
      if (cudaKernel_t k = load(cubin, log))
        return k;
      // A cached cubin this GPU refuses: compiled again.
      if (cached && fusedJitCompile(source, computeCapability(), cubin, log))
        if (cudaKernel_t k = load(cubin, log))
          return k;
    }
    if (!warned_) {
      warned_ = true;
      std::fprintf(stderr,
                   "weft: a fused kernel could not be compiled at run time; "
                   "interpreting it (%s)\n",
                   log.c_str());
    }
    return nullptr;
  }

  /// The kernel of a cubin, loaded for the rest of the process; null with
  /// the reason in `log`.
  static cudaKernel_t load(const std::vector<char> &cubin, std::string &log) {
    cudaLibrary_t library = nullptr;
    cudaKernel_t k = nullptr;
    cudaError_t err = cudaLibraryLoadData(&library, cubin.data(), nullptr,
                                          nullptr, 0, nullptr, nullptr, 0);
    if (err == cudaSuccess)
      err = cudaLibraryGetKernel(&k, library, kFusedJitKernel);
    if (err == cudaSuccess)
      return k;
    log = std::string("loading the cubin: ") + cudaGetErrorString(err);
    (void)cudaGetLastError();
    return nullptr;
  }

  bool enabled_ = true, warned_ = false;
  std::mutex mutex_;
  std::unordered_map<std::string, cudaKernel_t> kernels_;
};

//===-- host --------------------------------------------------------------===//

/// Fills operand i's description; `expanded` (when not null) holds the
/// operand expanded to the full shape.
template <class Index, class Div>
void describeOperand(const cpu::KernelArgs &args, const FusedProgram &prog,
                     int i, void *expanded, DevOperand<Index, Div> &x) {
  const cpu::TensorArg &arg = args.tensor(i);
  x.ptr = expanded ? expanded : arg.data;
  x.dtype = static_cast<uint8_t>(arg.dtype);
  const FusedAccess access = expanded ? FusedAccess::Full : prog.access[i];
  x.access = static_cast<uint8_t>(access);
  x.rank = 1;
  const bool aligned16 = aligned(x.ptr, 16);
  x.vec = aligned16 && access == FusedAccess::Full;
  if (access == FusedAccess::Suffix) {
    x.period = Div(static_cast<Index>(arg.numel));
    x.vec = aligned16 && arg.numel % V == 0;
  } else if (access == FusedAccess::General) {
    const cpu::TensorArg *ins[1] = {&arg};
    const cpu::BroadcastPlan<1> plan =
        cpu::makeBroadcastPlan(args, args.tensor(prog.numOperands), ins);
    x.rank = static_cast<uint8_t>(plan.rank);
    for (int d = 0; d < plan.rank; ++d) {
      x.dims[d] = Div(static_cast<Index>(plan.dims[d]));
      x.strides[d] = static_cast<Index>(plan.strides[0][d]);
    }
  }
}

template <class Index, class Div>
void launchFused(const cpu::KernelArgs &args, const FusedProgram &prog) {
  FusedParams<Index, Div> p = {};
  p.numel = static_cast<Index>(prog.numel);
  for (int i = 0; i < prog.numImms; ++i)
    p.imm[i] = prog.imm[i];

  const FusedMicroProgram micro = lowerFusedCall(args, prog);
  if (micro.ops.size() > static_cast<size_t>(kMaxFusedMicroOps))
    args.invalid("program too long for the GPU kernel");
  p.numOps = static_cast<int>(micro.ops.size());
  for (size_t j = 0; j < micro.ops.size(); ++j)
    p.ops[j] = packMicroOp(micro.ops[j]);

  // General operands beyond kMaxDims merged dims: expanded to the full
  // shape first (rare: it takes several alternating broadcast dims).
  const cpu::TensorArg &iter = args.tensor(prog.numOperands);
  int64_t offsets[WEFT_FUSED_MAX_OPERANDS];
  int64_t scratchBytes = 0;
  for (int i = 0; i < prog.numOperands; ++i) {
    offsets[i] = -1;
    if (!prog.live[i] || prog.access[i] != FusedAccess::General)
      continue;
    const cpu::TensorArg &arg = args.tensor(i);
    const cpu::TensorArg *ins[1] = {&arg};
    if (cpu::makeBroadcastPlan(args, iter, ins).rank <= kMaxDims)
      continue;
    offsets[i] = scratchBytes;
    scratchBytes += (prog.numel * arg.elemSize() + 255) / 256 * 256;
  }
  char *scratchBase =
      scratchBytes > 0 ? static_cast<char *>(scratch(scratchBytes)) : nullptr;
  for (int i = 0; i < prog.numOperands; ++i) {
    void *expanded = nullptr;
    if (offsets[i] >= 0) {
      const cpu::TensorArg &arg = args.tensor(i);
      expanded = scratchBase + offsets[i];
      std::vector<int64_t> desc = {2, arg.dtype, arg.rank};
      desc.insert(desc.end(), arg.dims, arg.dims + arg.rank);
      desc.insert(desc.end(), {arg.dtype, iter.rank});
      desc.insert(desc.end(), iter.dims, iter.dims + iter.rank);
      desc.push_back(0);
      void *bufs[2] = {arg.data, expanded};
      weft_cuda_k_expand(bufs, desc.data());
    }
    describeOperand(args, prog, i, expanded, p.operand[i]);
  }
  // Prefetch the first two full-shape operands the program reads.
  p.prefetch[0] = p.prefetch[1] = -1;
  int numPrefetch = 0;
  for (const FusedMicroOp &m : micro.ops)
    if (m.source == kSourceOperand && numPrefetch < 2 &&
        p.operand[m.index].access == static_cast<uint8_t>(FusedAccess::Full) &&
        (numPrefetch == 0 || p.prefetch[0] != m.index))
      p.prefetch[numPrefetch++] = m.index;
  for (int t = 0; t < prog.numResults; ++t) {
    const cpu::TensorArg &y = args.tensor(prog.numOperands + t);
    p.result[t].ptr = y.data;
    p.result[t].dtype = static_cast<uint8_t>(y.dtype);
    p.result[t].vec = aligned(y.data, 16);
  }
  const int blocks = blocksFor((prog.numel + V - 1) / V);
  FusedJitProgram jit;
  jit.ops = micro.ops;
  jit.numSlots = micro.numSlots;
  for (int i = 0; i < prog.numOperands; ++i) {
    jit.operandType.push_back(p.operand[i].dtype);
    jit.operandAccess.push_back(p.operand[i].access);
  }
  for (int t = 0; t < prog.numResults; ++t)
    jit.resultType.push_back(p.result[t].dtype);
  jit.index64 = sizeof(Index) == 8;
  jit.block = kBlock;
  if (cudaKernel_t k = JitCache::get().kernel(jit)) {
    void *params[] = {&p};
    check(cudaLaunchKernel(reinterpret_cast<const void *>(k), dim3(blocks),
                           dim3(kBlock), params, 0, computeStream()),
          "launching a compiled fused kernel");
  } else if (micro.numSlots <= kFewSlots)
    fusedKernel<Index, Div, kFewSlots>
        <<<blocks, kBlock, 0, computeStream()>>>(p);
  else
    fusedKernel<Index, Div, kMaxSlots>
        <<<blocks, kBlock, 0, computeStream()>>>(p);
  checkLaunch("fused");
}

} // namespace

extern "C" void weft_cuda_k_fused(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("fused", bufs, desc);
  const FusedProgram prog = cpu::decodeFusedProgram(args);
  if (prog.numel == 0)
    return;
  // 32-bit indices while every index and offset stays below 2^31.
  if (prog.numel + V <= kInt32Limit)
    launchFused<uint32_t, IntDivider>(args, prog);
  else
    launchFused<int64_t, Divider64>(args, prog);
}
