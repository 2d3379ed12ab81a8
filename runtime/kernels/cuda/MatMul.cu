//===- MatMul.cu - matmul kernel and the row-major cuBLASLt GEMM ----------===//
//
// c[..., M, N] = op(a)[..., M, K] x op(b)[..., K, N] with numpy-broadcast
// batch dims, as runtime/kernels/cpu/MatMul.cpp. Dtypes: any mix of f32 and
// bf16 (the CPU kernel's; bf16 is exact in f32 and every product
// accumulates in fp32, rounded once to a bf16 result), plus f16 a and b with
// an f16 or f32 result. When a and b differ (f32 x bf16) the bf16 one is
// widened into scratch; an f32 product with a bf16 result goes through an
// f32 temporary, rounded after.
//
// Batches: the batch dims of c that are not 1 are merged where both
// operands step through them contiguously (or not at all), so a shared or
// matching operand gives one strided-batched cuBLASLt call (stride 0 for a
// broadcast operand); a partly broadcast batch ([B,1] x [1,H]) loops over
// the outer merged dims around a strided-batched call over the innermost.
// A b shared by the whole batch with an untransposed a folds the batch into
// M: one tall GEMM, as on the CPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/KernelArgs.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/MathUtil.cuh"

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::math;

namespace {

//===-- Element conversion ------------------------------------------------===//

template <class S, class D>
__global__ void convertKernel(const S *__restrict src, D *__restrict dst,
                              int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    storeFloat(dst + i, toFloat(src[i]));
}

template <class S>
void convertFrom(const S *src, void *dst, int64_t dstDType, int64_t n) {
  const int blocks = blocksFor(n);
  cudaStream_t stream = computeStream();
  switch (dstDType) {
  case WEFT_F32:
    convertKernel<<<blocks, kBlock, 0, stream>>>(src, static_cast<float *>(dst),
                                                 n);
    break;
  case WEFT_BF16:
    convertKernel<<<blocks, kBlock, 0, stream>>>(
        src, static_cast<__nv_bfloat16 *>(dst), n);
    break;
  case WEFT_F16:
    convertKernel<<<blocks, kBlock, 0, stream>>>(src,
                                                 static_cast<__half *>(dst), n);
    break;
  default:
    fatal(kExitFailure, "convertElements: unsupported dtype %s",
          weftDTypeName(dstDType));
  }
}

//===-- Fallback GEMM -----------------------------------------------------===//

constexpr int kTile = 16;

/// C_b = op(A_b) op(B_b) + beta * C_b, one 16x16 tile of C per block, K in
/// steps of 16 through shared memory, fp32 accumulation. Slow but accepts
/// any layout; it serves the problems cuBLASLt declines.
template <class T, class TC>
__global__ void
fallbackGemmKernel(int64_t m, int64_t n, int64_t k, int64_t batch, const T *a,
                   bool transA, int64_t lda, int64_t strideA, const T *b,
                   bool transB, int64_t ldb, int64_t strideB, TC *c,
                   int64_t ldc, int64_t strideC, float beta) {
  __shared__ float as[kTile][kTile + 1];
  __shared__ float bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t tilesM = ceilDiv(m, kTile);
  for (int64_t bi = blockIdx.z; bi < batch; bi += gridDim.z)
    for (int64_t tm = blockIdx.y; tm < tilesM; tm += gridDim.y) {
      const T *ab = a + bi * strideA;
      const T *bb = b + bi * strideB;
      const int64_t row = tm * kTile + ty;
      const int64_t col = blockIdx.x * int64_t(kTile) + tx;
      float acc = 0.0f;
      for (int64_t k0 = 0; k0 < k; k0 += kTile) {
        // as[ty][tx] = op(A)[tm*16 + ty, k0 + tx]
        const int64_t ka = k0 + tx;
        float va = 0.0f;
        if (row < m && ka < k)
          va = toFloat(transA ? ab[ka * lda + row] : ab[row * lda + ka]);
        as[ty][tx] = va;
        // bs[ty][tx] = op(B)[k0 + ty, col]
        const int64_t kb = k0 + ty;
        float vb = 0.0f;
        if (col < n && kb < k)
          vb = toFloat(transB ? bb[col * ldb + kb] : bb[kb * ldb + col]);
        bs[ty][tx] = vb;
        __syncthreads();
        for (int j = 0; j < kTile; ++j)
          acc = fmaf(as[ty][j], bs[j][tx], acc);
        __syncthreads();
      }
      if (row < m && col < n) {
        TC *out = c + bi * strideC + row * ldc + col;
        float v = acc;
        if (beta != 0.0f)
          v += beta * toFloat(*out);
        storeFloat(out, v);
      }
    }
}

template <class T, class TC>
void launchFallback(int64_t m, int64_t n, int64_t k, int64_t batch,
                    const GemmOperand &a, const GemmOperand &b,
                    const GemmResult &c, float beta) {
  dim3 block(kTile, kTile);
  const int64_t tilesN = ceilDiv(n, kTile), tilesM = ceilDiv(m, kTile);
  if (tilesN > 0x7fffffff)
    fatal(kExitFailure, "gemm: n = %lld is too large",
          static_cast<long long>(n));
  dim3 grid(static_cast<unsigned>(tilesN),
            static_cast<unsigned>(tilesM < 65535 ? tilesM : 65535),
            static_cast<unsigned>(batch < 65535 ? batch : 65535));
  fallbackGemmKernel<T, TC><<<grid, block, 0, computeStream()>>>(
      m, n, k, batch, static_cast<const T *>(a.data), a.trans, a.ld, a.stride,
      static_cast<const T *>(b.data), b.trans, b.ld, b.stride,
      static_cast<TC *>(c.data), c.ld, c.stride, beta);
}

template <class T>
void fallbackGemm(const char *kernel, int64_t m, int64_t n, int64_t k,
                  int64_t batch, const GemmOperand &a, const GemmOperand &b,
                  const GemmResult &c, float beta) {
  if (c.type == CUDA_R_32F)
    launchFallback<T, float>(m, n, k, batch, a, b, c, beta);
  else if (c.type == a.type)
    launchFallback<T, T>(m, n, k, batch, a, b, c, beta);
  else
    fatal(kExitFailure, "kernel %s: unsupported GEMM output type", kernel);
  checkLaunch(kernel);
}

//===-- cuBLASLt plans ----------------------------------------------------===//

/// Descriptors and chosen algorithm of one problem.
struct Plan {
  bool fallback = false; // cuBLASLt found no algorithm
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo;
};

using PlanKey = std::array<int64_t, 20>;

std::mutex plansMutex;
std::map<PlanKey, Plan> &plans() {
  static std::map<PlanKey, Plan> cache;
  return cache;
}

bool forceFallback = false;

bool useTf32() {
  static const bool tf32 = [] {
    const char *v = std::getenv("WEFT_CUDA_TF32");
    return v && std::strcmp(v, "1") == 0;
  }();
  return tf32;
}

/// Largest power of two (up to 256) dividing the address.
int64_t alignmentOf(const void *p) {
  uintptr_t u = reinterpret_cast<uintptr_t>(p);
  int64_t align = 256;
  while (align > 1 && (u & static_cast<uintptr_t>(align - 1)) != 0)
    align >>= 1;
  return align;
}

cublasLtMatrixLayout_t makeLayout(cudaDataType_t type, int64_t rows,
                                  int64_t cols, int64_t ld, int64_t batch,
                                  int64_t stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  checkCublas(cublasLtMatrixLayoutCreate(&layout, type,
                                         static_cast<uint64_t>(rows),
                                         static_cast<uint64_t>(cols), ld),
              "creating a cuBLASLt matrix layout");
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    checkCublas(
        cublasLtMatrixLayoutSetAttribute(
            layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
        "setting a cuBLASLt batch count");
    checkCublas(cublasLtMatrixLayoutSetAttribute(
                    layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                    &stride, sizeof stride),
                "setting a cuBLASLt batch stride");
  }
  return layout;
}

void setAlignment(cublasLtMatmulPreference_t pref,
                  cublasLtMatmulPreferenceAttributes_t attr, int64_t align) {
  uint32_t bytes = static_cast<uint32_t>(align);
  checkCublas(
      cublasLtMatmulPreferenceSetAttribute(pref, attr, &bytes, sizeof bytes),
      "setting a cuBLASLt alignment preference");
}

/// Builds the plan of one problem. cuBLASLt is column-major: it computes
/// D^T[n, m] = op(B)^T op(A)^T, so its "A" is our B and its "B" our A.
Plan makePlan(int64_t m, int64_t n, int64_t k, int64_t batch,
              const GemmOperand &a, const GemmOperand &b, const GemmResult &c,
              cublasComputeType_t compute) {
  Plan p;
  checkCublas(cublasLtMatmulDescCreate(&p.op, compute, CUDA_R_32F),
              "creating a cuBLASLt matmul descriptor");
  cublasOperation_t opA = b.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = a.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  checkCublas(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA,
                                             &opA, sizeof opA),
              "setting a cuBLASLt transpose");
  checkCublas(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB,
                                             &opB, sizeof opB),
              "setting a cuBLASLt transpose");
  // Row-major B [k, n] is column-major [n, k] (transposed: [k, n]); likewise
  // A [m, k] is column-major [k, m], and C [m, n] column-major [n, m].
  p.la = makeLayout(b.type, b.trans ? k : n, b.trans ? n : k, b.ld, batch,
                    b.stride);
  p.lb = makeLayout(a.type, a.trans ? m : k, a.trans ? k : m, a.ld, batch,
                    a.stride);
  p.lc = makeLayout(c.type, n, m, c.ld, batch, c.stride);

  cublasLtMatmulPreference_t pref = nullptr;
  checkCublas(cublasLtMatmulPreferenceCreate(&pref),
              "creating a cuBLASLt preference");
  size_t wsBytes = 0;
  gemmWorkspace(&wsBytes);
  uint64_t maxWs = wsBytes;
  checkCublas(
      cublasLtMatmulPreferenceSetAttribute(
          pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxWs, sizeof maxWs),
      "setting the cuBLASLt workspace size");
  // The heuristic assumes 256-byte aligned pointers unless told otherwise;
  // batch offsets and scratch carve-ups may be less aligned.
  setAlignment(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
               alignmentOf(b.data));
  setAlignment(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
               alignmentOf(a.data));
  setAlignment(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
               alignmentOf(c.data));
  setAlignment(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
               alignmentOf(c.data));
  cublasLtMatmulHeuristicResult_t result;
  std::memset(&result, 0, sizeof result);
  int found = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      cublasLt(), p.op, p.la, p.lb, p.lc, p.lc, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0 ||
      result.state != CUBLAS_STATUS_SUCCESS) {
    cublasLtMatrixLayoutDestroy(p.la);
    cublasLtMatrixLayoutDestroy(p.lb);
    cublasLtMatrixLayoutDestroy(p.lc);
    cublasLtMatmulDescDestroy(p.op);
    p = Plan();
    p.fallback = true;
    return p;
  }
  p.algo = result.algo;
  return p;
}

