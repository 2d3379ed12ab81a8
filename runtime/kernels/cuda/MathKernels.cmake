# Attention, GEMM, normalization, softmax, loss, optimizer, convolution and
# pooling kernels (see CMakeLists.txt). MathUtil.cuh holds their shared device
# helpers; Gemm.h the row-major cuBLASLt entry point (MatMul.cu).
list(APPEND WEFT_CUDA_KERNEL_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/Attention.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/AttentionTc.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/Conv.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/Loss.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/LossGrad.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/MatMul.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/Optimizers.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/Pooling.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/RowOps.cu)
