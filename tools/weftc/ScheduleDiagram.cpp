//===- ScheduleDiagram.cpp - Stages against time, as the schedule runs ----===//
#include "tools/weftc/ScheduleDiagram.h"

#include "dialects/weft/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <tuple>

using namespace mlir;
using namespace weft;

namespace {

int64_t intAttr(Operation *op, StringRef name, int64_t otherwise) {
  if (auto a = op->getAttrOfType<IntegerAttr>(name))
    return a.getInt();
  return otherwise;
}

/// `text` with XML's special characters escaped.
std::string escape(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string unitName(const ScheduledUnit &u) {
  std::string name = (u.weight     ? "W"
                      : u.backward ? "B"
                                   : "F") +
                     std::to_string(u.microbatch);
  if (u.chunk >= 0)
    name += ".c" + std::to_string(u.chunk);
  return name;
}

} // namespace

bool weft::simulateSchedule(ModuleOp module, const std::string &schedule,
                            ScheduleSimulation &out, std::string &error) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func || !func->hasAttr("weft.pipeline_axis")) {
    error = "the program has no pipeline to draw (give --pp > 1)";
    return false;
  }
  out = ScheduleSimulation();
  out.schedule = schedule;
  out.stages = intAttr(func, "weft.pipeline_stages", 1);
  out.virtualStages = intAttr(func, "weft.virtual_stages", 1);
  // Each stage's units in program order; a send's unit per tag; a unit's
  // incoming tags.
  std::vector<std::vector<size_t>> order(static_cast<size_t>(out.stages));
  std::map<std::tuple<int64_t, int64_t, bool, int64_t, bool>, size_t> unitOf;
  std::map<int64_t, size_t> sentBy;
  std::vector<std::vector<int64_t>> receives;
  std::vector<int64_t> current(static_cast<size_t>(out.stages), -1);
  std::map<std::tuple<int64_t, int64_t, bool, int64_t, bool>,
           std::vector<int64_t>>
      early;
  for (Operation &op : func.getBody().front()) {
    int64_t stage = intAttr(&op, "weft.stage", -1);
    if (stage < 0 || stage >= out.stages ||
        op.hasAttr("weft.after_microbatches"))
      continue;
    int64_t mb = intAttr(&op, "weft.microbatch", -1);
    if (mb < 0) {
      // Work between units (a gradient sum) belongs to the stage's unit.
      int64_t at = current[static_cast<size_t>(stage)];
      if (at >= 0)
        if (auto cost = dyn_cast<CostOpInterface>(op))
          out.units[static_cast<size_t>(at)].work +=
              static_cast<double>(cost.getFlops());
      continue;
    }
    out.microbatches = std::max(out.microbatches, mb + 1);
    auto key = std::make_tuple(stage, mb, op.hasAttr("weft.backward"),
                               intAttr(&op, "weft.chunk", -1),
                               op.hasAttr("weft.weight_grad"));
    // A receive posted early belongs to its unit, wherever it sits.
    if (auto recv = dyn_cast<RecvStartOp>(op)) {
      early[key].push_back(recv.getTag());
      continue;
    }
    auto [it, fresh] = unitOf.try_emplace(key, out.units.size());
    if (fresh) {
      ScheduledUnit u;
      u.stage = stage;
      u.microbatch = mb;
      u.backward = std::get<2>(key);
      u.chunk = std::get<3>(key);
      u.weight = std::get<4>(key);
      out.units.push_back(u);
      receives.emplace_back();
      order[static_cast<size_t>(stage)].push_back(it->second);
    }
    size_t unit = it->second;
    current[static_cast<size_t>(stage)] = static_cast<int64_t>(unit);
    if (auto send = dyn_cast<SendStartOp>(op))
      sentBy[send.getTag()] = unit;
    else if (auto recv = dyn_cast<RecvOp>(op))
      receives[unit].push_back(recv.getTag());
    else if (auto cost = dyn_cast<CostOpInterface>(op))
      out.units[unit].work +=
          std::max<double>(1.0, static_cast<double>(cost.getFlops()));
  }

  for (auto &[key, tags] : early)
    if (auto it = unitOf.find(key); it != unitOf.end())
      receives[it->second].insert(receives[it->second].end(), tags.begin(),
                                  tags.end());

  // List simulation: a stage runs its next unit once what it receives has
  // been sent.
  std::vector<size_t> next(static_cast<size_t>(out.stages), 0);
  std::vector<double> freeAt(static_cast<size_t>(out.stages), 0.0);
  std::vector<bool> done(out.units.size(), false);
  size_t remaining = out.units.size();
  while (remaining > 0) {
    bool progressed = false;
    for (int64_t s = 0; s < out.stages; ++s) {
      auto &list = order[static_cast<size_t>(s)];
      size_t &i = next[static_cast<size_t>(s)];
      if (i >= list.size())
        continue;
      ScheduledUnit &u = out.units[list[i]];
      double ready = freeAt[static_cast<size_t>(s)];
      bool blocked = false;
      for (int64_t tag : receives[list[i]]) {
        auto from = sentBy.find(tag);
        if (from == sentBy.end())
          continue; // sent from outside the microbatches
        if (!done[from->second]) {
          blocked = true;
          break;
        }
        ready = std::max(ready, out.units[from->second].end);
      }
      if (blocked)
        continue;
      u.begin = ready;
      u.end = ready + u.work;
      freeAt[static_cast<size_t>(s)] = u.end;
      done[list[i]] = true;
      ++i;
      --remaining;
      progressed = true;
    }
    if (!progressed) {
      error = "the schedule's units wait on each other (a deadlock)";
      return false;
    }
  }
  double busy = 0;
  for (const ScheduledUnit &u : out.units) {
    out.makespan = std::max(out.makespan, u.end);
    busy += u.work;
  }
  out.bubble =
      out.makespan > 0
          ? 1.0 - busy / (static_cast<double>(out.stages) * out.makespan)
          : 0.0;
  return true;
}