int64_t elementBytes(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }

cudaDataType_t cudaTypeOf(int64_t dtype) {
  switch (dtype) {
  case WEFT_BF16:
    return CUDA_R_16BF;
  case WEFT_F16:
    return CUDA_R_16F;
  default:
    return CUDA_R_32F;
  }
}

} // namespace

namespace weft {
namespace cuda {
namespace math {

void gemmForceFallbackForTesting(bool force) { forceFallback = force; }

void convertElements(const void *src, int64_t srcDType, void *dst,
                     int64_t dstDType, int64_t n) {
  if (n <= 0)
    return;
  switch (srcDType) {
  case WEFT_F32:
    convertFrom(static_cast<const float *>(src), dst, dstDType, n);
    break;
  case WEFT_BF16:
    convertFrom(static_cast<const __nv_bfloat16 *>(src), dst, dstDType, n);
    break;
  case WEFT_F16:
    convertFrom(static_cast<const __half *>(src), dst, dstDType, n);
    break;
  default:
    fatal(kExitFailure, "convertElements: unsupported dtype %s",
          weftDTypeName(srcDType));
  }
  checkLaunch("convert");
}

void gemm(const char *kernel, int64_t m, int64_t n, int64_t k, int64_t batch,
          const GemmOperand &a, const GemmOperand &b, const GemmResult &c,
          float beta) {
  if (m <= 0 || n <= 0 || batch <= 0)
    return;
  if (a.type != b.type || (c.type != a.type && c.type != CUDA_R_32F) ||
      (a.type != CUDA_R_32F && a.type != CUDA_R_16BF && a.type != CUDA_R_16F))
    fatal(kExitFailure, "kernel %s: unsupported GEMM dtypes", kernel);
  if (batch > 0x7fffffff)
    fatal(kExitFailure, "kernel %s: GEMM batch too large", kernel);
  const cublasComputeType_t compute = a.type == CUDA_R_32F && useTf32()
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  const Plan *plan = nullptr;
  if (k > 0 && !forceFallback) {
    PlanKey key = {a.type,
                   b.type,
                   c.type,
                   static_cast<int64_t>(compute),
                   a.trans,
                   b.trans,
                   m,
                   n,
                   k,
                   batch,
                   a.ld,
                   b.ld,
                   c.ld,
                   batch > 1 ? a.stride : 0,
                   batch > 1 ? b.stride : 0,
                   batch > 1 ? c.stride : 0,
                   alignmentOf(a.data),
                   alignmentOf(b.data),
                   alignmentOf(c.data),
                   0};
    std::lock_guard<std::mutex> lock(plansMutex);
    auto it = plans().find(key);
    if (it == plans().end())
      it = plans()
               .emplace(key, makePlan(m, n, k, batch, a, b, c, compute))
               .first;
    plan = &it->second;
  }
  if (!plan || plan->fallback) {
    if (a.type == CUDA_R_32F)
      fallbackGemm<float>(kernel, m, n, k, batch, a, b, c, beta);
    else if (a.type == CUDA_R_16BF)
      fallbackGemm<__nv_bfloat16>(kernel, m, n, k, batch, a, b, c, beta);
    else
      fallbackGemm<__half>(kernel, m, n, k, batch, a, b, c, beta);
    return;
  }
  size_t wsBytes = 0;
  void *ws = gemmWorkspace(&wsBytes);
  const float alpha = 1.0f;
  checkCublas(cublasLtMatmul(cublasLt(), plan->op, &alpha, b.data, plan->la,
                             a.data, plan->lb, &beta, c.data, plan->lc, c.data,
                             plan->lc, &plan->algo, ws, wsBytes,
                             computeStream()),
              kernel);
}

} // namespace math
} // namespace cuda
} // namespace weft

