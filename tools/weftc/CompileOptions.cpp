//===- CompileOptions.cpp - Flags of weftc compile ------------------------===//
#include "tools/weftc/CompileOptions.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>

using namespace weft;

const char *const weft::kCompileUsage =
    "usage: weftc compile MODEL.onnx -o BUNDLE [--target cpu|cuda] "
    "[--devices N]\n"
    "          [--cluster PRESET|FILE.json] [--auto] [--dp N] [--tp N] [--pp "
    "N]\n"
    "          [--zero 0|1|2|3] [--microbatches M] [--schedule "
    "gpipe|1f1b|interleaved|zb-h1]\n"
    "          [--virtual-stages V] [--stage-boundaries NAME,NAME...]\n"
    "          [--recompute none|selective|full]\n"
    "          [--train] [--loss NAME|mse|cross_entropy] [--loss-target "
    "INPUT]\n"
    "          [--freeze GLOB]... [--optimizer adamw|sgd] [--lr F] "
    "[--weight-decay F]\n"
    "          [--beta1 F] [--beta2 F] [--eps F] [--momentum F] "
    "[--clip-grad-norm F]\n"
    "          [--lr-schedule constant|linear|cosine] [--warmup-steps W] "
    "[--decay-steps D]\n"
    "          [--min-lr F]\n"
    "          [--dtype fp32|bf16] [--bucket-mb MB]\n"
    "          [--sequence-parallel | --no-sequence-parallel]\n"
    "          [--fuse elementwise|none] [--align-products on|off]\n"
    "          [--fuse-attention on|off] [--fuse-recompute on|off]\n"
    "          [--attention-seq-major on|off] [--fold-norm-casts on|off]\n"
    "          [--merge-products on|off]\n"
    "          [--input-shape NAME=D0xD1x...]... [--mlir-print-ir-after-all] "
    "...\n"
    "debugging aid: --emit-gradients [--freeze GLOB]... compiles the "
    "gradient of the\n"
    "          model's first output (a scalar loss) instead: the bundle "
    "returns 'loss'\n"
    "          and 'grad:<param>' for every float initializer not frozen\n";

static bool parseInt(const std::string &text, int64_t &out) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno || *end)
    return false;
  out = v;
  return true;
}

static bool parseDouble(const std::string &text, double &out) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return !errno && !*end;
}

bool weft::parseInputShape(const std::string &spec, std::string &name,
                           std::vector<int64_t> &dims, std::string &error) {
  size_t eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0) {
    error = "--input-shape expects NAME=D0xD1x..., got '" + spec + "'";
    return false;
  }
  name = spec.substr(0, eq);
  dims.clear();
  std::string rest = spec.substr(eq + 1);
  size_t pos = 0;
  while (pos < rest.size()) {
    size_t x = rest.find('x', pos);
    std::string part = rest.substr(pos, x == std::string::npos ? x : x - pos);
    int64_t d;
    if (!parseInt(part, d) || d <= 0) {
      error = "--input-shape " + spec + ": '" + part +
              "' is not a positive dimension";
      return false;
    }
    dims.push_back(d);
    if (x == std::string::npos)
      break;
    pos = x + 1;
    if (pos == rest.size()) {
      error = "--input-shape " + spec + ": trailing 'x'";
      return false;
    }
  }
  return true;
}

