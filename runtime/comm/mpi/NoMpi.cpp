//===- NoMpi.cpp - The MPI backend of a build without MPI -----------------===//
//
// Built instead of MpiCommunicator.cpp when CMake finds no MPI (the GPU
// machine): single-rank bundles run as usual, multi-rank ones are refused.
//
//===----------------------------------------------------------------------===//
#include "../CommInternal.h"

namespace weft {
namespace comm {

std::unique_ptr<Communicator> openMpiWorld(int64_t worldSize,
                                           std::string &error) {
  error = "this runtime was built without MPI and cannot run a bundle for " +
          std::to_string(worldSize) +
          " ranks (install an MPI such as Open MPI and rebuild weft)";
  return nullptr;
}

} // namespace comm
} // namespace weft
