//===- Search.h - Enumerate, predict and rank plans ------------*- C++ -*-===//
//
// The outer search of DESIGN.md: every factorization of the devices into
// dp x tp x pp, then ZeRO stage, microbatch count, pipeline schedule (with
// virtual stages) and recomputation, each plan predicted by the cost model
// (CostModel.h) on the model's profile. Flags the user gave pin their
// dimension. Plans that do not fit in memory or cannot be built are kept
// with the reason, so `weftc plan --explain` can say why they lost.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_PLANNER_SEARCH_H
#define WEFT_TOOLS_WEFTC_PLANNER_SEARCH_H

#include "tools/weftc/planner/CostModel.h"

#include <optional>
#include <string>
#include <vector>

namespace weft::planner {

/// What the search may choose; a set field is pinned.
struct SearchSpace {
  int64_t devices = 1;
  bool train = false;
  std::optional<int64_t> dp, tp, pp, zero, microbatches, virtualStages;
  std::string schedule;  // empty: free
  std::string recompute; // empty: free
  /// --sequence-parallel: only plans with tensor parallelism, all with
  /// sequence parallelism. Otherwise plans with tp > 1 come with and
  /// without it where the profile has both programs (ModelProfile::byTp).
  bool sequenceParallel = false;
  /// --no-sequence-parallel: plans without it only.
  bool noSequenceParallel = false;
};

struct SearchResult {
  /// Plans that fit, fastest first.
  std::vector<PlanEstimate> ranked;
  /// Plans that do not fit, smallest memory first, and plans that cannot
  /// be built (invalid), by plan.
  std::vector<PlanEstimate> tooBig, invalid;
  int64_t evaluated = 0;
  double seconds = 0;
};

/// The tensor-parallel degrees the space allows (the profile's partitions).
std::vector<int64_t> tensorParallelDegrees(const SearchSpace &space);

SearchResult searchPlans(CostModel &model, const ModelProfile &profile,
                         const SearchSpace &space);

/// The ranked table and why the obvious alternatives lost.
std::string explainPlans(const SearchResult &result,
                         const ModelProfile &profile, const Cluster &cluster,
                         size_t top, const CostModel *model = nullptr);

/// {"plans": [...]}, best first.
std::string plansJson(const SearchResult &result, const ModelProfile &profile,
                      const Cluster &cluster, size_t top);

/// "no plan fits: ..." with the smallest memory any plan would need.
std::string noPlanFits(const SearchResult &result, const Cluster &cluster);

} // namespace weft::planner

#endif // WEFT_TOOLS_WEFTC_PLANNER_SEARCH_H
