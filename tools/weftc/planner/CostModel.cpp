//===- CostModel.cpp - Predicted step time and memory of a plan -----------===//
#include "tools/weftc/planner/CostModel.h"

#include "passes/PipelineSchedule.h"

#include "tools/weftc/planner/Formulas.h"
#include "tools/weftc/planner/GemmModel.h"
#include "tools/weftc/planner/SharedCores.h"
#include "weft/runtime/CorePlacement.h"

#include "passes/StageCuts.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "llvm/Support/raw_ostream.h"

using namespace weft::planner;

std::string PlanChoice::describe() const {
  std::string text = "dp=" + std::to_string(dp) + " tp=" + std::to_string(tp) +
                     (sequenceParallel ? " sp" : "") +
                     " pp=" + std::to_string(pp);
  if (zero)
    text += " zero=" + std::to_string(zero);
  if (microbatches > 1)
    text += " M=" + std::to_string(microbatches);
  if (pp > 1)
    text += " " + schedule +
            (virtualStages > 1 ? " V=" + std::to_string(virtualStages) : "");
  if (recompute != "none")
    text += " recompute=" + recompute;
  return text;
}

double CostModel::weightFetch(const TpProfile &p, int64_t pp,
                              int64_t microbatches) const {
  if (cluster.weightStreamBandwidth <= 0)
    return 0.0;
  double state = 0;
  for (const UnitBytes &u : p.units)
    state += u.params + u.gradients + u.optimizer;
  if (state / static_cast<double>(std::max<int64_t>(pp, 1)) <=
      cluster.privateCacheBytes)
    return 0.0;
  return 1.0 / (cluster.weightStreamBandwidth *
                static_cast<double>(std::max<int64_t>(microbatches, 1)));
}

double CostModel::opTime(const OpRecord &op, double scale, int64_t ranks,
                         double fetch) const {
  double flops = op.batch ? op.flops * scale : op.flops;
  // A CPU reads each line it writes (write-allocate): results cost twice.
  double traffic = op.bytes + (cluster.kind == "cpu" ? op.resultBytes : 0.0);
  double bytes = op.batch ? traffic * scale : traffic;
  double rate;
  if (op.product) {
    const double peak = cluster.rankPeakFlops(op.bf16 ? "bf16" : "fp32", ranks);
    auto measured = cluster.kernelEfficiency.find(profile.kernels[op.kernel]);
    if (measured != cluster.kernelEfficiency.end()) {
      rate = peak * measured->second;
    } else {
      // Below the tile size a GEMM wastes lanes: the rate falls with its
      // smallest dimension.
      double minDim = op.minDimScales ? op.minDim * scale : op.minDim;
      double skinny = skinnyFactor(minDim, cluster.gemmFullDim);
      rate = peak * cluster.gemmEfficiencyAt(flops) * skinny;
    }
  } else {
    // Element-wise work, reductions, normalizations: vectorized, but a
    // quarter of the FMA peak at best (no fused multiply-add, some
    // transcendentals); most of it is bound by memory anyway.
    rate = cluster.rankPeakFlops("fp32", ranks) * 0.25;
  }
  double compute = rate > 0 ? flops / rate : 0;
  double memory = bytes / cluster.rankStreamBandwidth(
                              bytes, profile.kernels[op.kernel], ranks);
  // A weight from beyond the core's cache stalls the product on top of
  // its compute (calibrated: the stall does not shrink with the rows).
  return std::max(compute, memory) + op.stateBytes * fetch +
         cluster.launchOverhead(ranks);
}

double CostModel::accumulationTime(double gradBytes, int64_t microbatches,
                                   int64_t ranks) const {
  if (microbatches <= 1 || gradBytes <= 0)
    return 0.0;
  // Each add reads the sum so far and one microbatch's gradient and writes
  // the sum (a CPU reads the lines it writes first).
  double bytes = gradBytes * (cluster.kind == "cpu" ? 4.0 : 3.0);
  return static_cast<double>(microbatches - 1) * bytes /
         cluster.rankStreamBandwidth(bytes, "binary", ranks);
}

