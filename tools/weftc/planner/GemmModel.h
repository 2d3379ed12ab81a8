//===- GemmModel.h - How fast a product runs, as the cost model sees it ---===//
//
// Shared by the cost model (Cluster.cpp, CostModel.cpp) and weft-calibrate
// (tools/weft/Calibrate.cpp), which fits the figures these functions read:
// plain C++, no LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_PLANNER_GEMMMODEL_H
#define WEFT_PLANNER_GEMMMODEL_H

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace weft {
namespace planner {

/// A product's efficiency (rate over peak) from `table`, [FLOPs, efficiency]
/// pairs by increasing FLOPs: linear in log(FLOPs) between entries, the end
/// entries' values beyond them, 1 for an empty table.
inline double efficiencyAt(const std::vector<std::pair<double, double>> &table,
                           double flops) {
  if (table.empty())
    return 1.0;
  if (flops <= table.front().first)
    return table.front().second;
  for (size_t i = 1; i < table.size(); ++i) {
    auto [x1, y1] = table[i];
    if (flops > x1)
      continue;
    auto [x0, y0] = table[i - 1];
    if (x0 <= 0 || x1 <= x0)
      return y1;
    double t = (std::log(flops) - std::log(x0)) / (std::log(x1) - std::log(x0));
    return y0 + t * (y1 - y0);
  }
  return table.back().second;
}

/// What a small dimension costs a product beyond its size's efficiency:
/// below `fullDim` the kernel's tiles run partly empty.
inline double skinnyFactor(double minDim, double fullDim) {
  if (!(fullDim > 0))
    return 1.0;
  return std::pow(std::min(1.0, minDim / fullDim), 0.8);
}

} // namespace planner
} // namespace weft

#endif // WEFT_PLANNER_GEMMMODEL_H
