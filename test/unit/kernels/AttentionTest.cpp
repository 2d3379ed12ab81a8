//===- AttentionTest.cpp - attention and attention_grad against references ===//
//
// The fused kernels against the written-out computation in double: scores,
// mask, softmax and product for the forward; the same chain's gradient for
// the backward, checked in turn against central differences of the
// forward. bf16 calls must give the f32 results of the same (widened)
// operands rounded once.
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtil.h"

#include "weft/runtime/Float16.h"

#include <algorithm>
#include <limits>

using namespace weft::test;

namespace {

struct Problem {
  Dims lead; // leading dims
  int64_t sq, sk, d, dv;
  bool causal;
  double scale;

  int64_t batch() const { return numelOf(lead); }
  Dims dims(int64_t rows, int64_t cols) const {
    Dims out = lead;
    out.push_back(rows);
    out.push_back(cols);
    return out;
  }
  bool seen(int64_t i, int64_t j) const { return !causal || j <= i + sk - sq; }
};

/// The written-out forward in double: o and lse.
void reference(const Problem &p, const std::vector<double> &q,
               const std::vector<double> &k, const std::vector<double> &v,
               std::vector<double> &o, std::vector<double> &lse) {
  o.assign(p.batch() * p.sq * p.dv, 0.0);
  lse.assign(p.batch() * p.sq, 0.0);
  for (int64_t b = 0; b < p.batch(); ++b)
    for (int64_t i = 0; i < p.sq; ++i) {
      std::vector<double> s(p.sk);
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < p.sk; ++j) {
        double dot = 0;
        for (int64_t t = 0; t < p.d; ++t)
          dot += q[(b * p.sq + i) * p.d + t] * k[(b * p.sk + j) * p.d + t];
        s[j] = p.scale * dot;
        if (p.seen(i, j))
          max = std::max(max, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < p.sk; ++j)
        sum += p.seen(i, j) ? std::exp(s[j] - max) : 0.0;
      lse[b * p.sq + i] = sum > 0 ? max + std::log(sum)
                                  : -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < p.sk; ++j) {
        if (!p.seen(i, j))
          continue;
        const double w = std::exp(s[j] - max) / sum;
        for (int64_t t = 0; t < p.dv; ++t)
          o[(b * p.sq + i) * p.dv + t] += w * v[(b * p.sk + j) * p.dv + t];
      }
    }
}

std::vector<double> toDouble(const std::vector<float> &x) {
  return std::vector<double>(x.begin(), x.end());
}

struct Forward {
  HostTensor<float> o, lse;
};

/// An attention call's builder with its five tensors (the attributes
/// follow).
template <class T>
KernelCall forwardCall(HostTensor<T> &q, HostTensor<T> &k, HostTensor<T> &v,
                       HostTensor<T> &o, HostTensor<float> &lse) {
  KernelCall call;
  call.tensor(q).tensor(k).tensor(v).tensor(o).tensor(lse);
  return call;
}

Forward runForward(const Problem &p, HostTensor<float> &q, HostTensor<float> &k,
                   HostTensor<float> &v) {
  Forward f{HostTensor<float>(p.dims(p.sq, p.dv)),
            HostTensor<float>(p.dims(p.sq, 1))};
  f.lse.dims.pop_back();
  forwardCall(q, k, v, f.o, f.lse)
      .attrDouble(p.scale)
      .attr(p.causal)
      .run(weft_k_attention);
  return f;
}

struct Backward {
  HostTensor<float> dq, dk, dv;
};

Backward runBackward(const Problem &p, HostTensor<float> &q,
                     HostTensor<float> &k, HostTensor<float> &v, Forward &f,
                     HostTensor<float> &dout) {
  Backward g{HostTensor<float>(q.dims), HostTensor<float>(k.dims),
             HostTensor<float>(v.dims)};
  KernelCall()
      .tensor(q)
      .tensor(k)
      .tensor(v)
      .tensor(f.o)
      .tensor(f.lse)
      .tensor(dout)
      .tensor(g.dq)
      .tensor(g.dk)
      .tensor(g.dv)
      .attrDouble(p.scale)
      .attr(p.causal)
      .run(weft_k_attention_grad);
  return g;
}

/// sum(o * w) for fixed weights w: its gradient with respect to o is w.
double objective(const Problem &p, const std::vector<double> &q,
                 const std::vector<double> &k, const std::vector<double> &v,
                 const std::vector<double> &w) {
  std::vector<double> o, lse;
  reference(p, q, k, v, o, lse);
  double sum = 0;
  for (size_t i = 0; i < o.size(); ++i)
    sum += o[i] * w[i];
  return sum;
}