bool weft::parseCompileOptions(int argc, char **argv, CompileOptions &opts,
                               std::string &error, bool needOutput) {
  using Setter = std::function<bool(const std::string &)>;
  auto intFlag = [&](std::optional<int64_t> &slot, int64_t min) -> Setter {
    return [&slot, min](const std::string &v) {
      int64_t x;
      if (!parseInt(v, x) || x < min)
        return false;
      slot = x;
      return true;
    };
  };
  auto floatFlag = [&](std::optional<double> &slot) -> Setter {
    return [&slot](const std::string &v) {
      double x;
      if (!parseDouble(v, x))
        return false;
      slot = x;
      return true;
    };
  };
  auto oneOf = [](std::string &slot,
                  std::vector<std::string> allowed) -> Setter {
    return [&slot, allowed](const std::string &v) {
      for (const std::string &a : allowed)
        if (v == a) {
          slot = v;
          return true;
        }
      return false;
    };
  };
  auto text = [](std::string &slot) -> Setter {
    return [&slot](const std::string &v) {
      slot = v;
      return !v.empty();
    };
  };
  std::optional<int64_t> devices;
  std::map<std::string, Setter> valued = {
      {"-o", text(opts.output)},
      {"--target", oneOf(opts.target, {"cpu", "cuda"})},
      {"--devices", intFlag(devices, 1)},
      {"--cluster", text(opts.cluster)},
      {"--dp", intFlag(opts.dp, 1)},
      {"--tp", intFlag(opts.tp, 1)},
      {"--pp", intFlag(opts.pp, 1)},
      {"--zero",
       [&](const std::string &v) {
         int64_t x;
         if (!parseInt(v, x) || x < 0 || x > 3)
           return false;
         opts.zero = x;
         return true;
       }},
      {"--microbatches", intFlag(opts.microbatches, 1)},
      {"--schedule",
       [&, set = oneOf(opts.schedule,
                       {"gpipe", "1f1b", "interleaved", "zb-h1"})](
           const std::string &v) {
         opts.scheduleGiven = true;
         return set(v);
       }},
      {"--virtual-stages", intFlag(opts.virtualStages, 1)},
      {"--stage-boundaries",
       [&](const std::string &v) {
         llvm::SmallVector<llvm::StringRef> parts;
         llvm::StringRef(v).split(parts, ',');
         for (llvm::StringRef part : parts) {
           if (part.empty())
             return false;
           opts.stageBoundaries.push_back(part.str());
         }
         return true;
       }},
      {"--recompute",
       [&, set = oneOf(opts.recompute, {"none", "selective", "full"})](
           const std::string &v) {
         opts.recomputeGiven = true;
         return set(v);
       }},
      {"--loss", text(opts.loss)},
      {"--loss-target", text(opts.lossTarget)},
      {"--freeze",
       [&](const std::string &v) {
         opts.freeze.push_back(v);
         return !v.empty();
       }},
      {"--optimizer", oneOf(opts.optimizer, {"adamw", "sgd"})},
      {"--lr", floatFlag(opts.lr)},
      {"--weight-decay", floatFlag(opts.weightDecay)},
      {"--beta1", floatFlag(opts.beta1)},
      {"--beta2", floatFlag(opts.beta2)},
      {"--eps", floatFlag(opts.eps)},
      {"--momentum", floatFlag(opts.momentum)},
      {"--clip-grad-norm", floatFlag(opts.clipGradNorm)},
      {"--lr-schedule", oneOf(opts.lrSchedule, {"constant", "linear", "cosine"})},
      {"--warmup-steps", intFlag(opts.warmupSteps, 0)},
      {"--decay-steps", intFlag(opts.decaySteps, 1)},
      {"--min-lr", floatFlag(opts.minLr)},
      {"--dtype", oneOf(opts.dtype, {"fp32", "bf16"})},
      {"--fuse", oneOf(opts.fuse, {"elementwise", "none"})},
      {"--align-products", oneOf(opts.alignProducts, {"on", "off"})},
      {"--fuse-attention", oneOf(opts.fuseAttention, {"on", "off"})},
      {"--fuse-recompute", oneOf(opts.fuseRecompute, {"on", "off"})},
      {"--attention-seq-major", oneOf(opts.attentionSeqMajor, {"on", "off"})},
      {"--fold-norm-casts", oneOf(opts.foldNormCasts, {"on", "off"})},
      {"--merge-products", oneOf(opts.mergeProducts, {"on", "off"})},
      {"--bucket-mb",
       [&](const std::string &v) {
         double mb;
         if (!parseDouble(v, mb) || !(mb > 0))
           return false;
         opts.bucketMb = mb;
         return true;
       }},
      {"--input-shape",
       [&](const std::string &v) {
         std::string name;
         std::vector<int64_t> dims;
         if (!parseInputShape(v, name, dims, error))
           return false;
         opts.inputShapes[name] = dims;
         return true;
       }},
  };

  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      opts.help = true;
      return true;
    }
    if (arg == "--auto") {
      opts.autoPlan = true;
      continue;
    }
    if (arg == "--train") {
      opts.train = true;
      continue;
    }
    if (arg == "--sequence-parallel") {
      opts.sequenceParallel = true;
      continue;
    }
    if (arg == "--no-sequence-parallel") {
      opts.noSequenceParallel = true;
      continue;
    }
    if (arg == "--emit-gradients") {
      opts.emitGradients = true;
      continue;
    }
    if (arg.rfind("--mlir-", 0) == 0) {
      opts.mlirFlags.push_back(arg);
      continue;
    }
    std::string value;
    bool inlineValue = false;
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      inlineValue = true;
    }
    auto it = valued.find(arg);
    if (it == valued.end()) {
      if (arg.rfind("-", 0) == 0 && arg.size() > 1) {
        error = "unknown option '" + arg + "'";
        return false;
      }
      if (!opts.model.empty()) {
        error = "more than one model given ('" + opts.model + "' and '" + arg +
                "')";
        return false;
      }
      opts.model = arg;
      continue;
    }
    if (!inlineValue) {
      if (i + 1 >= argc) {
        error = "option '" + arg + "' needs a value";
        return false;
      }
      value = argv[++i];
    }
    error.clear();
    if (!it->second(value)) {
      if (error.empty())
        error = "invalid value '" + value + "' for option '" + arg + "'";
      return false;
    }
  }
  if (opts.model.empty()) {
    error = "no model given";
    return false;
  }
  if (needOutput && opts.output.empty()) {
    error = "no output bundle given (-o BUNDLE)";
    return false;
  }
  if (opts.emitGradients && opts.train) {
    error = "--emit-gradients (a debugging aid) cannot be combined with "
            "--train";
    return false;
  }
  if (devices) {
    opts.devices = *devices;
    opts.devicesGiven = true;
  }
  return true;
}

