//===- XentCommon.cuh - Shared by the cross-entropy kernels ---*- CUDA -*-===//
//
// What Loss.cu (softmax_xent) and LossGrad.cu (softmax_xent_grad) share:
// reading and writing scores of each dtype, labels, the row statistics kept
// in registers, and the host side (checks, label info, the launch choice).
// Loss.cu describes the kernels.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CUDA_XENTCOMMON_CUH
#define WEFT_RUNTIME_KERNELS_CUDA_XENTCOMMON_CUH

#include "runtime/kernels/cpu/LossLabels.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/MathUtil.cuh"

#include <string>
#include <type_traits>

namespace weft::cuda::xent {
using namespace weft::cuda::math;

/// Threads of the one-block reductions.
constexpr int kReduceThreads = 1024;
/// Threads of a block-per-row kernel on 16-byte chunks of bf16/f16, at
/// most (72 registers each, so the 8 chunks of a thread fit unspilled).
constexpr int kPackedRowThreads = 896;
/// Chunks per thread of those kernels: rows of up to 8 * 896 * 8 = 57344
/// entries (GPT-2's 50264 need 786 threads).
constexpr int kPackedChunksMax = 8;
/// Entries per thread of the block-per-row kernels on single entries
/// (kRowThreads threads): rows of up to 16k entries.
constexpr int kSingleChunksMax = 32;
constexpr float kLog2e = 1.44269504088896341f;

template <class T> constexpr bool kIsF32 = std::is_same_v<T, float>;

//===-- Scores ------------------------------------------------------------===//

/// e^(x - m) of a class: expf for f32 scores (as the f32 kernels always
/// did, so their results stay bitwise the same), the MUFU exp2 of the
/// scaled difference for bf16/f16 (a few f32 ulps; their results round to
/// 8 or 11 bits).
template <class T> static __device__ inline float expShift(float x, float m) {
  if constexpr (kIsF32<T>)
    return expf(x - m);
  else
    return exp2f((x - m) * kLog2e);
}

/// -inf as a T, and as the bits of a 16-bit T.
template <class T>
constexpr uint16_t kNegInfBits = std::is_same_v<T, __half> ? 0xfc00 : 0xff80;
template <class T> static __device__ inline T negInfOf() {
  if constexpr (kIsF32<T>)
    return kNegInf;
  else if constexpr (std::is_same_v<T, __half>)
    return __ushort_as_half(kNegInfBits<T>);
  else
    return __ushort_as_bfloat16(kNegInfBits<T>);
}

/// The bf16/f16 value with bits h (the low 16 bits), widened.
template <class T> static __device__ inline float widen16(uint32_t h) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __uint_as_float(h << 16);
  else
    return __half2float(__ushort_as_half(static_cast<unsigned short>(h)));
}

/// v rounded to bf16/f16 (to nearest even), as bits.
template <class T> static __device__ inline uint32_t narrow16(float v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  else
    return __half_as_ushort(__float2half_rn(v));
}

/// E consecutive entries of a row as one thread reads them: one entry of
/// any dtype, or eight bf16/f16 entries in one 16-byte load (kept packed).
template <class T, int E> struct Chunk;

template <class T> struct Chunk<T, 1> {
  T raw;
  __device__ void load(const T *p) { raw = *p; }
  __device__ float at(int) const { return toFloat(raw); }
  /// Makes entries [from, E) -inf (padding).
  __device__ void padFrom(int from) {
    if (from <= 0)
      raw = negInfOf<T>();
  }
};

template <class T> struct Chunk<T, 8> {
  static_assert(sizeof(T) == 2, "16-byte chunks hold bf16 or f16");
  uint32_t w[4];
  __device__ void load(const T *p) {
    const uint4 u = *reinterpret_cast<const uint4 *>(p);
    w[0] = u.x;
    w[1] = u.y;
    w[2] = u.z;
    w[3] = u.w;
  }
  __device__ float at(int q) const {
    const uint32_t v = w[q >> 1];
    return widen16<T>(q & 1 ? v >> 16 : v & 0xffffu);
  }
  __device__ void padFrom(int from) {
#pragma unroll
    for (int q = 0; q < 8; ++q)
      if (q >= from)
        w[q >> 1] =
            q & 1 ? (w[q >> 1] & 0xffffu) | (uint32_t{kNegInfBits<T>} << 16)
                  : (w[q >> 1] & 0xffff0000u) | kNegInfBits<T>;
  }
};

/// E results to store as one chunk (set(q, v) for q = 0, 1, ... in order,
/// then store).
template <class T, int E> struct OutChunk;