//===-- matmul ------------------------------------------------------------===//

namespace {

/// One merged batch dim of c: its extent and each operand's step along it,
/// in matrices (0 where the operand is broadcast).
struct BatchDim {
  int64_t extent, strideA, strideB;
};

/// Batch strides of operand `x` (rank >= 2) against c's batch dims, in
/// matrices; fails unless x's batch broadcasts to c's.
void batchStrides(const cpu::KernelArgs &args, const cpu::TensorArg &x,
                  const cpu::TensorArg &c, int64_t *strides) {
  const int cr = c.rank - 2, xr = x.rank - 2;
  if (xr > cr)
    args.invalid("operand rank exceeds the result's");
  int64_t run = 1;
  for (int d = cr - 1; d >= 0; --d) {
    const int xd = d - (cr - xr);
    const int64_t extent = xd >= 0 ? x.dims[xd] : 1;
    if (extent != c.dims[d] && extent != 1)
      args.invalid("operand shape is not broadcastable to the result");
    strides[d] = extent == c.dims[d] && extent != 1 ? run : 0;
    run *= extent;
  }
}

} // namespace

extern "C" void weft_cuda_k_matmul(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("matmul", bufs, desc);
  args.expectTensors(3, 3);
  args.expectAttrs(2);
  const cpu::TensorArg &a = args.tensor(0);
  const cpu::TensorArg &b = args.tensor(1);
  const cpu::TensorArg &c = args.tensor(2);
  const int64_t ta = a.dtype, tb = b.dtype, tc = c.dtype;
  auto f32OrBf16 = [](int64_t t) { return t == WEFT_F32 || t == WEFT_BF16; };
  const bool half =
      ta == WEFT_F16 && tb == WEFT_F16 && (tc == WEFT_F16 || tc == WEFT_F32);
  if (!half)
    for (int i = 0; i < 3; ++i)
      if (!f32OrBf16(args.tensor(i).dtype))
        args.unsupportedDType(args.tensor(i).dtype);
  if (a.rank < 2 || b.rank < 2 || c.rank < 2)
    args.invalid("operands must have rank >= 2");
  const bool transA = args.attr(0) != 0, transB = args.attr(1) != 0;
  const int64_t m = transA ? a.dim(-1) : a.dim(-2);
  const int64_t k = transA ? a.dim(-2) : a.dim(-1);
  const int64_t n = transB ? b.dim(-2) : b.dim(-1);
  const int64_t kb = transB ? b.dim(-1) : b.dim(-2);
  if (kb != k || c.dim(-2) != m || c.dim(-1) != n)
    args.invalid("inner or result dims do not match");
  int64_t stridesA[cpu::kMaxRank], stridesB[cpu::kMaxRank];
  batchStrides(args, a, c, stridesA);
  batchStrides(args, b, c, stridesB);
  if (c.numel == 0)
    return;
  if (k == 0) {
    zero(c.data, static_cast<size_t>(c.bytes()));
    return;
  }

  // Merge c's batch dims (dropping 1s) where both operands are contiguous
  // across the pair or broadcast over both.
  BatchDim dims[cpu::kMaxRank];
  int nd = 0;
  for (int d = 0; d < c.rank - 2; ++d) {
    const int64_t e = c.dims[d];
    if (e == 1)
      continue;
    if (nd > 0 && dims[nd - 1].strideA == stridesA[d] * e &&
        dims[nd - 1].strideB == stridesB[d] * e) {
      dims[nd - 1].extent *= e;
      dims[nd - 1].strideA = stridesA[d];
      dims[nd - 1].strideB = stridesB[d];
    } else {
      dims[nd++] = BatchDim{e, stridesA[d], stridesB[d]};
    }
  }

  // Operand dtypes of the product: mixed f32 x bf16 widens the bf16 one.
  const int64_t abType = ta == tb ? ta : WEFT_F32;
  const bool widenA = ta != abType, widenB = tb != abType;
  const bool tempC = abType == WEFT_F32 && tc != WEFT_F32;
  ScratchPlan sp;
  const int sA = sp.add(widenA ? a.numel * 4 : 0);
  const int sB = sp.add(widenB ? b.numel * 4 : 0);
  const int sC = sp.add(tempC ? c.numel * 4 : 0);
  sp.allocate();
  const void *pa = a.data, *pb = b.data;
  if (widenA) {
    convertElements(a.data, ta, sp.at<float>(sA), WEFT_F32, a.numel);
    pa = sp.at<float>(sA);
  }
  if (widenB) {
    convertElements(b.data, tb, sp.at<float>(sB), WEFT_F32, b.numel);
    pb = sp.at<float>(sB);
  }
  void *pc = tempC ? static_cast<void *>(sp.at<float>(sC)) : c.data;
  const cudaDataType_t abCuda = cudaTypeOf(abType);
  const cudaDataType_t cCuda = tempC ? CUDA_R_32F : cudaTypeOf(tc);
  const int64_t abBytes = elementBytes(abCuda), cBytes = elementBytes(cCuda);
  const int64_t matA = m * k, matB = k * n, matC = m * n;

  GemmOperand opA, opB;
  opA.type = opB.type = abCuda;
  opA.trans = transA;
  opB.trans = transB;
  opA.ld = transA ? m : k;
  opB.ld = transB ? k : n;
  GemmResult res;
  res.type = cCuda;
  res.ld = n;
  res.stride = matC;

  if (nd == 0 ||
      (nd == 1 && dims[0].strideB == 0 && dims[0].strideA == 1 && !transA)) {
    // One matrix, or b shared and a's rows contiguous: one tall GEMM.
    const int64_t rows = nd == 0 ? m : m * dims[0].extent;
    opA.data = pa;
    opB.data = pb;
    res.data = pc;
    gemm("matmul", rows, n, k, 1, opA, opB, res, 0.0f);
  } else {
    // Strided batch over the innermost merged dim, a loop over the others.
    const BatchDim inner = dims[nd - 1];
    int64_t outer = 1;
    for (int i = 0; i < nd - 1; ++i)
      outer *= dims[i].extent;
    opA.stride = inner.strideA * matA;
    opB.stride = inner.strideB * matB;
    for (int64_t o = 0; o < outer; ++o) {
      int64_t offA = 0, offB = 0, rem = o;
      for (int i = nd - 2; i >= 0; --i) {
        const int64_t idx = rem % dims[i].extent;
        rem /= dims[i].extent;
        offA += idx * dims[i].strideA;
        offB += idx * dims[i].strideB;
      }
      opA.data = static_cast<const char *>(pa) + offA * matA * abBytes;
      opB.data = static_cast<const char *>(pb) + offB * matB * abBytes;
      res.data = static_cast<char *>(pc) + o * inner.extent * matC * cBytes;
      gemm("matmul", m, n, k, inner.extent, opA, opB, res, 0.0f);
    }
  }
  if (tempC)
    convertElements(pc, WEFT_F32, c.data, tc, c.numel);
}
