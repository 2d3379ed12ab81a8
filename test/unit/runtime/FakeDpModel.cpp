//===- FakeDpModel.cpp - A hand-written 2x2-mesh inference model ----------===//
//
// What weftc emits for an inference bundle on a 2x2 mesh (dp, tp), written
// by hand (ModelABI.h): the input x f32[2,3] is this rank's block of the
// whole x f32[4,3] split over dp ("shard" on mesh axis 0; tp ranks hold the
// same block). Outputs:
//   "doubled"  f32[2,3]  2 * x, split like x (the executor puts the whole
//                        output together)
//   "total"    f32[3]    the column sums of the whole x (weft_k_all_reduce
//                        over dp), replicated
//   "whole"    f32[4,3]  the whole x (weft_k_all_gather over dp along dim
//                        0), replicated
// and its parameter "scale" f32[] multiplies: 2 in the test's file. The dp
// groups are ranks {0, 2} and {1, 3}.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/KernelABI.h"
#include "weft/runtime/ModelABI.h"

#include <cstdint>

extern "C" const char weft_model_signature[] =
    R"({"format_version":1,"arena_bytes":64,"arena_alignment":64,)"
    R"("world_size":4,"mesh":{"axes":["dp","tp"],"shape":[2,2]},)"
    R"("params":[{"name":"scale","dtype":"f32","shape":[]}],)"
    R"("inputs":[{"name":"x","dtype":"f32","shape":[2,3],)"
    R"("shard":{"dim":0,"mesh_axes":[0]}}],)"
    R"("outputs":[{"name":"doubled","dtype":"f32","shape":[2,3],)"
    R"("shard":{"dim":0,"mesh_axes":[0]}},)"
    R"({"name":"total","dtype":"f32","shape":[3]},)"
    R"({"name":"whole","dtype":"f32","shape":[4,3]}]})";

extern "C" void weft_model_run(void *arena, void *const *params,
                               void *const *inputs, void *const *outputs) {
  const float scale = *static_cast<const float *>(params[0]);
  const float *x = static_cast<const float *>(inputs[0]);
  float *doubled = static_cast<float *>(outputs[0]);
  float *total = static_cast<float *>(outputs[1]);
  float *whole = static_cast<float *>(outputs[2]);
  float *colSums = static_cast<float *>(arena);
  for (int i = 0; i < 6; ++i)
    doubled[i] = scale * x[i];
  for (int c = 0; c < 3; ++c)
    colSums[c] = x[c] + x[3 + c];
  int64_t reduce[] = {2, WEFT_F32, 1, 3, WEFT_F32, 1, 3, 3, 0, 1, 0};
  void *reduceBufs[] = {colSums, total};
  weft_k_all_reduce(reduceBufs, reduce);
  int64_t gather[] = {2, WEFT_F32, 2, 2, 3, WEFT_F32, 2, 4, 3, 3, 0, 1, 0};
  void *gatherBufs[] = {const_cast<float *>(x), whole};
  weft_k_all_gather(gatherBufs, gather);
}