double CostModel::packingTime(double gradBytes, double paramBytes,
                              const PlanChoice &plan, int64_t ranks) const {
  // CPU bundles copy none: each gradient is made in its place in an
  // all-reduce bucket (weftrt-assign-buffers place-pieces), and ZeRO's
  // buckets are reduce-scattered and gathered where their pieces lie
  // (weft-lower-to-runtime unpacked-buckets).
  if (plan.dp <= 1 || (gradBytes <= 0 && paramBytes <= 0) ||
      cluster.kind == "cpu")
    return 0.0;
  const double dp = static_cast<double>(plan.dp);
  // Bytes one copy of `x` moves: read and write (memcpy streams its
  // writes: resnet18's ZeRO-2 buckets, 2 x 47 MB of gradients and
  // parameters at dp=2, measured 17 ms of copies a step on the EPYC host
  // against 18 ms predicted, when CPU bundles still copied them).
  const double perCopy = 2.0;
  double copied = 0;
  if (plan.zero == 0) {
    // A bucket's concat and split.
    copied = 2 * gradBytes;
  } else {
    // Reduce-scatter buckets put each gradient as its ranks' blocks side
    // by side (strided pieces: copied in, and by the start into its
    // scratch) and split the reduced block; ZeRO-1/2's all-gather buckets
    // the updated shards and splits the gathered parameters (ZeRO-3
    // gathers each parameter at its use, in place).
    copied = 2 * gradBytes + gradBytes / dp;
    if (plan.zero < 3)
      copied += paramBytes / dp + paramBytes;
  }
  const double bytes = perCopy * copied;
  return bytes / cluster.rankStreamBandwidth(bytes, "concat", ranks);
}

/// Turns per-unit values into prefix sums (size n + 1).
static void toPrefix(std::vector<double> &v) {
  std::vector<double> prefix(v.size() + 1, 0.0);
  for (size_t i = 0; i < v.size(); ++i)
    prefix[i + 1] = prefix[i] + v[i];
  v = std::move(prefix);
}

const CostModel::UnitTimes &CostModel::unitTimes(int64_t program, double scale,
                                                 int64_t tpStride,
                                                 int64_t ranks, double fetch) {
  auto key = std::make_tuple(program, scale, tpStride, ranks, fetch);
  auto it = timeCache.find(key);
  if (it != timeCache.end())
    return it->second;
  UnitTimes &t = timeCache[key];
  const size_t n = std::max<int64_t>(profile.units, 1);
  for (auto *v : {&t.forward, &t.backward, &t.weightGrad, &t.optimizer,
                  &t.recomputeFull, &t.recomputeSelective, &t.tpComm})
    v->assign(n, 0.0);
  const TpProfile &p = profile.byTp.at(program);
  std::vector<double> kernels;
  kernels.reserve(p.ops.size());
  for (const OpRecord &op : p.ops) {
    double time = opTime(op, scale, ranks, fetch);
    kernels.push_back(time);
    switch (op.phase) {
    case Phase::Forward:
      t.forward[op.unit] += time;
      t.recomputeFull[op.unit] += time;
      if (!op.product)
        t.recomputeSelective[op.unit] += time;
      break;
    case Phase::Backward:
      t.backward[op.unit] += time;
      break;
    case Phase::WeightGrad:
      t.weightGrad[op.unit] += time;
      break;
    case Phase::Optimizer:
      t.optimizer[op.unit] += time;
      break;
    }
  }
  // Tensor-parallel collectives: what the work between start and wait
  // does not hide.
  const std::vector<double> charges =
      tpCommCharges(p, kernels, scale, tpStride, ranks);
  for (size_t k = 0; k < p.collectives.size(); ++k) {
    const CollectiveRecord &c = p.collectives[k];
    const double time = charges[k];
    if (c.phase != Phase::Optimizer)
      t.tpComm[c.unit] += time;
    switch (c.phase) {
    case Phase::Forward:
      t.forward[c.unit] += time;
      break;
    case Phase::Backward:
    case Phase::WeightGrad:
      t.backward[c.unit] += time;
      break;
    case Phase::Optimizer:
      t.optimizer[c.unit] += time;
      break;
    }
  }
  for (auto *v : {&t.forward, &t.backward, &t.weightGrad, &t.optimizer,
                  &t.recomputeFull, &t.recomputeSelective, &t.tpComm})
    toPrefix(*v);
  return t;
}

