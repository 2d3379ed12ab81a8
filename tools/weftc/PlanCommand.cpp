//===- PlanCommand.cpp - weftc plan ---------------------------------------===//
//
//   weftc plan MODEL.onnx [compile flags] --schedule-diagram FILE.svg
//
//   weftc plan MODEL.onnx --devices N [--cluster X] [--train ...]
//         [--explain | --json] [--top K]
//
// Without --schedule-diagram: the cost model's search (AutoPlan.h) over the
// plans the flags leave open, printed as a ranked table with why each mesh
// shape's best lost (--explain, the default) or as JSON (--json). The model
// is read for its structure only: external initializer data need not exist.
// With a pipeline the flags pin (--train --pp N ...), --schedule-diagram
// draws its schedule: the step is lowered through weft-pipeline and
// simulated (ScheduleDiagram.h).
//
//===----------------------------------------------------------------------===//
#include "tools/weftc/AutoPlan.h"
#include "tools/weftc/Commands.h"
#include "tools/weftc/CompileOptions.h"
#include "tools/weftc/ScheduleDiagram.h"

#include "frontends/onnx/OnnxImporter.h"
#include "passes/Passes.h"
#include "tools/Registration.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <string>
#include <vector>

using namespace weft;

static const char *const kPlanUsage =
    "usage: weftc plan MODEL.onnx --devices N [--cluster PRESET|FILE.json] "
    "[--train ...] [--explain] [--json] [--top K]\n"
    "          [--dp N] [--tp N] [--pp N] ... (pin those dimensions)\n"
    "       weftc plan MODEL.onnx --train --pp N [--dp N] [--tp N] "
    "[--microbatches M]\n"
    "          [--schedule gpipe|1f1b|interleaved] [--virtual-stages V] "
    "[compile flags]\n"
    "          --schedule-diagram FILE.svg\n";

static int fail(int code, const std::string &message) {
  llvm::errs() << "weftc: error: " << message << "\n";
  return code;
}

/// Writes `text` to `path` through a temporary file renamed over it.
static bool writeAtomically(const std::string &path, const std::string &text,
                            std::string &error) {
  std::string temp = path + ".tmp";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(temp, ec);
    if (ec) {
      error = "cannot write " + path + ": " + ec.message();
      return false;
    }
    os << text;
    os.close();
    if (os.has_error()) {
      error = "cannot write " + path + ": " + os.error().message();
      os.clear_error();
      llvm::sys::fs::remove(temp);
      return false;
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    llvm::sys::fs::remove(temp);
    error = "cannot write " + path + ": " + ec.message();
    return false;
  }
  return true;
}

/// The search: a ranked table (--explain, the default) or JSON (--json).
static int searchCommand(CompileOptions &opts, bool json, size_t top) {
  std::string error;
  if (!checkImplemented(opts, error))
    return fail(kExitBadInput, error);
  if (!opts.devicesGiven && opts.cluster.empty())
    return fail(kExitBadInput, "give --devices N (and --cluster PRESET|FILE."
                               "json; cpu-local by default)");
  // Pinned degrees narrow the search; `weftc plan` always searches.
  opts.autoPlan = true;
  Planning planning;
  if (!searchPlan(opts, planning, error))
    return fail(kExitBadInput, error);
  if (json)
    llvm::outs() << planner::plansJson(planning.search, planning.profile,
                                       planning.cluster, top);
  else
    llvm::outs() << planner::explainPlans(planning.search, planning.profile,
                                          planning.cluster, top,
                                          planning.model.get());
  return kExitOk;
}