template <class T> struct OutChunk<T, 1> {
  float v;
  __device__ void set(int, float x) { v = x; }
  __device__ void store(T *p) const { storeFloat(p, v); }
};

template <class T> struct OutChunk<T, 8> {
  uint32_t w[4];
  __device__ void set(int q, float x) {
    const uint32_t h = narrow16<T>(x);
    w[q >> 1] = q & 1 ? w[q >> 1] | (h << 16) : h;
  }
  __device__ void store(T *p) const {
    *reinterpret_cast<uint4 *>(p) = make_uint4(w[0], w[1], w[2], w[3]);
  }
};

//===-- Labels ------------------------------------------------------------===//

/// The label attributes and class weights (cpu::XentLabels, whose
/// weightOf() runs here too; `classes` counts the classes, not the
/// padding), the labels, the row length and the device error word, as a
/// kernel argument.
struct LabelInfo : cpu::XentLabels {
  const void *labels;
  bool i32Labels; // else i64
  int64_t c;      // entries along dim 1: classes, then padding
  int *errorWord;
  int errorCode;

  __device__ int64_t label(int64_t i) const {
    return i32Labels ? static_cast<const int32_t *>(labels)[i]
                     : static_cast<const int64_t *>(labels)[i];
  }
};

/// Class of position i, or -1 when it is ignored or (recording the error
/// when `report`) out of range.
static __device__ inline int64_t classOf(const LabelInfo &info, int64_t i,
                                         bool report) {
  const int64_t l = info.label(i);
  if (info.hasIgnore && l == info.ignoreIndex)
    return -1;
  if (l < 0 || l >= info.classes) {
    if (report)
      atomicCAS(info.errorWord, 0, info.errorCode);
    return -1;
  }
  return l;
}

//===-- Row statistics ----------------------------------------------------===//

/// A block's row of c entries held in registers: chunk j of thread t
/// covers entries [(j * blockDim.x + t) * E, + E) (with E = 1 the entries
/// the f32 block kernel always gave each thread, in the same order), and
/// padding entries read -inf. NV * E * blockDim.x >= c.
template <class T, int E, int NV> struct RowCache {
  Chunk<T, E> chunk[NV];

  /// Row indices are ints here (rows of at most 56k entries).
  static __device__ int start(int j) {
    return (j * static_cast<int>(blockDim.x) + static_cast<int>(threadIdx.x)) *
           E;
  }

  /// Reads row xr (all loads first), then pads entries [classes, c).
  __device__ void load(const T *xr, int c, int classes) {
#pragma unroll
    for (int j = 0; j < NV; ++j)
      if (start(j) < c)
        chunk[j].load(xr + start(j));
    if (classes < c) {
#pragma unroll
      for (int j = 0; j < NV; ++j) {
        const int i = start(j);
        if (i < c && i + E > classes)
          chunk[j].padFrom(i >= classes ? 0 : classes - i);
      }
    }
  }

  /// The row's largest score `m` (block-wide) and the block's sum of
  /// e^(x - m) over the row (padding adds e^-inf = 0).
  __device__ float expSum(int c, float *shared, float &m) const {
    m = kNegInf;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      if (start(j) >= c)
        continue;
#pragma unroll
      for (int q = 0; q < E; ++q) {
        const float x = chunk[j].at(q);
        m = x > m ? x : m;
      }
    }
    m = blockMax(m, shared);
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      if (start(j) >= c)
        continue;
#pragma unroll
      for (int q = 0; q < E; ++q)
        sum += expShift<T>(chunk[j].at(q), m);
    }
    return blockSum(sum, shared);
  }

  /// The score of class l when this thread holds it (else false).
  __device__ bool scoreOf(int l, int c, float &x) const {
    bool found = false;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int i = start(j);
      if (i >= c || l < i || l >= i + E)
        continue;
#pragma unroll
      for (int q = 0; q < E; ++q)
        if (i + q == l) {
          x = chunk[j].at(q);
          found = true;
        }
    }
    return found;
  }

  __device__ void storeLogProb(T *out, int c, int classes, float m,
                               float logSum) const {
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int i = start(j);
      if (i >= c)
        continue;
      OutChunk<T, E> o;
#pragma unroll
      for (int q = 0; q < E; ++q)
        o.set(q, i + q < classes ? (chunk[j].at(q) - m) - logSum : kNegInf);
      o.store(out + i);
    }
  }

  /// dscores of the row (class l, coefficient coef, f = coef / sum):
  /// e * f, minus coef at l (two roundings, as the CPU), 0 in the padding.
  __device__ void storeGrad(T *out, int c, int classes, float m, float f,
                            float coef, int l) const {
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int i = start(j);
      if (i >= c)
        continue;
      OutChunk<T, E> o;
      if (i + E <= classes && (l < i || l >= i + E)) {
#pragma unroll
        for (int q = 0; q < E; ++q)
          o.set(q, __fmul_rn(expShift<T>(chunk[j].at(q), m), f));
      } else {
#pragma unroll
        for (int q = 0; q < E; ++q) {
          float v = 0.0f;
          if (i + q < classes) {
            v = __fmul_rn(expShift<T>(chunk[j].at(q), m), f);
            if (i + q == l)
              v = __fsub_rn(v, coef);
          }
          o.set(q, v);
        }
      }
      o.store(out + i);
    }
  }

  /// Asks L2 for row xr, the block's next row, while this one is worked
  /// on (one prefetch per 128-byte line).
  static __device__ void prefetch(const T *xr, int c) {
    const char *p = reinterpret_cast<const char *>(xr);
    const int bytes = c * static_cast<int>(sizeof(T));
    for (int o = static_cast<int>(threadIdx.x) * 128; o < bytes;
         o += static_cast<int>(blockDim.x) * 128)
      asm volatile("prefetch.global.L2 [%0];" : : "l"(p + o));
  }

  static __device__ void storeZeros(T *out, int c) {
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int i = start(j);
      if (i >= c)
        continue;
      OutChunk<T, E> o;
#pragma unroll
      for (int q = 0; q < E; ++q)
        o.set(q, 0.0f);
      o.store(out + i);
    }
  }
};