std::vector<double> CostModel::tpCommCharges(const TpProfile &p,
                                             const std::vector<double> &kernels,
                                             double scale, int64_t tpStride,
                                             int64_t ranks) const {
  std::vector<CommSpan> spans;
  spans.reserve(p.collectives.size());
  for (const CollectiveRecord &c : p.collectives) {
    double bytes = c.batch ? c.bytes * scale : c.bytes;
    Link link = cluster.linkFor(p.tp, tpStride, c.kind, ranks);
    spans.push_back({c.start, c.wait,
                     c.kind == "all_reduce"
                         ? allReduceTime(p.tp, bytes, link)
                         : allGatherTime(p.tp, bytes, link)});
  }
  return overlappedCommTimes(kernels, spans, cluster.overlap);
}

const CostModel::UnitSums &CostModel::unitSums(int64_t program) {
  auto it = sumCache.find(program);
  if (it != sumCache.end())
    return it->second;
  UnitSums &u = sumCache[program];
  const TpProfile &p = profile.byTp.at(program);
  for (const UnitBytes &b : p.units) {
    u.params.push_back(b.params);
    u.gradients.push_back(b.gradients);
    u.optimizer.push_back(b.optimizer);
    u.saved.push_back(b.saved);
    u.savedProducts.push_back(b.savedProducts);
  }
  for (auto *v :
       {&u.params, &u.gradients, &u.optimizer, &u.saved, &u.savedProducts})
    toPrefix(*v);
  return u;
}

const std::vector<int64_t> &CostModel::cutsFor(int64_t chunks) {
  auto it = cutCache.find(chunks);
  if (it != cutCache.end())
    return it->second;
  std::vector<int64_t> &cuts = cutCache[chunks];
  if (chunks > 1) {
    llvm::SmallVector<int64_t> c = weft::balancedStageCuts(
        profile.layerBoundaries, profile.cost, profile.crossingBytes, chunks);
    cuts.assign(c.begin(), c.end());
  }
  return cuts;
}

/// The chunk holding forward unit `unit` under `cuts` (chunk k ends at
/// cuts[k]).
static int64_t chunkOf(const std::vector<int64_t> &cuts, int64_t unit) {
  return std::lower_bound(cuts.begin(), cuts.end(), unit) - cuts.begin();
}

std::string CostModel::scheduleConflict(const PlanChoice &plan) {
  const int64_t p = plan.pp, chunks = plan.pp * plan.virtualStages;
  if (p <= 1 || plan.schedule == "gpipe" || profile.couplings.empty())
    return "";
  const std::vector<int64_t> &cuts = cutsFor(chunks);
  if (static_cast<int64_t>(cuts.size()) < chunks - 1)
    return "";
  // As weft-pipeline finds them: a forward statistic of another chunk's
  // activations, or a backward one before the last chunk (whose gradients
  // come from the stage after), past coupledMicrobatchLimit.
  const int64_t m = plan.microbatches;
  for (bool backward : {false, true})
    for (const BatchCoupling &c : profile.couplings) {
      if ((c.phase == Phase::Backward) != backward)
        continue;
      const int64_t k = chunkOf(cuts, c.unit), s = k % p;
      const bool remote =
          backward ? k != chunks - 1 : k != chunkOf(cuts, c.source);
      if (!remote)
        continue;
      const std::string what =
          backward ? "'s backward combines the microbatches (the gradient of "
                     "a batch statistic such as a training-mode "
                     "BatchNormalization's)"
                   : "'s forward combines the microbatches (a batch "
                     "statistic such as a training-mode "
                     "BatchNormalization's)";
      if (plan.schedule == "interleaved")
        return "interleaved cannot run this pipeline: chunk " +
               std::to_string(k) + what + " (gpipe can)";
      if (m > coupledMicrobatchLimit(p, s, backward))
        return plan.schedule + " cannot run this pipeline: stage " +
               std::to_string(s) + what + " and needs all " +
               std::to_string(m) + " microbatches' forwards before " +
               (backward ? "its" : "the previous stage's") +
               " first backward (gpipe can)";
    }
  return "";
}