int weft::runPlanCommand(int argc, char **argv) {
  // The plan command's own flags; the rest are weftc compile's.
  std::string diagram;
  bool json = false;
  size_t top = 10;
  std::vector<char *> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      llvm::outs() << kPlanUsage;
      return kExitOk;
    }
    if (!std::strcmp(argv[i], "--schedule-diagram")) {
      if (i + 1 >= argc)
        return fail(kExitBadInput, "--schedule-diagram needs a file name");
      diagram = argv[++i];
      continue;
    }
    if (!std::strncmp(argv[i], "--schedule-diagram=", 19)) {
      diagram = argv[i] + 19;
      continue;
    }
    if (!std::strcmp(argv[i], "--top")) {
      char *end = nullptr;
      long value = i + 1 < argc ? std::strtol(argv[i + 1], &end, 10) : 0;
      if (i + 1 >= argc || *end || value < 1)
        return fail(kExitBadInput, "--top needs a number >= 1");
      top = static_cast<size_t>(value);
      ++i;
      continue;
    }
    if (!std::strcmp(argv[i], "--explain"))
      continue; // the default output
    if (!std::strcmp(argv[i], "--json")) {
      json = true;
      continue;
    }
    rest.push_back(argv[i]);
  }
  CompileOptions opts;
  std::string error;
  if (!parseCompileOptions(static_cast<int>(rest.size()), rest.data(), opts,
                           error, /*needOutput=*/false)) {
    llvm::errs() << kPlanUsage;
    return fail(kExitBadInput, error);
  }
  if (!opts.output.empty())
    return fail(kExitBadInput, "weftc plan writes no bundle: drop -o");
  if (diagram.empty())
    return searchCommand(opts, json, top);
  if (json)
    return fail(kExitBadInput, "--json lists searched plans; it cannot be "
                               "combined with --schedule-diagram");
  if (!checkImplemented(opts, error) || !resolveDevices(opts, error))
    return fail(kExitBadInput, error);
  if (opts.pp.value_or(1) <= 1)
    return fail(kExitBadInput,
                "--schedule-diagram draws a pipeline: give --train --pp N "
                "(N > 1)");
  LoweringInput input;
  if (!importForLowering(opts, input, error))
    return fail(kExitBadInput, error);
  mlir::ModuleOp module = input.imported->module.get();
  mlir::ScopedDiagnosticHandler handler(input.context.get(), printDiagnostic);
  mlir::PassManager pm(input.context.get());
  if (mlir::failed(mlir::applyPassManagerCLOptions(pm)))
    return fail(kExitBadInput, "invalid pass manager options");
  addLoweringPasses(pm, opts, LowerUntil::Pipeline);
  if (mlir::failed(pm.run(module)))
    return fail(kExitBadInput, "cannot plan " + opts.model);

  ScheduleSimulation sim;
  // The schedule that ran: the one asked for, or the GPipe the pipeline
  // fell back to (a forward combining the microbatches on a later stage).
  std::string schedule = pipelineSchedule(opts);
  if (std::optional<PipelineFallback> ran = getPipelineFallback(module)) {
    llvm::errs() << "weftc: note: " << ran->schedule << " instead of "
                 << schedule << ": " << ran->reason << "\n";
    schedule = ran->schedule;
  }
  if (!simulateSchedule(module, schedule, sim, error))
    return fail(kExitFailure, error);
  std::string title =
      llvm::sys::path::filename(opts.model).str() +
      ": pp=" + std::to_string(sim.stages) + ", " + schedule +
      (sim.virtualStages > 1
           ? " (" + std::to_string(sim.virtualStages) + " chunks per stage)"
           : "") +
      ", " + std::to_string(sim.microbatches) + " microbatches";
  if (!writeAtomically(diagram, scheduleSvg(sim, title), error))
    return fail(kExitBadInput, error);
  double theory = static_cast<double>(sim.stages - 1) /
                  static_cast<double>(sim.virtualStages * sim.microbatches +
                                      sim.stages - 1);
  llvm::outs() << "weftc: wrote " << diagram << ": " << title
               << "; estimated bubble "
               << llvm::format("%.1f", 100 * sim.bubble) << "% ((p-1)/("
               << (sim.virtualStages > 1 ? "v" : "")
               << "m+p-1) = " << llvm::format("%.1f", 100 * theory) << "%)\n";
  return kExitOk;
}