/// Adds score x to a running max m and sum s of e^(x - m) (one pass over
/// a row: the sum is rescaled when the max grows).
static __device__ inline void addOnline(float &m, float &s, float x) {
  if (x > m) {
    s = (m == kNegInf ? 0.0f : s * exp2f((m - x) * kLog2e)) + 1.0f;
    m = x;
  } else if (x != kNegInf) {
    s += exp2f((x - m) * kLog2e); // NaN stays NaN, as in the two passes
  }
}

/// Combines (m, s) with (m2, s2). Symmetric in the two, so both lanes of a
/// butterfly get the same bits.
static __device__ inline void combineOnline(float &m, float &s, float m2,
                                            float s2) {
  const float mx = m2 > m ? m2 : m;
  const float a = m == kNegInf ? 0.0f : s * exp2f((m - mx) * kLog2e);
  const float b = m2 == kNegInf ? 0.0f : s2 * exp2f((m2 - mx) * kLog2e);
  m = mx;
  s = a + b;
}

/// A row too long for RowCache, read from memory: its largest score among
/// entries [0, classes) into m (block-wide), and the block's sum of
/// e^(x - m) over them. f32 as the f32 kernel always did (a pass for the
/// max, one for the sum); bf16/f16 in one pass (online max and sum).
/// `shared` holds 64 floats.
template <class T>
static __device__ inline float longExpSum(const T *xr, int64_t classes,
                                          float *shared, float &m) {
  if constexpr (kIsF32<T>) {
    m = kNegInf;
    for (int64_t i = threadIdx.x; i < classes; i += blockDim.x)
      m = xr[i] > m ? xr[i] : m;
    m = blockMax(m, shared);
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < classes; i += blockDim.x)
      sum += expf(xr[i] - m);
    return blockSum(sum, shared);
  } else {
    float s = 0.0f;
    m = kNegInf;
    for (int64_t i = threadIdx.x; i < classes; i += blockDim.x)
      addOnline(m, s, toFloat(xr[i]));
    for (int offset = 16; offset > 0; offset >>= 1)
      combineOnline(m, s, __shfl_xor_sync(0xffffffffu, m, offset),
                    __shfl_xor_sync(0xffffffffu, s, offset));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = blockDim.x >> 5;
    __syncthreads(); // an earlier row may still read `shared`
    if (lane == 0) {
      shared[warp] = m;
      shared[32 + warp] = s;
    }
    __syncthreads();
    m = lane < warps ? shared[lane] : kNegInf;
    s = lane < warps ? shared[32 + lane] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1)
      combineOnline(m, s, __shfl_xor_sync(0xffffffffu, m, offset),
                    __shfl_xor_sync(0xffffffffu, s, offset));
    return s;
  }
}

