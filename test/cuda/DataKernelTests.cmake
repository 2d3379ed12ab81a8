# The GPU data kernels (runtime/kernels/cuda/DataKernels.cmake) against their
# CPU twins.
weft_add_cuda_test(weft_cuda_data_kernels_test DataKernelsTest.cpp)