/// Central differences of objective() with respect to every element of
/// operand `which` (0 q, 1 k, 2 v).
std::vector<double> numericGrad(const Problem &p, std::vector<double> q,
                                std::vector<double> k, std::vector<double> v,
                                const std::vector<double> &w, int which) {
  std::vector<double> &x = which == 0 ? q : which == 1 ? k : v;
  std::vector<double> g(x.size());
  const double h = 1e-5;
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    const double up = objective(p, q, k, v, w);
    x[i] = keep - h;
    const double down = objective(p, q, k, v, w);
    x[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

/// Runs both kernels on random operands and checks them against the
/// references; returns what they computed.
std::pair<Forward, Backward> checkProblem(const Problem &p) {
  SCOPED_TRACE(testing::Message()
               << "Sq=" << p.sq << " Sk=" << p.sk << " D=" << p.d
               << " Dv=" << p.dv << " causal=" << p.causal);
  auto q = randomTensor<float>(p.dims(p.sq, p.d), -2, 2);
  auto k = randomTensor<float>(p.dims(p.sk, p.d), -2, 2);
  auto v = randomTensor<float>(p.dims(p.sk, p.dv));
  auto dout = randomTensor<float>(p.dims(p.sq, p.dv));
  Forward f = runForward(p, q, k, v);
  std::vector<double> o, lse;
  const std::vector<double> qd = toDouble(q.data), kd = toDouble(k.data),
                            vd = toDouble(v.data);
  reference(p, qd, kd, vd, o, lse);
  expectClose(toDouble(f.o.data), o, 1e-5, 1e-6);
  expectClose(toDouble(f.lse.data), lse, 1e-5, 1e-6);

  Backward g = runBackward(p, q, k, v, f, dout);
  const std::vector<double> w = toDouble(dout.data);
  const HostTensor<float> *grads[] = {&g.dq, &g.dk, &g.dv};
  for (int which = 0; which < 3; ++which)
    expectClose(toDouble(grads[which]->data),
                numericGrad(p, qd, kd, vd, w, which), 2e-4, 2e-5);
  return {f, g};
}

TEST(Attention, MatchesWrittenOutAndItsGradient) {
  checkProblem({{2, 3}, 7, 7, 5, 4, false, 0.4});
  checkProblem({{2, 3}, 7, 7, 5, 4, true, 0.4});
  // More queries than a block (32), keys of another count, causal with
  // Sk > Sq (the queries see the earlier keys too).
  checkProblem({{2}, 40, 45, 3, 6, true, 0.25});
  checkProblem({{1}, 33, 9, 8, 8, false, 1.0});
  // A rank-2 problem (no leading dims).
  checkProblem({{}, 6, 6, 4, 4, true, 0.5});
  // No keys (every query sees none), and no queries (zero key gradients).
  checkProblem({{2}, 3, 0, 4, 4, false, 1.0});
  checkProblem({{2}, 0, 5, 4, 4, true, 1.0});
}

// Causal with more queries than keys: the first queries see no key: their
// output and query gradient are exactly 0, their lse -inf.
TEST(Attention, QueriesThatSeeNoKey) {
  Problem p{{2}, 9, 5, 4, 3, true, 0.5};
  auto [f, g] = checkProblem(p);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < p.sq - p.sk; ++i) {
      EXPECT_EQ(f.lse[b * p.sq + i], -std::numeric_limits<float>::infinity());
      for (int64_t t = 0; t < p.dv; ++t)
        EXPECT_EQ(f.o[(b * p.sq + i) * p.dv + t], 0.0f);
      for (int64_t t = 0; t < p.d; ++t)
        EXPECT_EQ(g.dq[(b * p.sq + i) * p.d + t], 0.0f);
    }
}

// bf16 operands: the f32 results of their widened values, rounded once.
TEST(Attention, BF16IsF32RoundedOnce) {
  Problem p{{2, 2}, 20, 20, 8, 8, true, 0.35};
  HostTensor<float> q(p.dims(p.sq, p.d)), k(p.dims(p.sk, p.d)),
      v(p.dims(p.sk, p.dv)), dout(p.dims(p.sq, p.dv));
  auto bf = [](HostTensor<float> &x) {
    HostTensor<uint16_t> low(x.dims, WEFT_BF16);
    auto r = randomTensor<float>(x.dims);
    for (int64_t i = 0; i < x.numel(); ++i) {
      low[i] = weft::floatToBFloat16(r[i]);
      x[i] = weft::bfloat16ToFloat(low[i]);
    }
    return low;
  };
  auto ql = bf(q), kl = bf(k), vl = bf(v), dl = bf(dout);
  Forward f = runForward(p, q, k, v);
  HostTensor<uint16_t> ol(f.o.dims, WEFT_BF16), dql(q.dims, WEFT_BF16),
      dkl(k.dims, WEFT_BF16), dvl(v.dims, WEFT_BF16);
  HostTensor<float> lse(f.lse.dims);
  KernelCall()
      .tensor(ql)
      .tensor(kl)
      .tensor(vl)
      .tensor(ol)
      .tensor(lse)
      .attrDouble(p.scale)
      .attr(1)
      .run(weft_k_attention);
  // The f32 backward from the output the bf16 one reads (rounded).
  Forward rounded = f;
  for (int64_t i = 0; i < ol.numel(); ++i)
    rounded.o[i] = weft::bfloat16ToFloat(ol[i]);
  Backward g = runBackward(p, q, k, v, rounded, dout);
  KernelCall()
      .tensor(ql)
      .tensor(kl)
      .tensor(vl)
      .tensor(ol)
      .tensor(lse)
      .tensor(dl)
      .tensor(dql)
      .tensor(dkl)
      .tensor(dvl)
      .attrDouble(p.scale)
      .attr(1)
      .run(weft_k_attention_grad);
  for (int64_t i = 0; i < f.o.numel(); ++i)
    ASSERT_EQ(ol[i], weft::floatToBFloat16(f.o[i])) << "o element " << i;
  expectClose(lse.data, f.lse.data, 0.0, 0.0);
  auto roundedOnce = [](const HostTensor<uint16_t> &low,
                        const HostTensor<float> &high, const char *what) {
    for (int64_t i = 0; i < high.numel(); ++i)
      ASSERT_EQ(low[i], weft::floatToBFloat16(high[i])) << what << " " << i;
  };
  roundedOnce(dql, g.dq, "dq element");
  roundedOnce(dkl, g.dk, "dk element");
  roundedOnce(dvl, g.dv, "dv element");
}

/// x [N, S, H, C] -> [N, H, S, C].
HostTensor<float> swapSeqHeads(const HostTensor<float> &x) {
  const int64_t n = x.dims[0], a = x.dims[1], b = x.dims[2], c = x.dims[3];
  HostTensor<float> y(Dims{n, b, a, c});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t s = 0; s < a; ++s)
      for (int64_t h = 0; h < b; ++h)
        for (int64_t t = 0; t < c; ++t)
          y[((i * b + h) * a + s) * c + t] = x[((i * a + s) * b + h) * c + t];
  return y;
}