/// One thread's strided column x[base + k * stride], k in [0, n): its
/// largest value into `m`, and the sum of e^(x - m) over it in order.
template <class T>
static __device__ inline float columnExpSum(const T *x, int64_t base, int64_t n,
                                            int64_t stride, float &m) {
  m = kNegInf;
  for (int64_t k = 0; k < n; ++k) {
    const float v = toFloat(x[base + k * stride]);
    m = v > m ? v : m;
  }
  float sum = 0.0f;
  for (int64_t k = 0; k < n; ++k)
    sum += expShift<T>(toFloat(x[base + k * stride]), m);
  return sum;
}

//===-- Warp rows ---------------------------------------------------------===//

/// loadRow / storeRow (MathUtil.cuh) for any scores dtype: VEC == 4 reads
/// 4 entries at once (n % 4 == 0, row aligned to 4 entries). Slots past
/// the row get -inf.
template <int VPT, int VEC, class T>
static __device__ inline void loadScores(const T *row, int64_t n, int lane,
                                         float (&v)[VPT]) {
  if constexpr (kIsF32<T>) {
    loadRow<VPT, VEC>(row, n, lane, v, kNegInf);
  } else {
#pragma unroll
    for (int j = 0; j < VPT / VEC; ++j) {
      const int64_t base = slotIndex<VEC>(j, lane, 0);
      if constexpr (VEC == 4) {
        if (base < n) {
          const uint2 t = *reinterpret_cast<const uint2 *>(row + base);
          v[4 * j] = widen16<T>(t.x & 0xffffu);
          v[4 * j + 1] = widen16<T>(t.x >> 16);
          v[4 * j + 2] = widen16<T>(t.y & 0xffffu);
          v[4 * j + 3] = widen16<T>(t.y >> 16);
        } else {
          v[4 * j] = v[4 * j + 1] = v[4 * j + 2] = v[4 * j + 3] = kNegInf;
        }
      } else {
        v[j] = base < n ? toFloat(row[base]) : kNegInf;
      }
    }
  }
}

template <int VPT, int VEC, class T>
static __device__ inline void storeScores(T *row, int64_t n, int lane,
                                          const float (&v)[VPT]) {
  if constexpr (kIsF32<T>)
    storeRow<VPT, VEC>(row, n, lane, v);
  else
    storeRow16<VPT, VEC>(row, n, lane, v,
                         [](float x) { return narrow16<T>(x); });
}

/// Makes the slots of entries >= classes (padding) -inf.
template <int VPT, int VEC>
static __device__ inline void padSlots(float (&v)[VPT], int lane,
                                       int64_t classes) {
#pragma unroll
  for (int s = 0; s < VPT; ++s)
    if (!slotValid<VEC>(s, lane, classes))
      v[s] = kNegInf;
}

//===-- Host side ---------------------------------------------------------===//

/// The device error code (registerDeviceError) of a label out of range in
/// `kernel`.
inline int labelRangeError(const char *kernel) {
  const std::string message = std::string("kernel ") + kernel +
                              ": a label is out of range [0, classes) and "
                              "is not the ignore_index";
  return registerDeviceError(message.c_str());
}

/// Checks scores (tensor 0, f32, bf16 or f16), labels (1) and weights (2,
/// when given; `classes` values), and that `numel` (the loss or its
/// gradient) fits `reduction` (LossLabels.h). Returns the shape; `classes`
/// gets attribute `classesAttr` when the call has it, else C.
inline cpu::XentShape
checkXentShape(const cpu::KernelArgs &args, bool hasWeights, int64_t reduction,
               int64_t numel, int64_t classesAttr, int64_t &classes,
               const char *unreducedError, const char *reducedError) {
  cpu::expectXentScores(args, 0);
  const cpu::TensorArg &scores = args.tensor(0);
  classes = cpu::xentClasses(args, classesAttr,
                             scores.rank >= 2 ? scores.dims[1] : 0);
  const cpu::XentShape shape =
      cpu::checkXentOperands(args, scores, args.tensor(1),
                             hasWeights ? &args.tensor(2) : nullptr, classes);
  cpu::checkLossNumel(args, reduction, numel, shape.positions(), unreducedError,
                      reducedError);
  if (shape.c == 0 && shape.positions() > 0)
    args.invalid("scores have no classes");
  return shape;
}

