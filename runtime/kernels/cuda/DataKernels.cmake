# Elementwise, data-movement and reduction kernels (see CMakeLists.txt).
list(APPEND WEFT_CUDA_KERNEL_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/Elementwise.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/Compare.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/Cast.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/Fused.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/DataMovement.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/Gather.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/TopK.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/Dropout.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/Random.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/Reduce.cu)
