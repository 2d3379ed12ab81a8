# The GPU data kernels (runtime/kernels/cuda/DataKernels.cmake) against their
# CPU twins.
weft_add_cuda_test(weft_cuda_data_kernels_test DataKernelsTest.cpp
                   DataKernelsDrawTest.cpp)
# The fused elementwise kernel against its CPU twin and the unfused GPU
# kernels.
weft_add_cuda_test(weft_cuda_fused_kernel_test FusedKernelTest.cpp)
# The same cases on the interpreter instead of the kernels NVRTC compiles.
add_test(NAME cuda.weft_cuda_fused_kernel_test.interpreted
  COMMAND weft_cuda_fused_kernel_test)
set_tests_properties(cuda.weft_cuda_fused_kernel_test.interpreted PROPERTIES
  LABELS cuda SKIP_RETURN_CODE 77 ENVIRONMENT WEFT_CUDA_FUSED=interpret)
