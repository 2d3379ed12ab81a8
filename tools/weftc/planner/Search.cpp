//===- Search.cpp - Enumerate, predict and rank plans ---------------------===//
#include "tools/weftc/planner/Search.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <set>

using namespace weft::planner;

namespace {

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= n; ++i)
    if (n % i == 0)
      d.push_back(i);
  return d;
}

std::vector<int64_t> pinnedOr(const std::optional<int64_t> &pin,
                              const std::vector<int64_t> &all) {
  if (pin)
    return {*pin};
  return all;
}

/// Human-readable bytes in GB (or MB/KB for small models).
std::string bytes(double b) {
  if (b >= 1e9)
    return llvm::formatv("{0:f1} GB", b / 1e9).str();
  if (b >= 1e6)
    return llvm::formatv("{0:f1} MB", b / 1e6).str();
  return llvm::formatv("{0:f1} KB", b / 1e3).str();
}

std::string seconds(double s) {
  if (s >= 1.0)
    return llvm::formatv("{0:f2} s", s).str();
  if (s >= 1e-3)
    return llvm::formatv("{0:f2} ms", s * 1e3).str();
  return llvm::formatv("{0:f1} us", s * 1e6).str();
}

bool betterPlan(const PlanEstimate &a, const PlanEstimate &b) {
  if (a.stepTime != b.stepTime)
    return a.stepTime < b.stepTime;
  return a.memory.total() < b.memory.total();
}

} // namespace

std::vector<int64_t>
weft::planner::tensorParallelDegrees(const SearchSpace &space) {
  if (space.tp)
    return {*space.tp};
  std::vector<int64_t> degrees;
  // Tensor parallelism all-reduces activations in every layer: beyond a
  // node (8 devices) it never pays, so the search stops there.
  for (int64_t d : divisors(space.devices))
    if (d <= 8 && (d > 1 || !space.sequenceParallel))
      degrees.push_back(d);
  return degrees;
}

