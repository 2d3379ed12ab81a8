# The NCCL collectives (runtime/comm/nccl) on device buffers: every kernel
# on one rank (device copies, and with WEFT_NCCL_FORCE=1 through a one-rank
# NCCL communicator), and on two ranks started by nccl-two-ranks.sh (the
# collectives, crossing pipeline transfers, and the watchdog's errors for
# transfers out of order and a dead peer). Without a GPU, or with two ranks
# on one GPU where NCCL cannot share it, they exit 77: skipped. Label: cuda.
if(TARGET weft_rt_comm_kernels_nccl)
  add_executable(NcclCommTest NcclCommTest.cpp NcclTwoRankTest.cpp)
  target_link_libraries(NcclCommTest PRIVATE
    weft_rt_comm_kernels_nccl weft_rt_comm weft_rt_cuda weft_rt_kernel_args
    weft_rt_support weft::nccl CUDA::cudart CUDA::cublasLt Threads::Threads)
  if(WEFT_ENABLE_MPI)
    target_link_libraries(NcclCommTest PRIVATE MPI::MPI_C)
  endif()
  target_compile_options(NcclCommTest PRIVATE -fno-exceptions)

  add_test(NAME cuda.NcclCommTest COMMAND NcclCommTest)
  add_test(NAME cuda.NcclCommTest.OneRankNccl COMMAND NcclCommTest)
  set_tests_properties(cuda.NcclCommTest.OneRankNccl PROPERTIES
    ENVIRONMENT "WEFT_NCCL_FORCE=1")
  add_test(NAME cuda.NcclTwoRanks
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/nccl-two-ranks.sh
      $<TARGET_FILE:NcclCommTest>)
  set_tests_properties(cuda.NcclCommTest cuda.NcclCommTest.OneRankNccl
    PROPERTIES LABELS cuda SKIP_RETURN_CODE 77 TIMEOUT 300)
  set_tests_properties(cuda.NcclTwoRanks PROPERTIES
    LABELS cuda SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