std::string weft::scheduleSvg(const ScheduleSimulation &sim,
                              const std::string &title) {
  const double left = 70, top = 48, rowHeight = 30, gap = 8, width = 960;
  const double scale = sim.makespan > 0 ? width / sim.makespan : 0;
  const double height =
      top + static_cast<double>(sim.stages) * (rowHeight + gap) + 40;
  std::string svg;
  llvm::raw_string_ostream os(svg);
  auto num = [](double v) { return llvm::format("%.1f", v); };
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\""
     << num(left + width + 20) << "\" height=\"" << num(height)
     << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
     << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
     << "<text x=\"" << num(left) << "\" y=\"20\" font-size=\"14\">"
     << escape(title) << "</text>\n"
     << "<text x=\"" << num(left) << "\" y=\"36\" fill=\"#555\">estimated "
     << "bubble " << llvm::format("%.1f", 100 * sim.bubble)
     << "% (time: estimated work; F = forward, B = backward, W = weight "
        "gradients of microbatch n"
     << (sim.virtualStages > 1 ? ", .cK = the stage's chunk K" : "")
     << "; blank = idle)</text>\n";
  for (int64_t s = 0; s < sim.stages; ++s) {
    double y = top + static_cast<double>(s) * (rowHeight + gap);
    os << "<text x=\"8\" y=\"" << num(y + rowHeight / 2 + 4) << "\">stage " << s
       << "</text>\n"
       << "<rect x=\"" << num(left) << "\" y=\"" << num(y) << "\" width=\""
       << num(width) << "\" height=\"" << num(rowHeight)
       << "\" fill=\"#f2f2f2\"/>\n";
  }
  for (const ScheduledUnit &u : sim.units) {
    double x = left + u.begin * scale, w = (u.end - u.begin) * scale;
    double y = top + static_cast<double>(u.stage) * (rowHeight + gap);
    const char *fill = u.weight     ? "#b07aa1"
                       : u.backward ? (u.chunk > 0 ? "#8cc97f" : "#59a14f")
                                    : (u.chunk > 0 ? "#86a9d1" : "#4c78a8");
    std::string name = unitName(u);
    os << "<g><title>stage " << u.stage << " " << name << "</title><rect x=\""
       << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(w)
       << "\" height=\"" << num(rowHeight) << "\" fill=\"" << fill
       << "\" stroke=\"white\" stroke-width=\"1\"/>";
    if (w >= 5.5 * static_cast<double>(name.size()))
      os << "<text x=\"" << num(x + w / 2) << "\" y=\""
         << num(y + rowHeight / 2 + 3)
         << "\" text-anchor=\"middle\" font-size=\"9\" fill=\"white\">" << name
         << "</text>";
    os << "</g>\n";
  }
  double axis = top + static_cast<double>(sim.stages) * (rowHeight + gap);
  os << "<line x1=\"" << num(left) << "\" y1=\"" << num(axis) << "\" x2=\""
     << num(left + width) << "\" y2=\"" << num(axis) << "\" stroke=\"#333\"/>\n"
     << "<text x=\"" << num(left) << "\" y=\"" << num(axis + 16)
     << "\">0</text>\n"
     << "<text x=\"" << num(left + width) << "\" y=\"" << num(axis + 16)
     << "\" text-anchor=\"end\">span "
     << llvm::format("%.3g", sim.makespan / 1e9)
     << " GFLOP (estimated work, idle included)</text>\n"
     << "</svg>\n";
  return svg;
}