SearchResult weft::planner::searchPlans(CostModel &model,
                                        const ModelProfile &profile,
                                        const SearchSpace &space) {
  auto start = std::chrono::steady_clock::now();
  SearchResult result;
  const int64_t n = space.devices;
  std::vector<PlanEstimate> all;
  for (int64_t tp : tensorParallelDegrees(space)) {
    if (n % tp)
      continue;
    for (int64_t pp : pinnedOr(space.pp, divisors(n / tp))) {
      if ((n / tp) % pp)
        continue;
      int64_t dp = n / tp / pp;
      if (space.dp && *space.dp != dp)
        continue;
      std::vector<int64_t> zeros = {0};
      if (space.zero)
        zeros = {*space.zero};
      else if (dp > 1 && space.train)
        zeros = {0, 1, 2, 3};
      // Microbatches: divisors of a data-parallel rank's rows.
      std::vector<int64_t> mbs;
      if (space.microbatches) {
        mbs = {*space.microbatches};
      } else if (profile.batch % dp == 0) {
        for (int64_t m : divisors(profile.batch / dp))
          // (Inference gains from microbatches only in a pipeline.)
          if (m <= 256 && (space.train || m == 1 || pp > 1) &&
              (pp == 1 || m >= pp))
            mbs.push_back(m);
      }
      if (mbs.empty())
        mbs = {pp};
      std::vector<std::pair<std::string, int64_t>> schedules;
      if (pp == 1) {
        schedules = {{"none", 1}};
      } else if (!space.train && space.schedule.empty()) {
        // Forwards only: every schedule runs them in microbatch order.
        schedules = {{"gpipe", 1}};
      } else if (!space.schedule.empty() && space.schedule != "interleaved") {
        schedules = {{space.schedule, 1}};
      } else {
        std::vector<int64_t> vs =
            space.virtualStages ? std::vector<int64_t>{*space.virtualStages}
                                : std::vector<int64_t>{2, 4};
        if (space.schedule.empty())
          for (const char *s : {"gpipe", "1f1b", "zb-h1"})
            schedules.push_back({s, 1});
        for (int64_t v : vs)
          if (v > 1)
            schedules.push_back({"interleaved", v});
      }
      std::vector<std::string> recomputes = {"none"};
      if (!space.recompute.empty())
        recomputes = {space.recompute};
      else if (space.train)
        recomputes = {"none", "selective", "full"};
      // Sequence parallelism where tensor parallelism is and the profile
      // has its program (language models), unless --sequence-parallel
      // pins it.
      std::vector<bool> sequence = {space.sequenceParallel};
      if (tp > 1 && !space.sequenceParallel && !space.noSequenceParallel &&
          profile.byTp.count(tpProfileKey(tp, true)))
        sequence.push_back(true);
      for (bool sp : sequence)
        for (int64_t zero : zeros)
          for (int64_t m : mbs)
            for (const auto &[schedule, v] : schedules)
              for (const std::string &rc : recomputes) {
                PlanChoice plan;
                plan.dp = dp;
                plan.tp = tp;
                plan.pp = pp;
                plan.zero = zero;
                plan.microbatches = m;
                plan.schedule = schedule;
                plan.virtualStages = v;
                plan.recompute = rc;
                plan.sequenceParallel = sp;
                all.push_back(model.evaluate(plan));
              }
    }
  }
  result.evaluated = static_cast<int64_t>(all.size());
  for (PlanEstimate &e : all) {
    if (!e.valid)
      result.invalid.push_back(std::move(e));
    else if (!e.fits())
      result.tooBig.push_back(std::move(e));
    else
      result.ranked.push_back(std::move(e));
  }
  std::stable_sort(result.ranked.begin(), result.ranked.end(), betterPlan);
  std::stable_sort(result.tooBig.begin(), result.tooBig.end(),
                   [](const PlanEstimate &a, const PlanEstimate &b) {
                     return a.memory.total() < b.memory.total();
                   });
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

/// The distinct reasons the plans of `invalid` cannot be built (same
/// words, other numbers), most frequent first, each in the wording of its
/// first plan: at most `shown`, as "reason (and N like it); ...".
static std::string groupedReasons(const std::vector<PlanEstimate> &invalid,
                                  size_t shown) {
  struct Reason {
    int64_t count = 0;
    size_t first = 0;
    std::string text;
  };
  std::map<std::string, Reason> reasons;
  for (const PlanEstimate &e : invalid) {
    std::string key;
    for (char c : e.invalid)
      if (!std::isdigit(static_cast<unsigned char>(c)))
        key += c;
    Reason &r = reasons[key];
    if (r.count++ == 0) {
      r.first = reasons.size();
      r.text = e.invalid;
    }
  }
  std::vector<Reason> sorted;
  for (auto &[key, r] : reasons)
    sorted.push_back(r);
  std::sort(sorted.begin(), sorted.end(), [](const Reason &a, const Reason &b) {
    return a.count != b.count ? a.count > b.count : a.first < b.first;
  });
  std::string why;
  for (size_t i = 0; i < std::min(shown, sorted.size()); ++i)
    why += (i ? "; " : "") + sorted[i].text + " (and " +
           std::to_string(sorted[i].count - 1) + " like it)";
  if (sorted.size() > shown)
    why += "; " + std::to_string(sorted.size() - shown) + " other reasons";
  return why;
}

std::string weft::planner::noPlanFits(const SearchResult &result,
                                      const Cluster &cluster) {
  if (result.tooBig.empty()) {
    std::string why = groupedReasons(result.invalid, 3);
    return "no plan can be built on " + describeCluster(cluster) + " (" +
           std::to_string(result.evaluated) + " tried)" +
           (why.empty() ? "" : ": " + why);
  }
  const PlanEstimate &least = result.tooBig.front();
  const MemoryBreakdown &m = least.memory;
  return llvm::formatv("no plan fits on {0}: the smallest, {1}, needs {2} "
                       "per rank > {3} (parameters {4}, gradients {5}, "
                       "optimizer state {6}, activations {7}, workspace {8})",
                       describeCluster(cluster), least.plan.describe(),
                       bytes(m.total()), bytes(least.capacity), bytes(m.params),
                       bytes(m.gradients), bytes(m.optimizer),
                       bytes(m.activations), bytes(m.workspace))
      .str();
}

/// Why `alt` lost to `best`, in a few words.
static std::string whyLost(const PlanEstimate &alt, const PlanEstimate &best) {
  double ratio = alt.stepTime / best.stepTime;
  std::string what;
  double extraComm = alt.exposedComm - best.exposedComm;
  double extraBubble = alt.bubble - best.bubble;
  double extraCompute =
      alt.compute + alt.optimizer - best.compute - best.optimizer;
  if (extraComm >= extraBubble && extraComm >= extraCompute)
    what = alt.dominantComm.empty() ? "communication" : alt.dominantComm;
  else if (extraBubble >= extraCompute)
    what = llvm::formatv("pipeline bubble ({0:f0}% of the step)",
                         100 * alt.bubble / alt.stepTime)
               .str();
  else
    what = "compute (" + seconds(alt.compute + alt.optimizer) + " per step)";
  return llvm::formatv("{0:f1}x slower: {1}", ratio, what).str();
}

/// A note on tensor-parallel ranks that split nothing: the integer program
/// found every split costlier than it saves, so they repeat one another.
static std::string whyWhole(const PlanEstimate &alt,
                            const ModelProfile &profile) {
  auto it =
      profile.byTp.find(tpProfileKey(alt.plan.tp, alt.plan.sequenceParallel));
  if (alt.plan.tp == 1 || it == profile.byTp.end() ||
      it->second.splits.rfind("0 column- and 0 row-parallel", 0) != 0)
    return "";
  return "; every weight whole at tp=" + std::to_string(alt.plan.tp) +
         " (splitting costs more than it saves)";
}

std::string weft::planner::explainPlans(const SearchResult &result,
                                        const ModelProfile &profile,
                                        const Cluster &cluster, size_t top,
                                        const CostModel *model) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "model: " << profile.model << " ("
     << llvm::formatv("{0:f2}", profile.paramCount / 1e6)
     << "M parameters, batch " << profile.batch << ", "
     << (profile.train ? "training" : "inference") << ", " << profile.dtype
     << ")\n";
  os << "cluster: " << describeCluster(cluster) << "\n";
  os << "searched " << result.evaluated << " plans in "
     << llvm::formatv("{0:f2}", result.seconds) << " s (profile "
     << llvm::formatv("{0:f2}", profile.seconds) << " s); "
     << result.ranked.size() << " fit, " << result.tooBig.size()
     << " do not fit, " << result.invalid.size() << " cannot be built\n\n";
  os << llvm::formatv("{0,4}  {1,-44} {2,10} {3,10} {4,10} {5,10} {6,22}\n",
                      "rank", "plan", "step", "compute", "exposed", "bubble",
                      "memory/rank");
  for (size_t i = 0; i < std::min(top, result.ranked.size()); ++i) {
    const PlanEstimate &e = result.ranked[i];
    os << llvm::formatv("{0,4}  {1,-44} {2,10} {3,10} {4,10} {5,10} {6,22}\n",
                        i + 1, e.plan.describe(), seconds(e.stepTime),
                        seconds(e.compute + e.optimizer),
                        seconds(e.exposedComm), seconds(e.bubble),
                        bytes(e.memory.total()) + " / " + bytes(e.capacity));
  }
  if (result.ranked.empty())
    return os.str();
  const PlanEstimate &best = result.ranked.front();
  if (model)
    os << "\nwhere the best plan's compute goes (one step of one data- and "
          "tensor-parallel rank, all pipeline stages together):\n"
       << model->computeBreakdown(best.plan);
  auto tpProfile =
      profile.byTp.find(tpProfileKey(best.plan.tp, best.plan.sequenceParallel));
  if (tpProfile != profile.byTp.end() && !tpProfile->second.splits.empty())
    os << "\ntensor-parallel splits at tp=" << best.plan.tp << ": "
       << tpProfile->second.splits << "\n";
  // The obvious alternatives: each mesh shape's best plan.
  std::map<std::tuple<int64_t, int64_t, int64_t>, const PlanEstimate *> fits,
      tooBig;
  std::map<std::tuple<int64_t, int64_t, int64_t>, const PlanEstimate *> bad;
  for (const PlanEstimate &e : result.ranked)
    fits.emplace(std::make_tuple(e.plan.dp, e.plan.tp, e.plan.pp), &e);
  for (const PlanEstimate &e : result.tooBig)
    tooBig.emplace(std::make_tuple(e.plan.dp, e.plan.tp, e.plan.pp), &e);
  for (const PlanEstimate &e : result.invalid)
    bad.emplace(std::make_tuple(e.plan.dp, e.plan.tp, e.plan.pp), &e);
  std::set<std::tuple<int64_t, int64_t, int64_t>> shapes;
  for (auto *m : {&fits, &tooBig, &bad})
    for (auto &[shape, e] : *m)
      shapes.insert(shape);
  os << "\nbest per mesh shape (why the alternatives lost):\n";
  for (const auto &shape : shapes) {
    auto [dp, tp, pp] = shape;
    std::string name = llvm::formatv("dp={0} tp={1} pp={2}", dp, tp, pp);
    os << "  " << llvm::formatv("{0,-22}", name);
    if (auto it = fits.find(shape); it != fits.end()) {
      const PlanEstimate &e = *it->second;
      if (&e == &best)
        os << "best: " << e.plan.describe() << ", " << seconds(e.stepTime)
           << "\n";
      else
        os << whyLost(e, best) << whyWhole(e, profile) << " ("
           << e.plan.describe() << ", " << seconds(e.stepTime) << ")\n";
    } else if (auto it = tooBig.find(shape); it != tooBig.end()) {
      const PlanEstimate &e = *it->second;
      os << "does not fit: " << bytes(e.memory.total()) << " > "
         << bytes(e.capacity) << " (" << e.plan.describe() << ")\n";
    } else {
      os << "cannot be built: " << bad.at(shape)->invalid << "\n";
    }
  }
  if (!result.invalid.empty())
    os << "\nwhy " << result.invalid.size()
       << " plans cannot be built: " << groupedReasons(result.invalid, 5)
       << "\n";
  return os.str();
}

