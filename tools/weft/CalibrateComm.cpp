//===- CalibrateComm.cpp - weft-calibrate: collectives and overlap --------===//
//
// The alpha-beta fits of every collective and group size, and the overlap
// of an asynchronous all-reduce with matrix products (see Calibrate.cpp's
// file comment for what is measured and how).
//
//===----------------------------------------------------------------------===//
#include "tools/weft/Calibrate.h"

#include <algorithm>
#include <cmath>
#include <string>

using weft::comm::Communicator;
using weft::comm::Reduction;
using weft::comm::Request;

namespace weft::calibrate {
//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

const char *collName(Coll c) {
  switch (c) {
  case Coll::AllReduce:
    return "all_reduce";
  case Coll::AllGather:
    return "all_gather";
  case Coll::ReduceScatter:
    return "reduce_scatter";
  case Coll::SendRecv:
    return "send_recv";
  }
  return "?";
}

/// The alpha-beta model's coefficients: T = ca * a + cb * n / B.
void coefficients(Coll c, int64_t p, double &ca, double &cb) {
  const double pm = static_cast<double>(p - 1), pd = static_cast<double>(p);
  switch (c) {
  case Coll::AllReduce:
    ca = 2 * pm;
    cb = 2 * pm / pd;
    return;
  case Coll::AllGather:
  case Coll::ReduceScatter:
    ca = pm;
    cb = pm / pd;
    return;
  case Coll::SendRecv:
    ca = 1;
    cb = 1;
    return;
  }
}

/// Fits latency and bandwidth to `s` (see the file comment): weighted least
/// squares with weights 1/T^2, so small messages fix the latency and large
/// ones the bandwidth; a and 1/B are kept positive.
void fit(Series &s) {
  double ca = 1, cb = 1;
  coefficients(s.coll, s.ranks, ca, cb);
  double a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;
  for (size_t i = 0; i < s.bytes.size(); ++i) {
    const double t = s.seconds[i], w = 1.0 / (t * t);
    const double x1 = ca, x2 = cb * s.bytes[i];
    a11 += w * x1 * x1;
    a12 += w * x1 * x2;
    a22 += w * x2 * x2;
    b1 += w * x1 * t;
    b2 += w * x2 * t;
  }
  const double det = a11 * a22 - a12 * a12;
  double a = 0, beta = 0;
  if (det > 0) {
    a = (b1 * a22 - b2 * a12) / det;
    beta = (a11 * b2 - a12 * b1) / det;
  }
  const double minLatency = 1e-9, minBeta = 1e-13; // 1 ns, 10 TB/s
  if (!(a > minLatency)) {
    a = minLatency;
    beta = a22 > 0 ? (b2 - a12 * a) / a22 : minBeta;
  }
  if (!(beta > minBeta)) {
    beta = minBeta;
    a = std::max(minLatency, a11 > 0 ? (b1 - a12 * beta) / a11 : minLatency);
  }
  s.latency = a;
  s.bandwidth = 1.0 / beta;
  double sq = 0;
  for (size_t i = 0; i < s.bytes.size(); ++i) {
    const double model = ca * a + cb * s.bytes[i] * beta;
    const double rel = (model - s.seconds[i]) / s.seconds[i];
    sq += rel * rel;
  }
  s.rmsRelError = s.bytes.empty() ? 0 : std::sqrt(sq / s.bytes.size());
}

/// Buffers big enough for the largest size of any collective.
struct CommBuffers {
  std::vector<float> in, out;
};

/// Times one size of `coll` on `group` (null on a rank left out of the
/// groups of this size, which only takes part in the barrier and the
/// reduction): the median over trials of the slowest rank's mean seconds
/// per operation (per one-way message for send/recv). Every rank of
/// `world` calls it. `fullBytes` gets the size actually moved.
double timeCollective(Communicator &world, Communicator *group, Coll coll,
                      int64_t bytes, const CollectivePlan &plan,
                      CommBuffers &buf, double &fullBytes) {
  std::vector<double> times(static_cast<size_t>(plan.trials), 0.0);
  fullBytes = 0;
  if (group) {
    const int64_t p = group->size(), me = group->rank();
    int64_t elems = std::max<int64_t>(1, bytes / 4);
    int64_t block = (elems + p - 1) / p; // per-rank block of the split ops
    if (coll == Coll::AllGather || coll == Coll::ReduceScatter)
      elems = block * p;
    fullBytes = 4.0 * static_cast<double>(elems);
    float *in = buf.in.data(), *out = buf.out.data();
    auto op = [&] {
      switch (coll) {
      case Coll::AllReduce:
        group->allReduce(in, out, elems, WEFT_F32, Reduction::Sum);
        break;
      case Coll::AllGather:
        group->allGather(in, out, block, WEFT_F32);
        break;
      case Coll::ReduceScatter:
        group->reduceScatter(in, out, block, WEFT_F32, Reduction::Sum);
        break;
      case Coll::SendRecv:
        if (me == 0) {
          group->send(in, elems, WEFT_F32, 1, 1);
          group->recv(out, elems, WEFT_F32, 1, 2);
        } else if (me == 1) {
          group->recv(out, elems, WEFT_F32, 0, 1);
          group->send(in, elems, WEFT_F32, 0, 2);
        }
        break;
      }
    };
    // Warm-up, which also sets the operations per trial.
    group->barrier();
    double t0 = now();
    op();
    op();
    double warm = (now() - t0) / 2;
    group->allReduce(&warm, &warm, 1, WEFT_F64, Reduction::Max);
    const int64_t iters = std::max<int64_t>(
        1, std::min<int64_t>(
               1000, static_cast<int64_t>(plan.trialSeconds / warm + 0.5)));
    const double per = coll == Coll::SendRecv ? 2.0 * iters : 1.0 * iters;
    for (int t = 0; t < plan.trials; ++t) {
      group->barrier();
      t0 = now();
      for (int64_t i = 0; i < iters; ++i)
        op();
      times[static_cast<size_t>(t)] = (now() - t0) / per;
    }
  }
  quietBarrier(world);
  world.allReduce(times.data(), times.data(), plan.trials, WEFT_F64,
                  Reduction::Max);
  world.allReduce(&fullBytes, &fullBytes, 1, WEFT_F64, Reduction::Max);
  return median(times);
}

/// Every collective for every group size; the series rank 0 keeps.
std::vector<Series> measureCollectives(Communicator &world,
                                       const CollectivePlan &plan) {
  std::vector<Series> all;
  const int64_t n = world.size(), me = world.rank();
  int64_t largest = 0;
  for (int64_t b : plan.sizes)
    largest = std::max(largest, b);
  CommBuffers buf;
  buf.in.assign(static_cast<size_t>(largest / 4 + n + 1), 1.0f);
  buf.out.assign(buf.in.size(), 0.0f);

  for (int64_t p = 2; p <= n; ++p) {
    // Groups of p consecutive ranks; the rest form one group left out.
    const int64_t groups = n / p, used = groups * p;
    const bool in = me < used;
    const int64_t color = in ? me / p : groups;
    const int64_t key = in ? me % p : me - used;
    std::vector<int64_t> members;
    const int64_t first = in ? color * p : used;
    const int64_t count = in ? p : n - used;
    for (int64_t r = first; r < first + count; ++r)
      members.push_back(r);
    std::unique_ptr<Communicator> group =
        world.split(color, key, members,
                    "calibration group of " + std::to_string(p) + " ranks");
    std::vector<Coll> colls = {Coll::AllReduce, Coll::AllGather,
                               Coll::ReduceScatter};
    if (p == 2)
      colls.push_back(Coll::SendRecv);
    for (Coll c : colls) {
      Series s;
      s.coll = c;
      s.ranks = p;
      s.groups = groups;
      for (int64_t bytes : plan.sizes) {
        double moved = 0;
        double t = timeCollective(world, in ? group.get() : nullptr, c, bytes,
                                  plan, buf, moved);
        s.bytes.push_back(moved);
        s.seconds.push_back(std::max(t, 1e-9));
      }
      fit(s);
      all.push_back(std::move(s));
    }
    quietBarrier(world);
  }
  return all;
}

//===----------------------------------------------------------------------===//
// Overlap
//===----------------------------------------------------------------------===//

double overlapFraction(double tGemm, double tAr, double tBoth) {
  double shorter = std::min(tGemm, tAr);
  if (!(shorter > 0))
    return 0.0;
  double f = (tGemm + tAr - tBoth) / shorter;
  return std::min(1.0, std::max(0.0, f));
}

/// Collective over the world (every rank measures).
OverlapFigures measureOverlap(Communicator &world, bool quick) {
  OverlapFigures o;
  const int64_t elems = (quick ? int64_t(2) << 20 : int64_t(16) << 20) / 4;
  o.bytes = 4.0 * static_cast<double>(elems);
  std::vector<float> x(static_cast<size_t>(elems), 1.0f),
      y(static_cast<size_t>(elems), 0.0f);
  // all_reduce_start over mesh axis 0 (the whole world) on slot 0.
  std::vector<int64_t> startDesc = {2,     WEFT_F32, 1, elems, WEFT_F32, 1,
                                    elems, 4,        0, 0,     1,        0};
  std::vector<int64_t> waitDesc = {1, WEFT_F32, 1, elems, 1, 0};
  std::vector<int64_t> progressDesc = {0, 0};
  void *startBufs[2] = {x.data(), y.data()};
  void *waitBufs[1] = {y.data()};
  void *progressBufs[1] = {nullptr};
  MatmulCall gemm(o.gemmN, WEFT_F32);
  auto start = [&] { weft_k_all_reduce_start(startBufs, startDesc.data()); };
  auto wait = [&] { weft_k_comm_wait(waitBufs, waitDesc.data()); };
  auto progress = [&] {
    weft_k_comm_progress(progressBufs, progressDesc.data());
  };
  const int trials = quick ? 3 : 11;

  // The slowest rank's time of each of `fns`, run in turn in every trial
  // (so that the load of the machine drifts alike for all); the medians.
  auto timed = [&](std::vector<std::function<void()>> fns, int count) {
    const size_t k = fns.size();
    std::vector<double> t(k * static_cast<size_t>(count));
    for (int i = 0; i < count; ++i)
      for (size_t f = 0; f < k; ++f) {
        world.barrier();
        double t0 = now();
        fns[f]();
        t[static_cast<size_t>(i) * k + f] = now() - t0;
      }
    world.allReduce(t.data(), t.data(), static_cast<int64_t>(t.size()),
                    WEFT_F64, Reduction::Max);
    std::vector<double> medians;
    for (size_t f = 0; f < k; ++f) {
      std::vector<double> one;
      for (int i = 0; i < count; ++i)
        one.push_back(t[static_cast<size_t>(i) * k + f]);
      medians.push_back(median(one));
    }
    return medians;
  };

  // Calls to match the all-reduce's time.
  std::function<void()> allReduce = [&] {
    start();
    wait();
  };
  std::function<void()> fourGemms = [&] {
    for (int i = 0; i < 4; ++i)
      gemm();
  };
  allReduce();
  gemm();
  std::vector<double> probe = timed({allReduce, fourGemms}, 3);
  const double tCall = probe[1] / 4;
  o.gemmCalls = std::max<int64_t>(
      1, std::min<int64_t>(20000, static_cast<int64_t>(
                                      probe[0] / std::max(tCall, 1e-9) + 0.5)));

  std::function<void()> gemms = [&] {
    for (int64_t i = 0; i < o.gemmCalls; ++i)
      gemm();
  };
  std::function<void()> both = [&] {
    start();
    for (int64_t i = 0; i < o.gemmCalls; ++i) {
      gemm();
      progress();
    }
    wait();
  };
  std::function<void()> bothNoProgress = [&] {
    start();
    for (int64_t i = 0; i < o.gemmCalls; ++i)
      gemm();
    wait();
  };
  std::vector<double> t =
      timed({allReduce, gemms, both, bothNoProgress}, trials);
  o.tAllReduce = t[0];
  o.tGemm = t[1];
  o.tBoth = t[2];
  o.tBothNoProgress = t[3];
  o.overlap = overlapFraction(o.tGemm, o.tAllReduce, o.tBoth);
  o.overlapNoProgress =
      overlapFraction(o.tGemm, o.tAllReduce, o.tBothNoProgress);
  return o;
}

} // namespace weft::calibrate
