//===- CostModel.h - Predicted step time and memory of a plan --*- C++ -*-===//
//
// evaluatePlan applies a plan to a model's profile (Profile.h) on a
// cluster (Cluster.h):
//
// - compute: every op by a roofline, max(FLOPs / (peak x efficiency),
//   bytes / memory bandwidth) plus the launch overhead; products at the
//   GEMM rate of their dtype and size, the rest at the fp32 rate. Work
//   that scales with the batch runs on a microbatch's rows, 1/(dp x M) of
//   the global batch.
// - tensor-parallel collectives (what the partition inserted) where
//   weft-async-collectives starts and waits for them: the kernels in
//   between hide them by the cluster's overlap fraction; data-parallel gradient
//   traffic by ZeRO stage (all-reduce; reduce-scatter + all-gather), hidden
//   behind the backward by the cluster's overlap fraction where weft starts it
//   asynchronously; pipeline send/recv of the activations crossing each stage
//   cut.
// - pipeline: stages cut as weft-pipeline-stages cuts them; the step is
//   M microbatches of the slowest stage plus the schedule's bubble
//   (Formulas.h).
// - memory per rank: parameters, gradients and optimizer state by ZeRO
//   stage; activations kept for the backward per microbatch times the
//   schedule's in-flight count (less with recomputation); a workspace
//   (the most batch-sized bytes one op touches that are not kept
//   activations); inputs and outputs.
//
// Mesh layout follows the compiled program: ranks are row-major over
// (dp, pp, tp), so a tp group is adjacent ranks, pipeline neighbours are
// tp ranks apart and a dp group has stride pp x tp; a group spanning more
// ranks than a node holds uses the inter-node link.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_PLANNER_COSTMODEL_H
#define WEFT_TOOLS_WEFTC_PLANNER_COSTMODEL_H

#include "tools/weftc/planner/Cluster.h"
#include "tools/weftc/planner/Profile.h"

#include <map>
#include <string>
#include <vector>

namespace weft::planner {

struct PlanChoice {
  int64_t dp = 1, tp = 1, pp = 1, zero = 0, microbatches = 1;
  std::string schedule = "none"; // none, gpipe, 1f1b, interleaved, zb-h1
  int64_t virtualStages = 1;
  std::string recompute = "none"; // none, selective, full
  /// The activations between tensor-parallel blocks split along the
  /// sequence over tp (--sequence-parallel; tp > 1 only).
  bool sequenceParallel = false;

  int64_t devices() const { return dp * tp * pp; }
  /// "dp=2 tp=2 pp=1 zero=1 M=1 ..." for tables and messages.
  std::string describe() const;
};

struct MemoryBreakdown {
  double params = 0, gradients = 0, optimizer = 0, activations = 0,
         workspace = 0, io = 0;
  double total() const {
    return params + gradients + optimizer + activations + workspace + io;
  }
};

struct PlanEstimate {
  PlanChoice plan;
  bool valid = true;      // false: the plan cannot be built at all
  std::string invalid;    // why not
  double stepTime = 0;    // seconds
  double compute = 0;     // the slowest stage's compute in the step
  double exposedComm = 0; // communication not hidden behind compute
  double bubble = 0;      // pipeline idle time
  double optimizer = 0;   // the optimizer update
  MemoryBreakdown memory; // the fullest rank's
  double capacity = 0;    // bytes per rank
  bool fits() const { return memory.total() <= capacity; }
  /// The largest exposed communication: what, over which link.
  std::string dominantComm;
  double dominantCommTime = 0;
  /// Stage cuts (positions of forward ops) for pipelines.
  std::vector<int64_t> cuts;
};

class CostModel {
public:
  CostModel(const ModelProfile &profile, const Cluster &cluster)
      : profile(profile), cluster(cluster) {}

  PlanEstimate evaluate(const PlanChoice &plan);

  /// Why `plan`'s schedule cannot run the model's pipeline, as
  /// weft-pipeline refuses it: a stage (chunk) past the first computes a
  /// batch statistic (ModelProfile::couplings) of another stage's
  /// activations, so it needs every microbatch's forward before any goes
  /// on, and 1F1B or ZB-H1 with more microbatches than the earlier stage
  /// sends ahead, or interleaving, would deadlock. Empty where it runs.
  /// weftc runs gpipe instead when the schedule was not pinned.
  std::string scheduleConflict(const PlanChoice &plan);

  /// Where one rank's compute goes under `plan`, per step: products and
  /// other kernels per phase, and the kernel count (for --explain).
  std::string computeBreakdown(const PlanChoice &plan) const;

private:
  /// Prefix sums over units (size units + 1) of one rank's times.
  struct UnitTimes {
    std::vector<double> forward, backward, weightGrad, optimizer, recomputeFull,
        recomputeSelective;
    /// Of forward + backward: the tensor-parallel collectives.
    std::vector<double> tpComm;
  };
  /// Prefix sums over units of the state and activation bytes.
  struct UnitSums {
    std::vector<double> params, gradients, optimizer, saved, savedProducts;
  };
  /// `program`: the profile's key (tpProfileKey). `fetch` as opTime takes
  /// it.
  const UnitTimes &unitTimes(int64_t program, double scale, int64_t tpStride,
                             int64_t ranks, double fetch);
  const UnitSums &unitSums(int64_t program);
  const std::vector<int64_t> &cutsFor(int64_t chunks);
  /// `fetch`: seconds per byte of a product's weights and weight
  /// gradients (weightFetch).
  double opTime(const OpRecord &op, double scale, int64_t ranks,
                double fetch) const;
  /// Seconds a product pays per byte of weight it fetches, per microbatch:
  /// a step fetches each weight once (later microbatches find it near),
  /// when the rank's share of the parameters, gradients and optimizer
  /// state (a 1/pp stage) outgrows a core's own cache
  /// (Cluster::weightStreamBandwidth); else 0.
  double weightFetch(const TpProfile &p, int64_t pp,
                     int64_t microbatches) const;
  /// The copies a step spends packing and unpacking the data-parallel
  /// buckets of a stage's `gradBytes` of gradients and `paramBytes` of
  /// parameters (by ZeRO stage; none for CPU bundles, whose buckets are
  /// filled and moved in place).
  double packingTime(double gradBytes, double paramBytes,
                     const PlanChoice &plan, int64_t ranks) const;
  /// Per collective of `p` (TpProfile::collectives), the time it adds to
  /// one rank's step: its wait and interference where
  /// weft-async-collectives starts it ahead of `kernels` (p.ops' times, in
  /// order, for one microbatch) between (overlappedCommTimes).
  std::vector<double> tpCommCharges(const TpProfile &p,
                                    const std::vector<double> &kernels,
                                    double scale, int64_t tpStride,
                                    int64_t ranks) const;
  /// Summing M microbatches' weight gradients of `gradBytes` (M - 1 adds
  /// of the whole set: weft-microbatch sums the clones in order).
  double accumulationTime(double gradBytes, int64_t microbatches,
                          int64_t ranks) const;

  const ModelProfile &profile;
  const Cluster &cluster;
  std::map<std::tuple<int64_t, double, int64_t, int64_t, double>, UnitTimes>
      timeCache;
  std::map<int64_t, UnitSums> sumCache;
  std::map<int64_t, std::vector<int64_t>> cutCache;
};

} // namespace weft::planner

#endif // WEFT_TOOLS_WEFTC_PLANNER_COSTMODEL_H