std::string weft::pipelineSchedule(const CompileOptions &opts) {
  if (opts.pp.value_or(1) <= 1)
    return "none";
  if (!opts.schedule.empty())
    return opts.schedule;
  return opts.virtualStages.value_or(1) > 1 ? "interleaved" : "1f1b";
}

int64_t weft::pipelineVirtualStages(const CompileOptions &opts) {
  if (pipelineSchedule(opts) != "interleaved")
    return 1;
  return opts.virtualStages.value_or(2);
}

bool weft::checkImplemented(const CompileOptions &opts, std::string &error) {
  const int64_t pp = opts.pp.value_or(1);
  if (pp == 1 && (!opts.schedule.empty() || !opts.stageBoundaries.empty())) {
    error = "--schedule and --stage-boundaries describe a pipeline: they "
            "need --pp > 1";
    return false;
  }
  const int64_t virtualStages = opts.virtualStages.value_or(1);
  if (virtualStages < 1) {
    error = "--virtual-stages must be at least 1, got " +
            std::to_string(virtualStages);
    return false;
  }
  if (virtualStages > 1 && pp == 1) {
    error = "--virtual-stages cuts each pipeline stage into chunks: it "
            "needs --pp > 1";
    return false;
  }
  if (virtualStages > 1 && !opts.schedule.empty() &&
      opts.schedule != "interleaved") {
    error = "--virtual-stages " + std::to_string(virtualStages) +
            " needs --schedule interleaved, not " + opts.schedule;
    return false;
  }
  if (opts.schedule == "interleaved" && opts.virtualStages &&
      virtualStages == 1) {
    error = "--schedule interleaved needs --virtual-stages of at least 2";
    return false;
  }
  if (pipelineSchedule(opts) == "interleaved" &&
      opts.microbatches.value_or(pp) % pp != 0) {
    error = "--schedule interleaved runs microbatches in groups of --pp: "
            "--microbatches " +
            std::to_string(*opts.microbatches) + " is not a multiple of " +
            std::to_string(pp);
    return false;
  }
  if (opts.microbatches.value_or(1) < 1) {
    error = "--microbatches must be at least 1, got " +
            std::to_string(*opts.microbatches);
    return false;
  }
  if (opts.recompute != "none" && !opts.train) {
    error = "--recompute trades compute for activation memory in training: "
            "it needs --train";
    return false;
  }
  // Training options only mean something with --train (--freeze also
  // selects what --emit-gradients differentiates).
  bool trainingOptions = !opts.loss.empty() || !opts.lossTarget.empty() ||
                         !opts.optimizer.empty() || opts.lr ||
                         opts.weightDecay || opts.beta1 || opts.beta2 ||
                         opts.eps || opts.momentum || opts.clipGradNorm ||
                         !opts.lrSchedule.empty() || opts.warmupSteps ||
                         opts.decaySteps || opts.minLr;
  if (!opts.train &&
      (trainingOptions || (!opts.freeze.empty() && !opts.emitGradients))) {
    error = "training options need --train";
    return false;
  }
  if (opts.optimizer == "sgd" && !opts.lr) {
    error = "--optimizer sgd needs --lr (torch.optim.SGD has no default "
            "learning rate)";
    return false;
  }
  const bool decays =
      opts.lrSchedule == "linear" || opts.lrSchedule == "cosine";
  if (decays && !opts.decaySteps) {
    error = "--lr-schedule " + opts.lrSchedule +
            " needs --decay-steps D: the update at which the rate reaches "
            "--min-lr (usually the run's total steps)";
    return false;
  }
  if (!decays && (opts.decaySteps || opts.minLr)) {
    error = std::string(opts.decaySteps ? "--decay-steps" : "--min-lr") +
            " belongs to --lr-schedule linear or cosine";
    return false;
  }
  if (decays && *opts.decaySteps <= opts.warmupSteps.value_or(0)) {
    error = "--decay-steps " + std::to_string(*opts.decaySteps) +
            " must exceed --warmup-steps " +
            std::to_string(opts.warmupSteps.value_or(0));
    return false;
  }
  if (opts.minLr && (*opts.minLr < 0 || *opts.minLr > opts.lr.value_or(1e-3))) {
    error = "--min-lr must lie between 0 and the learning rate (--lr)";
    return false;
  }
  if (opts.optimizer != "sgd" && opts.momentum) {
    error = "--momentum is an option of --optimizer sgd";
    return false;
  }
  return true;
}

bool weft::resolveDevices(CompileOptions &opts, std::string &error) {
  int64_t dp = opts.dp.value_or(1), tp = opts.tp.value_or(1),
          pp = opts.pp.value_or(1);
  int64_t product = dp * tp * pp;
  if (opts.zero.value_or(0) > 0 && (!opts.train || dp == 1)) {
    error = "--zero " + std::to_string(*opts.zero) +
            " shards optimizer state over data-parallel ranks: it needs "
            "--train and --dp > 1";
    return false;
  }
  if (opts.sequenceParallel && opts.noSequenceParallel) {
    error = "--sequence-parallel and --no-sequence-parallel contradict each "
            "other: give one";
    return false;
  }
  if (opts.sequenceParallel && tp == 1) {
    error = "--sequence-parallel splits activations over the tensor-parallel "
            "ranks: it needs --tp > 1";
    return false;
  }
  if (opts.devices == 1)
    opts.devices = product;
  if (product != opts.devices) {
    error = "--dp " + std::to_string(dp) + " x --tp " + std::to_string(tp) +
            " x --pp " + std::to_string(pp) + " = " + std::to_string(product) +
            " devices, but --devices is " + std::to_string(opts.devices);
    return false;
  }
  return true;
}
