//===- Trainer.cpp - `weft train`: the training loop of a bundle ----------===//

#include "Trainer.h"

#include "Trace.h"

#include "Checkpoint.h"
#include "DataLoader.h"
#include "Progress.h"
#include "RankStart.h"

#include "weft/runtime/Comm.h"
#include "weft/runtime/Device.h"
#include "weft/runtime/Diagnostics.h"
#include "weft/runtime/FileUtil.h"
#include "weft/runtime/Float16.h"
#include "weft/runtime/Json.h"
#include "weft/runtime/LrSchedule.h"
#include "weft/runtime/Sha256.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sys/resource.h>
#include <unistd.h>

namespace weft {

//===----------------------------------------------------------------------===//
// Command line
//===----------------------------------------------------------------------===//

std::string trainUsage(const std::string &prog) {
  return "usage: " + prog +
         " --train [--bundle DIR] --data NAME=FILE.npy ... --steps K "
         "[--metrics FILE.jsonl] [--checkpoint-dir DIR] [--save-every K] "
         "[--resume] [--shuffle SEED] [--trace FILE.json]";
}

Status parseTrainOptions(int argc, char *const *argv, TrainOptions &out) {
  bool haveSteps = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      out.help = true;
      continue;
    }
    if (arg == "--train")
      continue;
    if (arg == "--resume") {
      out.resume = true;
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-')
      return Status::badUsage("unexpected argument '" + arg + "'");
    std::string flag, value;
    bool inlineValue = splitOptionValue(arg, flag, value);
    if (flag == "--input" || flag == "--output-dir" || flag == "--repeat" ||
        flag == "--warmup")
      return Status::badUsage(flag + " is for inference runs ('weft run'); "
                                     "training reads its batches with --data "
                                     "NAME=FILE.npy");
    if (flag != "--bundle" && flag != "--data" && flag != "--steps" &&
        flag != "--metrics" && flag != "--checkpoint-dir" &&
        flag != "--save-every" && flag != "--trace" && flag != "--shuffle")
      return Status::badUsage("unknown option '" + arg + "'");
    if (!inlineValue) {
      if (i + 1 >= argc)
        return Status::badUsage("option '" + flag + "' needs a value");
      value = argv[++i];
    }
    if (flag == "--bundle") {
      if (value.empty())
        return Status::badUsage("--bundle needs a directory");
      out.bundleDir = value;
    } else if (flag == "--data") {
      size_t sep = value.find('=');
      if (sep == std::string::npos || sep == 0 || sep + 1 == value.size())
        return Status::badUsage("--data expects NAME=FILE.npy, got '" + value +
                                "'");
      out.data.emplace_back(value.substr(0, sep), value.substr(sep + 1));
    } else if (flag == "--steps") {
      if (!parseInt64(value, out.steps) || out.steps < 1)
        return Status::badUsage("--steps expects a positive integer, got '" +
                                value + "'");
      haveSteps = true;
    } else if (flag == "--save-every") {
      if (!parseInt64(value, out.saveEvery) || out.saveEvery < 1)
        return Status::badUsage(
            "--save-every expects a positive integer, got '" + value + "'");
    } else if (flag == "--shuffle") {
      errno = 0;
      char *end = nullptr;
      unsigned long long seed = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || value[0] == '-' || errno || !end || *end)
        return Status::badUsage(
            "--shuffle expects a seed (a non-negative integer), got '" + value +
            "'");
      out.shuffle = true;
      out.shuffleSeed = seed;
    } else if (flag == "--metrics") {
      if (value.empty())
        return Status::badUsage("--metrics needs a file name");
      out.metricsFile = value;
    } else if (flag == "--trace") {
      if (value.empty())
        return Status::badUsage("--trace needs a file name");
      out.traceFile = value;
    } else { // --checkpoint-dir
      if (value.empty())
        return Status::badUsage("--checkpoint-dir needs a directory");
      out.checkpointDir = value;
    }
  }
  if (out.help)
    return Status::success();
  if (!haveSteps)
    return Status::badUsage("--steps is required (the total number of "
                            "training steps)");
  if (out.saveEvery > 0 && out.checkpointDir.empty())
    return Status::badUsage("--save-every needs --checkpoint-dir");
  if (out.resume && out.checkpointDir.empty())
    return Status::badUsage("--resume needs --checkpoint-dir");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// The loop
