//===- CommInternal.h - What the collective kernels share with Comm.cpp ---===//
#ifndef WEFT_RUNTIME_COMM_COMMINTERNAL_H
#define WEFT_RUNTIME_COMM_COMMINTERNAL_H

#include "weft/runtime/Comm.h"

#if WEFT_HAVE_MPI
#include <mpi.h>
#endif

namespace weft {
namespace comm {

/// "all_reduce over mesh axes [0] (ranks 0,1)", for messages.
std::string describeGroup(const char *op, const int64_t *axes, int64_t count);

#if WEFT_HAVE_MPI
/// The communicator of the group over `axes` (split once, then cached).
MPI_Comm group(const int64_t *axes, int64_t count);
/// Waits for `request` under the watchdog (WEFT_COMM_TIMEOUT).
void wait(MPI_Request &request, const char *op, const int64_t *axes,
          int64_t count);
#endif

} // namespace comm
} // namespace weft

#endif // WEFT_RUNTIME_COMM_COMMINTERNAL_H