TEST(Attention, SeqMajorIsTheTransposedProblemBitwise) {
  // q [N, Sq, H, D] seq-major against the head-major kernel on [N, H, Sq,
  // D]: the same bits, forward and backward, causal or not, f32. Sq != Sk.
  for (bool causal : {false, true}) {
    const int64_t n = 2, h = 3, sq = 37, sk = 41, d = 8, dv = 6;
    Problem p{{n, h}, sq, sk, d, dv, causal, 0.3};
    auto q = randomTensor<float>(Dims{n, sq, h, d});
    auto k = randomTensor<float>(Dims{n, sk, h, d});
    auto v = randomTensor<float>(Dims{n, sk, h, dv});
    auto dout = randomTensor<float>(Dims{n, sq, h, dv});
    HostTensor<float> qt = swapSeqHeads(q), kt = swapSeqHeads(k),
                      vt = swapSeqHeads(v), dt = swapSeqHeads(dout);
    Forward want = runForward(p, qt, kt, vt);
    Backward wantGrad = runBackward(p, qt, kt, vt, want, dt);

    HostTensor<float> o(Dims{n, sq, h, dv}), lse(Dims{n, h, sq});
    forwardCall(q, k, v, o, lse)
        .attrDouble(p.scale)
        .attr(causal)
        .attr(1)
        .run(weft_k_attention);
    HostTensor<float> dq(q.dims), dk(k.dims), dv2(v.dims);
    KernelCall()
        .tensor(q)
        .tensor(k)
        .tensor(v)
        .tensor(o)
        .tensor(lse)
        .tensor(dout)
        .tensor(dq)
        .tensor(dk)
        .tensor(dv2)
        .attrDouble(p.scale)
        .attr(causal)
        .attr(1)
        .run(weft_k_attention_grad);
    expectClose(swapSeqHeads(o).data, want.o.data, 0.0, 0.0);
    expectClose(lse.data, want.lse.data, 0.0, 0.0);
    expectClose(swapSeqHeads(dq).data, wantGrad.dq.data, 0.0, 0.0);
    expectClose(swapSeqHeads(dk).data, wantGrad.dk.data, 0.0, 0.0);
    expectClose(swapSeqHeads(dv2).data, wantGrad.dv.data, 0.0, 0.0);
  }
}

TEST(AttentionDeath, SeqMajorNeedsOneHeadCount) {
  auto q = randomTensor<float>(Dims{2, 4, 3, 8});
  auto k = randomTensor<float>(Dims{2, 4, 2, 8});
  auto v = randomTensor<float>(Dims{2, 4, 3, 8});
  HostTensor<float> o(Dims{2, 4, 3, 8}), lse(Dims{2, 3, 4});
  EXPECT_DEATH(forwardCall(q, k, v, o, lse)
                   .attrDouble(1.0)
                   .attr(0)
                   .attr(1)
                   .run(weft_k_attention),
               "same heads");
}

TEST(AttentionDeath, MismatchedHeadSize) {
  Problem p{{2}, 4, 4, 3, 3, false, 1.0};
  auto q = randomTensor<float>(p.dims(4, 3));
  auto k = randomTensor<float>(p.dims(4, 5));
  auto v = randomTensor<float>(p.dims(4, 3));
  HostTensor<float> o(p.dims(4, 3)), lse(Dims{2, 4});
  EXPECT_DEATH(forwardCall(q, k, v, o, lse)
                   .attrDouble(1.0)
                   .attr(0)
                   .run(weft_k_attention),
               "attention.*k's last dim must equal q's");
}

} // namespace
