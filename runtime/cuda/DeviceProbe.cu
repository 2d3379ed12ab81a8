// Compiles the CUDA side of the runtime in CI: a device kernel, the CUDA
// runtime API and NCCL's version query. The real backend arrives with the
// CUDA issue.
#include <cstdio>
#include <cuda_runtime.h>
#include <nccl.h>

namespace {
__global__ void fillKernel(float *out, float value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = value;
}
} // namespace

extern "C" int weft_cuda_probe(char *msg, int msgLen) {
  int devices = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess) {
    snprintf(msg, msgLen, "CUDA unavailable: %s", cudaGetErrorString(err));
    return 0;
  }
  int ncclVersion = 0;
  ncclGetVersion(&ncclVersion);
  float *buf = nullptr;
  if (devices > 0 && cudaMalloc(&buf, 256 * sizeof(float)) == cudaSuccess) {
    fillKernel<<<1, 256>>>(buf, 1.0f, 256);
    cudaDeviceSynchronize();
    cudaFree(buf);
  }
  snprintf(msg, msgLen, "%d CUDA device(s), NCCL %d", devices, ncclVersion);
  return devices;
}