/// The label attributes (1: has ignore_index, 2: ignore_index), the labels
/// (tensor 1, i64 or i32) and the weights (tensor 2, when given) of a call
/// on rows of c entries, the first `classes` of them classes.
inline LabelInfo labelInfo(const cpu::KernelArgs &args, int64_t c,
                           int64_t classes, bool hasWeights, int errorCode) {
  const cpu::TensorArg &labels = args.tensor(1);
  if (labels.dtype != WEFT_I64 && labels.dtype != WEFT_I32)
    args.unsupportedDType(labels.dtype);
  LabelInfo info;
  info.classes = classes;
  info.hasIgnore = args.attr(1) != 0;
  info.ignoreIndex = args.attr(2);
  info.weights = hasWeights ? args.tensor(2).as<float>() : nullptr;
  info.labels = labels.data;
  info.i32Labels = labels.dtype == WEFT_I32;
  info.c = c;
  info.errorWord = errorWord();
  info.errorCode = errorCode;
  return info;
}

/// Calls f(T *) with a null pointer of the scores' element type.
template <class F> void dispatchScores(int64_t dtype, F &&f) {
  if (dtype == WEFT_BF16)
    f(static_cast<__nv_bfloat16 *>(nullptr));
  else if (dtype == WEFT_F16)
    f(static_cast<__half *>(nullptr));
  else
    f(static_cast<float *>(nullptr));
}

/// Blocks of a launch of `kernel` (`threads` each) over `rows` rows that
/// all fit on the GPU at once: each loops over rows and has L2 fetch its
/// next row while it works on one (RowCache::prefetch).
template <class Kernel>
unsigned residentBlocks(Kernel *kernel, int threads, int64_t rows) {
  int perSm = 0;
  check(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, threads, 0),
      "softmax_xent occupancy");
  const int64_t blocks =
      static_cast<int64_t>(perSm > 0 ? perSm : 1) * multiprocessorCount();
  return static_cast<unsigned>(rows < blocks ? rows : blocks);
}

inline bool alignedTo(const void *p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

/// Launches an xent kernel over the positions of `shape` with scores x and
/// the row result `out` (log_prob or dscores; may be null):
///  - trailing dims: one thread per position, column(grid, threads);
///  - rows of up to kWarpRowMax entries one per warp,
///    warp(Int<VPT>, Int<VEC>, grid, threads), 4 entries per access where
///    the rows allow;
///  - longer rows one per block, in registers,
///    cached(Int<E>, Int<NV>, threads) (a persistent launch: see
///    residentBlocks): bf16/f16 rows with C % 8 == 0 and 16-byte aligned
///    buffers in 16-byte chunks (E = 8) on as many threads as need be,
///    others entry by entry (E = 1) on kRowThreads;
///  - rows longer still one per block from memory, longRow(grid, threads).
template <class T, class Column, class Warp, class Cached, class Long>
void launchXent(const cpu::XentShape &shape, const T *x, const T *out,
                Column &&column, Warp &&warp, Cached &&cached, Long &&longRow) {
  const int64_t positions = shape.positions();
  const int64_t c = shape.c;
  auto allAligned = [&](size_t bytes) {
    return alignedTo(x, bytes) && (!out || alignedTo(out, bytes));
  };
  if (shape.d != 1) {
    column(gridFor(positions, kBlock), kBlock);
    return;
  }
  if (c <= kWarpRowMax) {
    const bool vec4 = c % 4 == 0 && allAligned(4 * sizeof(T));
    dispatchWarpRow(c, vec4, [&](auto vpt, auto vec) {
      warp(vpt, vec, gridFor(positions, kWarpRows), 32 * kWarpRows);
    });
    return;
  }
  if constexpr (sizeof(T) == 2) {
    if (c % 8 == 0 && allAligned(16) &&
        c <= int64_t{8} * kPackedChunksMax * kPackedRowThreads) {
      const int64_t chunks = c / 8;
      auto go = [&](auto nv) {
        const int64_t threads = ceilDiv(ceilDiv(chunks, nv), 32) * 32;
        cached(Int<8>(), nv, static_cast<int>(threads));
      };
      if (chunks <= 2 * kPackedRowThreads)
        go(Int<2>());
      else
        go(Int<kPackedChunksMax>());
      return;
    }
  }
  if (c <= 4 * kRowThreads)
    cached(Int<1>(), Int<4>(), kRowThreads);
  else if (c <= 16 * kRowThreads)
    cached(Int<1>(), Int<16>(), kRowThreads);
  else if (c <= kSingleChunksMax * kRowThreads)
    cached(Int<1>(), Int<kSingleChunksMax>(), kRowThreads);
  else
    longRow(gridFor(positions, 1), kRowThreads);
}

} // namespace weft::cuda::xent

#endif // WEFT_RUNTIME_KERNELS_CUDA_XENTCOMMON_CUH