std::string weft::planner::plansJson(const SearchResult &result,
                                     const ModelProfile &profile,
                                     const Cluster &cluster, size_t top) {
  llvm::json::Array plans;
  for (size_t i = 0; i < std::min(top, result.ranked.size()); ++i) {
    const PlanEstimate &e = result.ranked[i];
    const MemoryBreakdown &m = e.memory;
    plans.push_back(
        llvm::json::Object{{"dp", e.plan.dp},
                           {"tp", e.plan.tp},
                           {"pp", e.plan.pp},
                           {"zero", e.plan.zero},
                           {"microbatches", e.plan.microbatches},
                           {"schedule", e.plan.schedule},
                           {"virtual_stages", e.plan.virtualStages},
                           {"recompute", e.plan.recompute},
                           {"sequence_parallel", e.plan.sequenceParallel},
                           {"step_time_s", e.stepTime},
                           {"compute_s", e.compute + e.optimizer},
                           {"exposed_comm_s", e.exposedComm},
                           {"bubble_s", e.bubble},
                           {"dominant_comm", e.dominantComm},
                           {"dominant_comm_s", e.dominantCommTime},
                           {"memory_bytes_per_rank", m.total()},
                           {"memory_breakdown_bytes",
                            llvm::json::Object{{"parameters", m.params},
                                               {"gradients", m.gradients},
                                               {"optimizer_state", m.optimizer},
                                               {"activations", m.activations},
                                               {"workspace", m.workspace},
                                               {"inputs_outputs", m.io}}},
                           {"capacity_bytes_per_rank", e.capacity},
                           {"stage_cuts", llvm::json::Array(e.cuts)}});
  }
  llvm::json::Object root{{"plans", std::move(plans)},
                          {"model", profile.model},
                          {"cluster", cluster.name},
                          {"devices", cluster.devices()},
                          {"evaluated", result.evaluated},
                          {"fit", static_cast<int64_t>(result.ranked.size())},
                          {"search_seconds", result.seconds},
                          {"profile_seconds", profile.seconds}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return os.str();
}
