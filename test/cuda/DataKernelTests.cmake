# The GPU data kernels (runtime/kernels/cuda/DataKernels.cmake) against their
# CPU twins.
weft_add_cuda_test(weft_cuda_data_kernels_test DataKernelsTest.cpp)
# The fused elementwise kernel against its CPU twin and the unfused GPU
# kernels.
weft_add_cuda_test(weft_cuda_fused_kernel_test FusedKernelTest.cpp)
