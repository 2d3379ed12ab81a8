//===- AutoPlan.h - The cost model behind weftc compile and plan -*- C++
//-*-===//
//
// What `weftc compile --auto` (the default when no degree is given for
// more than one device) and `weftc plan` share: the cluster (--cluster, by
// default cpu-local), the model's profile (planner/Profile.h), the search
// over the plans the flags leave open (planner/Search.h), and the
// prediction of a plan the flags pin, which the bundle's manifest records
// so `weft train` can print it beside what it measures.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_AUTOPLAN_H
#define WEFT_TOOLS_WEFTC_AUTOPLAN_H

#include "tools/weftc/CompileOptions.h"
#include "tools/weftc/planner/Search.h"

#include <memory>
#include <optional>
#include <string>

namespace weft {

struct Planning {
  planner::Cluster cluster;
  planner::ModelProfile profile;
  planner::SearchResult search;
  std::optional<planner::PlanEstimate> chosen;
  /// Reads `cluster` and `profile`: Planning is not copied or moved.
  std::unique_ptr<planner::CostModel> model;
};

/// Whether the plan is left to the search: --auto, or none of --dp/--tp/--pp
/// with more than one device (or a --cluster without --devices).
bool wantsSearch(const CompileOptions &opts);

/// The cluster opts name (by default cpu-local, h100-sxm for --target
/// cuda) sized for opts.devices (or
/// the cluster's own size when --devices is not given).
bool loadPlanningCluster(const CompileOptions &opts, planner::Cluster &cluster,
                         std::string &error);

/// Profiles the model and searches the plans opts leave open; on success
/// `planning.chosen` is the best that fits (an error says why none does).
bool searchPlan(const CompileOptions &opts, Planning &planning,
                std::string &error);

/// Prices tensor-parallel splits on `cluster` for each tp degree (see
/// TensorParallelPrices): the search profiles, and compiles its choice, with
/// the splits an integer program picks at these prices.
void priceTensorParallel(CompileOptions &opts, const planner::Cluster &cluster,
                         const std::vector<int64_t> &degrees);

/// Writes a plan's degrees and choices into opts (as if given as flags).
void applyPlan(const planner::PlanChoice &plan, CompileOptions &opts);

/// The cost model's prediction for the plan opts pin (after
/// resolveDevices); false when the model cannot be profiled.
bool predictPinnedPlan(const CompileOptions &opts, Planning &planning,
                       std::string &error);

} // namespace weft

#endif // WEFT_TOOLS_WEFTC_AUTOPLAN_H
