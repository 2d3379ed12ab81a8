//===- AutoPlan.cpp - The cost model behind weftc compile and plan --------===//
#include "tools/weftc/AutoPlan.h"

using namespace weft;
using namespace weft::planner;

bool weft::wantsSearch(const CompileOptions &opts) {
  const bool noDegrees = !opts.dp && !opts.tp && !opts.pp;
  // A cluster without --devices means all of its devices.
  return opts.autoPlan || (noDegrees && opts.devices > 1) ||
         (noDegrees && !opts.devicesGiven && !opts.cluster.empty());
}

bool weft::loadPlanningCluster(const CompileOptions &opts, Cluster &cluster,
                               std::string &error) {
  // Without --cluster: this machine's CPU ranks, or for GPU bundles the
  // GPU preset.
  const std::string spec = !opts.cluster.empty()   ? opts.cluster
                           : opts.target == "cuda" ? "h100-sxm"
                                                   : "cpu-local";
  return loadCluster(spec, opts.devicesGiven ? opts.devices : 0, cluster,
                     error);
}

static SearchSpace spaceOf(const CompileOptions &opts, int64_t devices) {
  SearchSpace space;
  space.devices = devices;
  space.train = opts.train;
  space.dp = opts.dp;
  space.tp = opts.tp;
  space.pp = opts.pp;
  space.zero = opts.zero;
  space.microbatches = opts.microbatches;
  space.virtualStages = opts.virtualStages;
  space.schedule = opts.schedule;
  space.sequenceParallel = opts.sequenceParallel;
  space.noSequenceParallel = opts.noSequenceParallel;
  if (opts.recomputeGiven)
    space.recompute = opts.recompute;
  return space;
}

void weft::priceTensorParallel(CompileOptions &opts, const Cluster &cluster,
                               const std::vector<int64_t> &degrees) {
  const int64_t ranks = cluster.devices();
  const std::string dtype = opts.dtype == "bf16" ? "bf16" : "fp32";
  // A large product's rate: the weights worth splitting are large.
  const double rate =
      cluster.rankPeakFlops(dtype, ranks) * cluster.gemmEfficiencyAt(1e12);
  for (int64_t tp : degrees) {
    if (tp <= 1 || rate <= 0)
      continue;
    Link link = cluster.linkFor(tp, 1, "all_reduce", ranks);
    TensorParallelPrices &price = opts.tpPrices[tp];
    price.flopSeconds = 1.0 / rate;
    price.byteSeconds = link.bandwidth > 0 ? 1.0 / link.bandwidth : 0.0;
    price.latency = link.latency;
    // Half of a rank's memory for weights, gradients and optimizer state:
    // the rest holds activations and buffers (the cost model then checks
    // the whole plan).
    price.memoryBytes = 0.5 * cluster.rankMemoryBytes(ranks);
  }
}

bool weft::searchPlan(const CompileOptions &opts, Planning &planning,
                      std::string &error) {
  if (!loadPlanningCluster(opts, planning.cluster, error))
    return false;
  if (!opts.stageBoundaries.empty()) {
    error = "--stage-boundaries pins a pipeline: give --pp (and the other "
            "degrees) instead of searching";
    return false;
  }
  const int64_t devices = planning.cluster.devices();
  SearchSpace space = spaceOf(opts, devices);
  int64_t pinned =
      space.dp.value_or(1) * space.tp.value_or(1) * space.pp.value_or(1);
  if (devices % pinned != 0) {
    error = "the pinned degrees (" + std::to_string(pinned) +
            " devices) do not divide the " + std::to_string(devices) +
            " devices of the cluster";
    return false;
  }
  CompileOptions priced = opts;
  priceTensorParallel(priced, planning.cluster, tensorParallelDegrees(space));
  if (!buildProfile(priced, tensorParallelDegrees(space), planning.profile,
                    error,
                    opts.sequenceParallel || opts.noSequenceParallel
                        ? SequenceVariants::AsOptions
                        : SequenceVariants::Both))
    return false;
  planning.model =
      std::make_unique<CostModel>(planning.profile, planning.cluster);
  planning.search = searchPlans(*planning.model, planning.profile, space);
  if (planning.search.ranked.empty()) {
    error = noPlanFits(planning.search, planning.cluster);
    return false;
  }
  planning.chosen = planning.search.ranked.front();
  return true;
}

void weft::applyPlan(const PlanChoice &plan, CompileOptions &opts) {
  opts.dp = plan.dp;
  opts.tp = plan.tp;
  opts.pp = plan.pp;
  opts.zero = plan.zero;
  opts.microbatches = plan.microbatches;
  opts.devices = plan.devices();
  opts.devicesGiven = true;
  if (plan.pp > 1) {
    opts.schedule = plan.schedule;
    if (plan.schedule == "interleaved")
      opts.virtualStages = plan.virtualStages;
  }
  opts.recompute = plan.recompute;
  opts.sequenceParallel = plan.sequenceParallel;
}

bool weft::predictPinnedPlan(const CompileOptions &opts, Planning &planning,
                             std::string &error) {
  CompileOptions sized = opts;
  sized.devicesGiven = true;
  if (!loadPlanningCluster(sized, planning.cluster, error))
    return false;
  PlanChoice plan;
  plan.dp = opts.dp.value_or(1);
  plan.tp = opts.tp.value_or(1);
  plan.pp = opts.pp.value_or(1);
  plan.zero = opts.zero.value_or(0);
  plan.microbatches = opts.microbatches.value_or(plan.pp);
  plan.schedule = pipelineSchedule(opts);
  plan.virtualStages = pipelineVirtualStages(opts);
  plan.recompute = opts.recompute;
  plan.sequenceParallel = opts.sequenceParallel && plan.tp > 1;
  if (!buildProfile(opts, {plan.tp}, planning.profile, error))
    return false;
  planning.model =
      std::make_unique<CostModel>(planning.profile, planning.cluster);
  // The default schedule gives way to gpipe where only gpipe runs the
  // model (weft-pipeline's gpipe-if-coupled): the prediction follows.
  if (!opts.scheduleGiven && plan.schedule != "interleaved" &&
      !planning.model->scheduleConflict(plan).empty())
    plan.schedule = "gpipe";
  planning.chosen = planning.model->evaluate(plan);
  if (!planning.chosen->valid) {
    error = planning.chosen->invalid;
    planning.chosen.reset();
    return false;
  }
  return true;
}
