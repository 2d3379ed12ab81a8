//===- CostModelBreakdown.cpp - Where a plan's compute goes ---------------===//
//
// CostModel::computeBreakdown, for `weftc plan --explain`: one rank's
// compute per phase (products and the rest), the gradient sums of
// microbatches, the weights fetched from beyond the cache, the kernel
// launches, and the runtime kernels by time.
//
//===----------------------------------------------------------------------===//
#include "tools/weftc/planner/CostModel.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdlib>
#include <map>

using namespace weft::planner;

std::string CostModel::computeBreakdown(const PlanChoice &plan) const {
  auto it = profile.byTp.find(tpProfileKey(plan.tp, plan.sequenceParallel));
  if (it == profile.byTp.end())
    return "";
  const int64_t ranks = plan.devices();
  const double m = static_cast<double>(plan.microbatches);
  const double scale = 1.0 / static_cast<double>(plan.dp * plan.microbatches);
  // ZeRO shards the optimizer's work over the data-parallel ranks.
  const double optimizerRuns =
      plan.zero >= 1 ? 1.0 / static_cast<double>(plan.dp) : 1.0;
  double time[4][2] = {}, flops[4][2] = {};
  int64_t kernels = 0;
  const double fetch = weightFetch(it->second, plan.pp, plan.microbatches);
  for (const OpRecord &op : it->second.ops) {
    int phase = static_cast<int>(op.phase);
    double runs = op.phase == Phase::Optimizer ? optimizerRuns : m;
    time[phase][op.product] += runs * opTime(op, scale, ranks, fetch);
    flops[phase][op.product] += runs * (op.batch ? op.flops * scale : op.flops);
    kernels += op.phase == Phase::Optimizer ? 1 : static_cast<int64_t>(m);
  }
  if (std::getenv("WEFT_PLANNER_DUMP")) {
    std::vector<std::pair<double, const OpRecord *>> top;
    for (const OpRecord &op : it->second.ops)
      top.push_back({opTime(op, scale, ranks, fetch), &op});
    std::sort(top.begin(), top.end(),
              [](auto &a, auto &b) { return a.first > b.first; });
    for (size_t i = 0; i < std::min<size_t>(25, top.size()); ++i)
      llvm::errs() << llvm::formatv(
          "  {0:f4} ms unit {1} phase {2} product {3} flops {4} bytes {5}\n",
          top[i].first * 1e3, top[i].second->unit,
          static_cast<int>(top[i].second->phase), top[i].second->product,
          top[i].second->flops, top[i].second->bytes);
  }
  static const char *const names[] = {"forward", "backward", "weight grad",
                                      "optimizer"};
  std::string text;
  for (int p = 0; p < 4; ++p)
    text += llvm::formatv("    {0,-12} products {1,9:f3} ms ({2,7:f3} GFLOP), "
                          "other {3,9:f3} ms ({4,7:f3} GFLOP)\n",
                          names[p], time[p][1] * 1e3, flops[p][1] / 1e9,
                          time[p][0] * 1e3, flops[p][0] / 1e9)
                .str();
  if (plan.microbatches > 1) {
    double gradBytes = 0;
    for (const UnitBytes &u : it->second.units)
      gradBytes += u.gradients;
    text += llvm::formatv(
                "    accumulate   {0} sums of the weight gradients "
                "{1,9:f3} ms\n",
                plan.microbatches - 1,
                accumulationTime(gradBytes, plan.microbatches, ranks) * 1e3)
                .str();
  }
  if (fetch > 0) {
    double fetched = 0;
    for (const OpRecord &op : it->second.ops)
      fetched += op.stateBytes;
    text += llvm::formatv("    of the products, fetching {0:f2} MB of weights "
                          "and weight gradients from beyond the cache "
                          "{1,9:f3} ms\n",
                          fetched / 1e6, fetched * fetch * m * 1e3)
                .str();
  }
  const bool graph = ranks == 1 && cluster.kernelOverheadGraph >= 0;
  text += llvm::formatv("    {0} kernel launches per step, {1:f3} ms of launch "
                        "overhead{2}\n",
                        kernels, kernels * cluster.launchOverhead(ranks) * 1e3,
                        graph ? " (replayed as a CUDA graph)" : "")
              .str();
  // By runtime kernel, the costliest first (what a traced step lists).
  struct KernelSum {
    double launches = 0, time = 0, flops = 0, bytes = 0;
  };
  std::map<std::string, KernelSum> byKernel;
  for (const OpRecord &op : it->second.ops) {
    double runs = op.phase == Phase::Optimizer ? optimizerRuns : m;
    KernelSum &k = byKernel[profile.kernels[op.kernel]];
    k.launches += op.phase == Phase::Optimizer ? 1.0 : m;
    k.time += runs * opTime(op, scale, ranks, fetch);
    k.flops += runs * (op.batch ? op.flops * scale : op.flops);
    k.bytes += runs * (op.batch ? op.bytes * scale : op.bytes);
  }
  std::vector<std::pair<std::string, KernelSum>> sorted(byKernel.begin(),
                                                        byKernel.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](auto &a, auto &b) {
    return a.second.time > b.second.time;
  });
  text += "  by kernel:\n";
  for (const auto &[name, k] : sorted)
    text += llvm::formatv("    {0,-20} x{1,-6:f0} {2,9:f3} ms ({3,9:f3} GFLOP, "
                          "{4,10:f1} MB)\n",
                          name.empty() ? "(none)" : name, k.launches,
                          k.time * 1e3, k.flops / 1e9, k.bytes / 1e6)
                .str();
  return text;
}