//===----------------------------------------------------------------------===//

static double readScalar(const HostTensor &t) {
  const void *p = t.data.data();
  switch (t.dtype) {
  case WEFT_F32: {
    float f;
    std::memcpy(&f, p, sizeof f);
    return f;
  }
  case WEFT_F64: {
    double d;
    std::memcpy(&d, p, sizeof d);
    return d;
  }
  case WEFT_F16:
  case WEFT_BF16: {
    uint16_t h;
    std::memcpy(&h, p, sizeof h);
    return t.dtype == WEFT_F16 ? halfToFloat(h) : bfloat16ToFloat(h);
  }
  default:
    return NAN;
  }
}

static JsonValue finiteOrNull(double v) {
  return std::isfinite(v) ? JsonValue::number(v) : JsonValue::null();
}

namespace {

/// Everything a run needs, checked before anything is written.
struct TrainSetup {
  Executor executor;
  DataLoader data;
  int64_t startStep = 0;
  int64_t position = 0;
  double lastLoss = NAN;
  /// The cost model's predictions from the bundle's manifest (NaN: none).
  double predictedStepTime = NAN, predictedMemory = NAN;
  /// Resident bytes before the model's buffers exist (libraries, MPI).
  int64_t baselineBytes = 0;
  std::string predictionCluster;
  /// The base learning rate and its schedule (manifest.json's "optimizer";
  /// NaN: a bundle that does not say).
  double lr = NAN;
  LrSchedule schedule;
};

/// manifest.json's "optimizer": the rate and schedule each update takes.
void readOptimizer(const JsonValue &root, TrainSetup &setup) {
  const JsonValue *opt = root.get("optimizer");
  if (!opt || !opt->isObject())
    return;
  const JsonValue *lr = opt->get("lr");
  const JsonValue *kind = opt->get("lr_schedule");
  const JsonValue *warmup = opt->get("warmup_steps");
  const JsonValue *decay = opt->get("decay_steps");
  const JsonValue *minLr = opt->get("min_lr");
  if (!lr || !lr->isNumber() || !(lr->asDouble() > 0) || !kind ||
      !kind->isString() || !warmup || !warmup->isInteger() || !decay ||
      !decay->isInteger() || !minLr || !minLr->isNumber())
    return;
  LrSchedule s;
  if (!lrScheduleKindNamed(kind->asString(), s.kind))
    return;
  s.warmupSteps = warmup->asInt();
  s.decaySteps = decay->asInt();
  s.minLrRatio = minLr->asDouble() / lr->asDouble();
  setup.lr = lr->asDouble();
  setup.schedule = s;
}

/// Reads manifest.json's "predicted" step time and memory, if any: a bundle
/// without them (or an unreadable manifest) just has no prediction.
void readPrediction(const std::string &bundle, TrainSetup &setup) {
  std::string text, error;
  JsonValue root;
  if (!readFile(joinPath(bundle, "manifest.json"), text, error) ||
      !parseJson(text, root, error))
    return;
  readOptimizer(root, setup);
  const JsonValue *predicted = root.get("predicted");
  const JsonValue *model = predicted ? predicted->get("cost_model") : nullptr;
  if (!model || !model->isObject())
    return;
  if (const JsonValue *t = model->get("step_time_s"); t && t->isNumber())
    setup.predictedStepTime = t->asDouble();
  if (const JsonValue *m = model->get("memory_bytes_per_rank");
      m && m->isNumber())
    setup.predictedMemory = m->asDouble();
  if (const JsonValue *c = model->get("cluster"); c && c->isString())
    setup.predictionCluster = c->asString();
}

/// This process's resident bytes now (0 if unknown).
int64_t residentBytes() {
  std::string text, error;
  if (!readFile("/proc/self/statm", text, error))
    return 0;
  long long pages = 0, resident = 0;
  if (std::sscanf(text.c_str(), "%lld %lld", &pages, &resident) != 2)
    return 0;
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

Status setUp(const TrainOptions &options, const char *signatureJson,
             WeftModelRunFn run, TrainSetup &setup,
             std::unique_ptr<CheckpointStore> &store) {
  Executor &executor = setup.executor;
  Status status = executor.init(signatureJson ? signatureJson : "", run);
  if (!status.ok())
    return status;
  if (!executor.signature().isTraining())
    return Status::badInput(
        "this bundle was compiled for inference: 'weft train' needs a bundle "
        "compiled with 'weftc compile --train'");
  std::string bundle = options.bundleDir;
  if (bundle.empty()) {
    bundle = executableDirectory();
    if (bundle.empty())
      return Status::failure("cannot find the executable's directory; pass "
                             "--bundle DIR");
  } else if (!isDirectory(bundle)) {
    return Status::badInput("bundle directory '" + bundle + "' does not exist");
  }
  readPrediction(bundle, setup);
  int64_t rank = 0;
  if (!(status = startRanks(executor.signature(), bundle, rank)).ok())
    return status;
  // MPI is up; the parameters, optimizer state and arena are not yet.
  setup.baselineBytes = residentBytes();
  if (!(status = executor.loadParams(joinPath(bundle, paramsFileName(rank))))
           .ok() ||
      !(status = setup.data.open(executor.signature(), options.data)).ok())
    return status;
  if (options.shuffle)
    setup.data.setShuffle(options.shuffleSeed);

  if (!options.checkpointDir.empty()) {
    // Several ranks: one checkpoint directory, a state file per rank.
    store.reset(new CheckpointStore(
        options.checkpointDir, signatureJson ? signatureJson : "", comm::rank(),
        executor.signature().worldSize));
    store->setDataOrder(setup.data.order());
    if (options.resume) {
      CheckpointInfo info;
      if (!(status = store->load(executor, info)).ok())
        return status;
      if (info.dataOrder != setup.data.order())
        return Status::badInput(
                   "checkpoint " + info.path + " read its data in the order " +
                   info.dataOrder + ", this run in the order " +
                   setup.data.order() +
                   ": resume with the --shuffle it was trained with (or "
                   "without, for sequential)")
            .everyRank();
      if (info.step > options.steps)
        return Status::badInput("checkpoint " + info.path + " is at step " +
                                std::to_string(info.step) +
                                ", beyond --steps " +
                                std::to_string(options.steps) +
                                " (--steps is the total number of steps)");
      setup.startStep = info.step;
      setup.position = info.dataPosition;
      setup.lastLoss = info.loss;
    } else {
      std::string which;
      if (store->hasCheckpoint(which))
        return Status::badInput(
            "checkpoint directory " + options.checkpointDir +
            " already holds a checkpoint (" + which +
            "): pass --resume to continue from it, or use another directory");
    }
  }
  return Status::success();
}

} // namespace

int trainMain(int argc, char **argv, const char *signatureJson,
              WeftModelRunFn run) {
  std::string prog = argc > 0 ? fileName(argv[0]) : "model";
  std::string usage = trainUsage(prog);
  TrainOptions options;
  Status status = parseTrainOptions(argc > 0 ? argc - 1 : 0,
                                    argc > 0 ? argv + 1 : argv, options);
  if (!status.ok())
    return reportStatus(status, usage);
  if (options.help) {
    std::printf("%s\n", usage.c_str());
    return 0;
  }

  TrainSetup setup;
  std::unique_ptr<CheckpointStore> store;
  status = setUp(options, signatureJson, run, setup, store);
  // Ranks fail together: one rank's bad input stops all of them before
  // anything is written (the others exit with its code, silently).
  status = agreeAcrossRanks(status);
  const bool leader = comm::rank() == 0;
  // A failure every rank knows of ends them together; one rank's failure in
  // the middle of the run (its metrics file) stops the others through the
  // launcher, as they may be waiting for it in a collective.
  auto finish = [&](const Status &s) {
    setup.executor.finishDevice();
    int code = reportStatus(s, usage);
    comm::finalize();
    return code;
  };
  auto abandon = [&](const Status &s) {
    int code = reportStatus(s, usage);
    if (comm::active())
      comm::abortAll(code);
    return code;
  };
  if (!status.ok())
    return finish(status);
  Executor &executor = setup.executor;
  const int64_t batch = setup.data.batch();
  const int64_t total = options.steps;

  // Only now is anything written.
  if (store && leader) {
    std::string error;
    if (!makeDirectories(store->dir(), error))
      status = Status::badInput("--checkpoint-dir: " + error);
  }
  MetricsWriter metrics;
  if (status.ok() && leader && !options.metricsFile.empty())
    status = metrics.open(options.metricsFile,
                          options.resume ? setup.startStep : -1);
  if (status.ok() && leader && !options.traceFile.empty()) {
    std::string dir = parentPath(options.traceFile);
    if (!isDirectory(dir.empty() ? "." : dir))
      status =
          Status::badInput("--trace: directory '" + dir + "' does not exist");
  }
  if (status.ok())
    status = executor.allocateInputs();
  if (status.ok())
    status = executor.prepare();
  if (!(status = agreeAcrossRanks(status)).ok())
    return finish(status);
  executor.startDevice();
  if (!options.traceFile.empty())
    trace::start(executor.signature(),
                 trace::stageOf(executor.signature(), comm::rank()),
                 executor.arenaBytes());
  std::vector<HostTensor *> inputs;
  for (size_t i = 0; i < executor.signature().inputs.size(); ++i)
    inputs.push_back(&executor.mutableInput(i));

  ProgressDisplay progress(leader ? STDERR_FILENO : -1);
  bool warnedNonFinite = false;
  int64_t position = setup.position;
  double lastLoss = setup.lastLoss, timeSum = 0;
  int64_t stepsRun = 0;
  std::vector<double> stepTimes;
  if (setup.startStep == total && leader)
    std::fprintf(stderr,
                 "weft: note: the checkpoint is already at step %lld; "
                 "nothing to train\n",
                 static_cast<long long>(total));
  for (int64_t step = setup.startStep + 1; step <= total; ++step) {
    auto start = std::chrono::steady_clock::now();
    setup.data.fill(position, inputs);
    trace::beginStep(step);
    executor.run();
    trace::endStep();
    auto end = std::chrono::steady_clock::now();
    position += batch;
    double seconds = std::chrono::duration<double>(end - start).count();
    double rate = seconds > 0 ? static_cast<double>(batch) / seconds : 0;
    lastLoss = readScalar(executor.output(0));
    timeSum += seconds;
    stepTimes.push_back(seconds);
    ++stepsRun;
    if (!std::isfinite(lastLoss) && !warnedNonFinite) {
      warnedNonFinite = true;
      progress.warn("the loss is not finite (" + std::to_string(lastLoss) +
                    ") at step " + std::to_string(step) +
                    "; training continues");
    }
    const double lr = std::isnan(setup.lr)
                          ? NAN
                          : scheduledLr(setup.schedule, setup.lr, step);
    if (!(status = metrics.write(step, lastLoss, seconds, rate, lr)).ok()) {
      progress.clear();
      return abandon(status);
    }
    double mean = timeSum / static_cast<double>(stepsRun);
    progress.update(step, total, lastLoss,
                    mean > 0 ? static_cast<double>(batch) / mean : 0,
                    mean * static_cast<double>(total - step),
                    step == total || step == setup.startStep + 1);
    bool due = store && (step == total || (options.saveEvery > 0 &&
                                           step % options.saveEvery == 0));
    if (due) {
      executor.fetchParams(); // a device's state comes back only here
      if (!(status = store->save(executor, step, position, lastLoss)).ok()) {
        progress.clear();
        return finish(status); // every rank has this outcome
      }
    }
  }
  progress.clear();
  metrics.close();

  double mean = stepsRun ? timeSum / static_cast<double>(stepsRun) : NAN;
  // Measured peak memory: the largest resident set over the ranks or, for
  // a bundle on a GPU, the most device memory the model held (its buffers,
  // the kernels' scratch and workspace), largest rank.
  struct rusage usage_ {};
  getrusage(RUSAGE_SELF, &usage_);
  const int64_t devicePeak = deviceBackend().peakMemoryBytes();
  const bool onDevice = devicePeak >= 0;
  int64_t peak = comm::maxOverRanks(
      onDevice ? devicePeak : static_cast<int64_t>(usage_.ru_maxrss) * 1024);
  // The baseline of the rank with the largest peak is not known here; the
  // largest baseline is the conservative choice. Device memory has none.
  const int64_t baseline =
      onDevice ? 0 : comm::maxOverRanks(setup.baselineBytes);
  trace::Breakdown time;
  std::string traceError;
  bool traced = !options.traceFile.empty();
  bool traceWritten = trace::finish(options.traceFile, time, traceError);
  executor.finishDevice();
  comm::barrier();
  comm::finalize();
  if (!leader)
    return 0;
  JsonValue summary = JsonValue::object();
  summary.set("world_size", JsonValue::integer(executor.signature().worldSize));
  summary.set("peak_memory_bytes", JsonValue::integer(peak));
  summary.set("memory_measured",
              JsonValue::string(onDevice ? "device" : "resident set"));
  summary.set("steps", JsonValue::integer(total));
  summary.set("final_loss", finiteOrNull(lastLoss));
  summary.set("mean_step_time_s", finiteOrNull(mean));
  summary.set("samples_per_s",
              finiteOrNull(mean > 0 ? static_cast<double>(batch) / mean : NAN));
  // The steady state: the median step after the first (which warms up).
  double median = NAN;
  if (!stepTimes.empty()) {
    std::vector<double> steady(stepTimes.begin() + (stepTimes.size() > 1),
                               stepTimes.end());
    std::nth_element(steady.begin(), steady.begin() + steady.size() / 2,
                     steady.end());
    median = steady[steady.size() / 2];
  }
  summary.set("median_step_time_s", finiteOrNull(median));
  if (std::isfinite(setup.predictedStepTime)) {
    // The cost model's predictions next to what was measured, so users see
    // its error.
    JsonValue p = JsonValue::object();
    p.set("cluster", JsonValue::string(setup.predictionCluster));
    p.set("step_time_s", JsonValue::number(setup.predictedStepTime));
    p.set("step_time_error",
          finiteOrNull(median / setup.predictedStepTime - 1.0));
    // The model's memory is what the run added to the process's baseline
    // (libraries, MPI): the peak resident set above it, largest rank.
    const int64_t modelPeak = std::max<int64_t>(0, peak - baseline);
    if (std::isfinite(setup.predictedMemory)) {
      p.set("memory_bytes_per_rank", JsonValue::number(setup.predictedMemory));
      p.set("measured_memory_bytes_per_rank", JsonValue::integer(modelPeak));
      p.set("memory_error",
            finiteOrNull(
                static_cast<double>(modelPeak) / setup.predictedMemory - 1.0));
    }
    summary.set("predicted", std::move(p));
    char what[160];
    if (onDevice)
      std::snprintf(what, sizeof what,
                    "peak %s memory of the model's buffers, kernel scratch "
                    "and GEMM workspace, largest rank",
                    deviceBackend().target());
    else
      std::snprintf(what, sizeof what,
                    "peak resident set above the process's %.1f MiB before "
                    "the model loaded, largest rank",
                    static_cast<double>(baseline) / (1 << 20));
    std::fprintf(stderr,
                 "weft: step time %.4g s measured (median), %.4g s predicted "
                 "by the cost model for %s (%+.0f%%); memory %.1f MiB "
                 "measured (%s), %.1f MiB predicted\n",
                 median, setup.predictedStepTime,
                 setup.predictionCluster.c_str(),
                 100.0 * (median / setup.predictedStepTime - 1.0),
                 static_cast<double>(modelPeak) / (1 << 20), what,
                 setup.predictedMemory / (1 << 20));
  }
  if (traced) {
    JsonValue t = JsonValue::object();
    t.set("compute_ms", JsonValue::number(time.computeMs));
    t.set("p2p_ms", JsonValue::number(time.p2pMs));
    t.set("collectives_ms", JsonValue::number(time.collectiveMs));
    t.set("waiting_ms", JsonValue::number(time.waitMs));
    t.set("step_ms", JsonValue::number(time.stepMs));
    JsonValue arenas = JsonValue::array();
    for (uint64_t b : time.arenaBytes)
      arenas.push(JsonValue::integer(static_cast<int64_t>(b)));
    t.set("arena_bytes_per_rank", std::move(arenas));
    if (time.bubble >= 0) {
      t.set("bubble_measured", JsonValue::number(time.bubble));
      t.set("bubble_theory", JsonValue::number(time.bubbleTheory));
    }
    summary.set("time_per_step", std::move(t));
  }
  std::printf("%s\n", summary.dump().c_str());
  std::fflush(stdout);
  if (!traceWritten) {
    std::fprintf(stderr, "weft: error: %s\n", traceError.c_str());
    return kExitFailure;
  }
  return 0;
}

} // namespace weft
