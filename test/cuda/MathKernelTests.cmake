weft_add_cuda_test(weft_cuda_math_kernels_test MathKernelsTest.cpp
  MathKernelsRepeatTest.cpp)
# attention and attention_grad (SIMT and tensor-core paths) against their
# CPU twins, bitwise repetition and GPT-2-sized throughput lines.
weft_add_cuda_test(weft_cuda_attention_kernel_test AttentionKernelTest.cpp)
