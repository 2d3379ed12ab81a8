//===- KernelDesc.h - The desc of a runtime kernel call, for GPU tests ----===//
//
// Header-only, so the NCCL tests (which do not link KernelCheck's CPU
// twins) build descs the same way as the kernel comparisons.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TEST_CUDA_KERNELDESC_H
#define WEFT_TEST_CUDA_KERNELDESC_H

#include <cstdint>
#include <utility>
#include <vector>

namespace weft {
namespace test {

/// The desc (KernelABI.h) of a call on `tensors` (dtype and dims each, in
/// buffer order) with the attributes `attrs`.
inline std::vector<int64_t>
kernelDesc(const std::vector<std::pair<int64_t, std::vector<int64_t>>> &tensors,
           const std::vector<int64_t> &attrs) {
  std::vector<int64_t> desc = {static_cast<int64_t>(tensors.size())};
  for (const auto &t : tensors) {
    desc.push_back(t.first);
    desc.push_back(static_cast<int64_t>(t.second.size()));
    desc.insert(desc.end(), t.second.begin(), t.second.end());
  }
  desc.push_back(static_cast<int64_t>(attrs.size()));
  desc.insert(desc.end(), attrs.begin(), attrs.end());
  return desc;
}

} // namespace test
} // namespace weft

#endif // WEFT_TEST_CUDA_KERNELDESC_H