PlanEstimate CostModel::evaluate(const PlanChoice &plan) {
  PlanEstimate e;
  e.plan = plan;
  const int64_t ranks = plan.devices();
  e.capacity = cluster.rankMemoryBytes(ranks);
  auto invalid = [&](const std::string &why) {
    e.valid = false;
    e.invalid = why;
    return e;
  };
  const int64_t program = tpProfileKey(plan.tp, plan.sequenceParallel);
  auto tpIt = profile.byTp.find(program);
  if (tpIt == profile.byTp.end()) {
    auto refused = profile.tpRefused.find(program);
    return invalid(refused != profile.tpRefused.end()
                       ? "tp=" + std::to_string(plan.tp) + ": " +
                             refused->second
                       : "tp=" + std::to_string(plan.tp) + " not profiled");
  }
  const TpProfile &tpProfile = tpIt->second;
  const int64_t m = plan.microbatches;
  const int64_t rowsSplit = plan.dp * m;
  if (profile.batch % rowsSplit != 0)
    return invalid("the batch of " + std::to_string(profile.batch) +
                   " rows does not split into dp=" + std::to_string(plan.dp) +
                   " x M=" + std::to_string(m));
  const int64_t p = plan.pp, v = plan.virtualStages;
  const int64_t chunks = p * v;
  if (chunks > 1 &&
      static_cast<int64_t>(profile.layerBoundaries.size()) < chunks - 1)
    return invalid("the model has " +
                   std::to_string(profile.layerBoundaries.size()) +
                   " layer boundaries: too few for " + std::to_string(chunks) +
                   " pipeline chunks");
  if (plan.schedule == "interleaved" && m % p != 0)
    return invalid("interleaved needs M a multiple of pp");
  if (p > 1 && m < p && plan.schedule != "gpipe")
    return invalid("fewer microbatches than stages");
  if (std::string conflict = scheduleConflict(plan); !conflict.empty())
    return invalid(conflict);
  const double scale = 1.0 / static_cast<double>(rowsSplit);
  const UnitTimes &t =
      unitTimes(program, scale, /*tpStride=*/1, ranks,
                weightFetch(tpProfile, plan.pp, plan.microbatches));
  const UnitSums &bytes = unitSums(program);
  e.cuts = cutsFor(chunks);

  // Chunk k holds units [begin(k), begin(k + 1)); stage = chunk mod pp.
  const int64_t n = std::max<int64_t>(profile.units, 1);
  auto begin = [&](int64_t k) -> int64_t {
    if (k <= 0)
      return 0;
    if (k >= chunks)
      return n;
    return e.cuts[k - 1] + 1;
  };
  struct Sums {
    double f = 0, b = 0, w = 0, opt = 0, params = 0, grads = 0, optState = 0,
           saved = 0, savedProducts = 0, recompute = 0, tpComm = 0;
    int64_t layers = 0;
  };
  auto range = [](const std::vector<double> &prefix, int64_t lo, int64_t hi) {
    return prefix[hi] - prefix[lo];
  };
  std::vector<Sums> chunk(chunks), stage(p);
  for (int64_t k = 0; k < chunks; ++k) {
    int64_t lo = begin(k), hi = begin(k + 1);
    Sums &c = chunk[k];
    c.f = range(t.forward, lo, hi);
    c.b = range(t.backward, lo, hi);
    c.w = range(t.weightGrad, lo, hi);
    c.opt = range(t.optimizer, lo, hi);
    c.tpComm = range(t.tpComm, lo, hi);
    if (plan.recompute == "full")
      c.recompute = range(t.recomputeFull, lo, hi);
    else if (plan.recompute == "selective")
      c.recompute = range(t.recomputeSelective, lo, hi);
    c.params = range(bytes.params, lo, hi);
    c.grads = range(bytes.gradients, lo, hi);
    c.optState = range(bytes.optimizer, lo, hi);
    c.saved = range(bytes.saved, lo, hi) * scale;
    c.savedProducts = range(bytes.savedProducts, lo, hi) * scale;
    const std::vector<int64_t> &lb = profile.layerBoundaries;
    c.layers = std::lower_bound(lb.begin(), lb.end(), hi - 1) -
               std::lower_bound(lb.begin(), lb.end(), lo);
  }
  for (int64_t c = 0; c < chunks; ++c) {
    Sums &s = stage[c % p];
    const Sums &k = chunk[c];
    s.f += k.f;
    s.b += k.b + k.recompute;
    s.w += k.w;
    s.opt += k.opt;
    s.params += k.params;
    s.grads += k.grads;
    s.optState += k.optState;
    s.saved += k.saved;
    s.savedProducts += k.savedProducts;
    s.layers += k.layers;
    s.tpComm += k.tpComm;
  }

  // Batch statistics per stage: a stage that computes one in its forward
  // holds every microbatch's activations (the statistic waits for all of
  // them, and the backward's for all of their gradients); each is an
  // all-reduce over dp once per step that the rows after it wait for.
  std::vector<bool> holdsAll(p, false);
  std::vector<double> statisticBytes(p, 0.0);
  std::vector<int64_t> statistics(p, 0);
  for (const BatchCoupling &c : profile.couplings) {
    const int64_t s = chunkOf(e.cuts, c.unit) % p;
    if (c.phase == Phase::Forward)
      holdsAll[s] = true;
    statisticBytes[s] += c.bytes;
    ++statistics[s];
  }

  // Pipeline transfers: each chunk boundary, forward and backward, once per
  // microbatch; weft posts receives a unit early, so the overlapped share
  // of a transfer is hidden.
  const Link p2p = cluster.linkFor(2, plan.tp, "send_recv", ranks);
  std::vector<double> p2pTime(p, 0.0);
  for (int64_t k = 0; k + 1 < chunks; ++k) {
    double bytes =
        static_cast<double>(profile.crossingBytes[e.cuts[k]]) * scale;
    double time = sendRecvTime(bytes, p2p) * (1.0 - 0.5 * cluster.overlap);
    p2pTime[k % p] += time;       // the sender's forward
    p2pTime[(k + 1) % p] += time; // the receiver's backward send
  }
  // Parameters several stages read (tied embeddings): the value goes from
  // the stage of its first reader to each other reading stage once per
  // step, that stage's gradient sum comes back once; the reader holds the
  // value and that sum whole (ZeRO splits neither).
  std::vector<double> sharedTime(p, 0.0), sharedValues(p, 0.0),
      sharedGrads(p, 0.0);
  for (const SharedParam &sp : tpProfile.sharedParams) {
    if (p == 1)
      break;
    const int64_t owner = chunkOf(e.cuts, sp.units.front()) % p;
    std::set<int64_t> readers;
    for (int32_t u : sp.units)
      if (int64_t s = chunkOf(e.cuts, u) % p; s != owner)
        readers.insert(s);
    const double trips = sp.trainable ? 2.0 : 1.0;
    for (int64_t r : readers) {
      double time =
          trips * sendRecvTime(sp.bytes, p2p) * (1.0 - 0.5 * cluster.overlap);
      sharedTime[owner] += time;
      sharedTime[r] += time;
      sharedValues[r] += sp.bytes;
      if (sp.trainable)
        sharedGrads[r] += sp.bytes;
    }
  }

  // Data-parallel traffic per stage.
  const int64_t dpStride = plan.tp * p;
  auto dpLink = [&](const std::string &kind) {
    return cluster.linkFor(plan.dp, dpStride, kind, ranks);
  };
  double worstStep = 0;
  int64_t worstStage = 0;
  std::vector<double> stepOf(p, 0.0);
  // Per stage, for the shared-cores simulation: the work after its
  // microbatches (gradient sums, optimizer) and its exposed collectives
  // (tensor- and data-parallel; not the pipeline transfers).
  std::vector<double> workAfter(p, 0.0), commOf(p, 0.0);
  double slowest = 0; // per-microbatch time of the slowest stage
  for (int64_t s = 0; s < p; ++s)
    slowest =
        std::max(slowest, stage[s].f + stage[s].b + stage[s].w + p2pTime[s]);
  double chunkF = 0, chunkB = 0, chunkW = 0;
  for (const Sums &k : chunk)
    if (k.f + k.b + k.w + k.recompute > chunkF + chunkB + chunkW) {
      chunkF = k.f;
      chunkB = k.b + k.recompute;
      chunkW = k.w;
    }
  double bubble = 0;
  if (p > 1) {
    if (plan.schedule == "interleaved") {
      bubble = bubbleTime("1f1b", p, v, chunkF, chunkB, chunkW);
    } else {
      double f = 0, b = 0, w = 0;
      for (const Sums &s : stage)
        if (s.f + s.b + s.w > f + b + w) {
          f = s.f;
          b = s.b;
          w = s.w;
        }
      bubble = bubbleTime(plan.schedule, p, 1, f, b, w);
    }
  }
  for (int64_t s = 0; s < p; ++s) {
    const Sums &st = stage[s];
    double perMb = st.f + st.b + st.w + p2pTime[s];
    // Tensor-parallel collectives and pipeline transfers sit on the
    // critical path of every microbatch: exposed communication.
    double compute = static_cast<double>(m) * (perMb - st.tpComm - p2pTime[s]) +
                     accumulationTime(st.grads, m, ranks);
    double backwardWindow = st.b + st.w; // the last microbatch's backward
    double opt =
        plan.zero >= 1 ? st.opt / static_cast<double>(plan.dp) : st.opt;
    double hidden = 0, exposed = 0;
    std::string what;
    double whatTime = 0;
    auto note = [&](const std::string &name, double time) {
      if (time > whatTime) {
        whatTime = time;
        what = name;
      }
    };
    auto levelOf = [&](int64_t size, int64_t stride) {
      return cluster.nodes > 1 && size * stride > cluster.devicesPerNode
                 ? std::string("between nodes")
                 : std::string("inside a node");
    };
    const std::string level = levelOf(plan.dp, dpStride);
    exposed += static_cast<double>(m) * (st.tpComm + p2pTime[s]);
    note("tensor-parallel all_reduce of activations over tp " +
             levelOf(plan.tp, 1),
         static_cast<double>(m) * st.tpComm);
    note("pipeline send/recv of activations",
         static_cast<double>(m) * p2pTime[s]);
    exposed += sharedTime[s];
    note("pipeline send/recv of tied parameters and their gradients",
         sharedTime[s]);
    if (plan.dp > 1) {
      double grads = st.grads, params = st.params;
      switch (plan.zero) {
      case 0: {
        double ar = allReduceTime(plan.dp, grads, dpLink("all_reduce"));
        hidden = std::min(ar, backwardWindow) * cluster.overlap;
        exposed += ar - hidden;
        note("gradient all_reduce over dp " + level, ar - hidden);
        break;
      }
      case 1: {
        double rs = reduceScatterTime(plan.dp, grads, dpLink("reduce_scatter"));
        double ag = allGatherTime(plan.dp, params, dpLink("all_gather"));
        exposed += rs + ag;
        note("ZeRO-1 reduce_scatter + all_gather over dp " + level, rs + ag);
        break;
      }
      case 2: {
        double rs = reduceScatterTime(plan.dp, grads, dpLink("reduce_scatter"));
        double ag = allGatherTime(plan.dp, params, dpLink("all_gather"));
        double hideRs =
            m == 1 ? std::min(rs, backwardWindow) * cluster.overlap : 0.0;
        exposed += rs - hideRs + ag;
        note("ZeRO-2 reduce_scatter + all_gather over dp " + level,
             rs - hideRs + ag);
        break;
      }
      default: {
        double rs = reduceScatterTime(plan.dp, grads, dpLink("reduce_scatter"));
        double ag = allGatherTime(plan.dp, params, dpLink("all_gather"));
        double comm = m == 1 ? 2 * ag + rs : ag + rs;
        double window = m == 1 ? perMb : 0.0;
        double hide = std::min(comm, window) * cluster.overlap;
        exposed += comm - hide;
        note("ZeRO-3 all_gather + reduce_scatter over dp " + level,
             comm - hide);
        break;
      }
      }
    }
    if (plan.dp > 1 && statistics[s] > 0) {
      // Each statistic alone (weft buckets gradients, not these).
      double each = allReduceTime(
          plan.dp, statisticBytes[s] / static_cast<double>(statistics[s]),
          dpLink("all_reduce"));
      double stats = each * static_cast<double>(statistics[s]);
      exposed += stats;
      note("all_reduce of batch statistics over dp " + level, stats);
    }
    // The copies that pack and unpack the data-parallel buckets.
    const double packing = packingTime(st.grads, st.params, plan, ranks);
    compute += packing;
    workAfter[s] = accumulationTime(st.grads, m, ranks) + opt + packing;
    commOf[s] = exposed - static_cast<double>(m) * p2pTime[s];
    double stepTime = compute + bubble + exposed + opt;
    stepOf[s] = stepTime;
    if (stepTime > worstStep) {
      worstStep = stepTime;
      worstStage = s;
      e.compute = compute;
      e.exposedComm = exposed;
      e.optimizer = opt;
      e.dominantComm = what;
      e.dominantCommTime = whatTime;
    }
  }
  (void)worstStage;
  (void)slowest;
  e.bubble = bubble;
  e.stepTime = worstStep;
  // More ranks than cores: they take turns, and a rank that waits (in a
  // bubble, for a transfer) lends its core to another. The schedule is
  // simulated (SharedCores.h) over one node's ranks. Collectives on shared
  // memory are the cores' work too (copies, reductions, MPI polling), but
  // `weft calibrate` timed them with every rank of the node taking part at
  // once, as a plan's groups run them: their calibrated times already hold
  // the turns, and they are added to the simulated step as they are.
  const double turns = cluster.oversubscription(ranks);
  if (turns > 1.0) {
    double work = 0;
    for (int64_t s = 0; s < p; ++s) {
      const Sums &st = stage[s];
      double opt =
          plan.zero >= 1 ? st.opt / static_cast<double>(plan.dp) : st.opt;
      work += static_cast<double>(m) * (st.f + st.b + st.w - st.tpComm) +
              accumulationTime(st.grads, m, ranks) + opt +
              packingTime(st.grads, st.params, plan, ranks);
    }
    PipelineWork pw;
    pw.schedule = p > 1 ? plan.schedule : "none";
    pw.stages = p;
    pw.virtualStages = v;
    pw.microbatches = m;
    // The units' work without their tensor-parallel collectives: those,
    // like the data-parallel ones, were calibrated with every rank of the
    // node taking turns on its cores, so they are added after the
    // simulation as measured, not shared out again.
    for (const Sums &k : chunk) {
      double keep = k.f + k.b > 0 ? 1.0 - k.tpComm / (k.f + k.b) : 1.0;
      pw.forward.push_back(k.f * keep);
      pw.backward.push_back(k.b * keep + k.recompute);
      pw.weight.push_back(k.w);
    }
    for (int64_t k = 0; k + 1 < chunks; ++k)
      pw.transfer.push_back(
          sendRecvTime(static_cast<double>(profile.crossingBytes[e.cuts[k]]) *
                           scale,
                       p2p) *
          (1.0 - 0.5 * cluster.overlap));
    pw.tail = workAfter;
    const int64_t onNode =
        std::max<int64_t>(1, std::min<int64_t>(ranks, cluster.devicesPerNode));
    // The runtime pins ranks that outnumber the cores (CorePlacement.h).
    // Simulated rank r is stage r mod pp of replica r / pp; replica q is
    // data-parallel index q / tp and tensor-parallel index q mod tp of the
    // dp x pp x tp grid.
    std::vector<int64_t> coreOfRank;
    if (onNode > cluster.coresPerNode && onNode % (p * plan.tp) == 0)
      for (int64_t r = 0; r < onNode; ++r) {
        const int64_t q = r / p;
        const int64_t local =
            ((q / plan.tp) * p + r % p) * plan.tp + q % plan.tp;
        coreOfRank.push_back(coreOfLocalRank(local, cluster.coresPerNode));
      }
    double shared =
        onNode % p == 0
            ? sharedCoresStepTime(pw, onNode, cluster.coresPerNode, coreOfRank)
            : -1.0;
    double perRank = work / static_cast<double>(p);
    // Without a simulation (a pipeline across nodes): every rank's work
    // and the communication all wait for, over the cores.
    if (shared < 0)
      shared = perRank * turns + e.exposedComm;
    else
      shared += *std::max_element(commOf.begin(), commOf.end());
    // The parts: the work in turns, the communication, and what the
    // schedule leaves idle (none where sharing overlaps them).
    e.compute = perRank * turns - e.optimizer;
    e.bubble = shared - (e.compute + e.optimizer + e.exposedComm);
    if (e.bubble < 0) {
      e.exposedComm = std::max(0.0, e.exposedComm + e.bubble);
      e.compute = std::min(e.compute, shared - e.optimizer - e.exposedComm);
      e.bubble = 0;
    }
    e.stepTime = shared;
  }

  // Memory of the fullest stage.
  for (int64_t s = 0; s < p; ++s) {
    const Sums &st = stage[s];
    StateBytes state = zeroStateBytes({st.params, st.grads, st.optState},
                                      plan.zero, plan.dp, m > 1);
    // ZeRO-3 gathers a stage's parameters once per step with microbatches
    // (all of them live through the step), else one use at a time with
    // the next prefetched (two gathered copies).
    if (plan.zero >= 3 && plan.dp > 1)
      state.params +=
          m > 1 ? st.params * (1.0 - 1.0 / static_cast<double>(plan.dp))
                : std::min(st.params, 2 * tpProfile.largestParamBytes);
    double inFlight = holdsAll[s] ? static_cast<double>(m)
                      : p > 1 ? inFlightMicrobatches(plan.schedule, p, s, m, v)
                              : 1.0;
    // Recomputation keeps a stage's layer-boundary checkpoints (about
    // sqrt of its layers) and, selectively, the products' outputs; the
    // backward holds one segment's activations at a time.
    double kept = st.saved, transient = 0;
    if (plan.recompute != "none") {
      int64_t layers = st.layers;
      double segments =
          std::max(1.0, std::ceil(std::sqrt(static_cast<double>(layers + 1))));
      double checkpoint = 0;
      if (!profile.layerBoundaries.empty())
        checkpoint = static_cast<double>(
                         profile.crossingBytes[profile.layerBoundaries[0]]) *
                     scale;
      kept = segments * checkpoint;
      if (plan.recompute == "selective")
        kept += st.savedProducts;
      transient = (st.saved -
                   (plan.recompute == "selective" ? st.savedProducts : 0.0)) /
                  segments;
    }
    MemoryBreakdown mem;
    mem.params = state.params + sharedValues[s];
    mem.gradients = state.gradients + sharedGrads[s];
    mem.optimizer = state.optimizer;
    mem.activations = kept * inFlight + transient;
    mem.workspace = tpProfile.largestOpBytes * scale;
    mem.io = profile.ioBytes / static_cast<double>(plan.dp);
    if (mem.total() > e.memory.total())
      e.memory = mem;
  }
  return e;
}
