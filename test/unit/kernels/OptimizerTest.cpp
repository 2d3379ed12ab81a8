// The optimizer kernels against torch.optim's formulas written out in double,
// over several steps (SGD's first step creates the momentum buffer), updating
// in place as the compiler does.
#include "KernelTestUtil.h"

#include <cmath>
#include <optional>

using namespace weft::test;

namespace {

struct AdamWConfig {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, wd = 1e-2;
};

void adamwReference(std::vector<double> &p, const std::vector<double> &g,
                    std::vector<double> &m, std::vector<double> &v, int64_t t,
                    const AdamWConfig &c) {
  for (size_t i = 0; i < p.size(); ++i) {
    p[i] *= 1 - c.lr * c.wd;
    m[i] = m[i] * c.beta1 + (1 - c.beta1) * g[i];
    v[i] = v[i] * c.beta2 + (1 - c.beta2) * g[i] * g[i];
    double bc1 = 1 - std::pow(c.beta1, double(t));
    double bc2 = 1 - std::pow(c.beta2, double(t));
    p[i] -= c.lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + c.eps);
  }
}

} // namespace

TEST(Optimizer, AdamWMatchesTorchFormulasInPlace) {
  AdamWConfig c;
  c.lr = 0.05;
  HostTensor<float> p = randomTensor<float>({37}, -1, 1);
  HostTensor<float> m({37}, std::vector<float>(37, 0.f));
  HostTensor<float> v({37}, std::vector<float>(37, 0.f));
  std::vector<double> pr(p.data.begin(), p.data.end()), mr(37, 0), vr(37, 0);
  for (int64_t t = 1; t <= 4; ++t) {
    HostTensor<float> g = randomTensor<float>({37}, -2, 2);
    std::vector<double> gr(g.data.begin(), g.data.end());
    HostTensor<int64_t> step({}, std::vector<int64_t>{t});
    KernelCall()
        .tensor(p)
        .tensor(g)
        .tensor(m)
        .tensor(v)
        .tensor(step)
        .tensor(p)
        .tensor(m)
        .tensor(v)
        .attrDouble(c.lr)
        .attrDouble(c.beta1)
        .attrDouble(c.beta2)
        .attrDouble(c.eps)
        .attrDouble(c.wd)
        .run(weft_k_adamw);
    adamwReference(pr, gr, mr, vr, t, c);
    for (int i = 0; i < 37; ++i) {
      EXPECT_NEAR(p[i], pr[i], 1e-5 * (1 + std::fabs(pr[i]))) << "t=" << t;
      EXPECT_NEAR(m[i], mr[i], 1e-5) << "t=" << t;
      EXPECT_NEAR(v[i], vr[i], 1e-5) << "t=" << t;
    }
  }
}

TEST(Optimizer, SgdMomentumNesterovAndPlain) {
  for (bool nesterov : {false, true})
    for (double momentum : {0.0, 0.9}) {
      SCOPED_TRACE(testing::Message()
                   << "momentum " << momentum << " nesterov " << nesterov);
      const double lr = 0.1, dampening = nesterov ? 0.0 : 0.25, wd = 0.01;
      const bool hasBuffer = momentum != 0;
      HostTensor<float> p = randomTensor<float>({19}, -1, 1);
      HostTensor<float> buf({19},
                            std::vector<float>(19, 123.f)); // unused at t=1
      std::vector<double> pr(p.data.begin(), p.data.end()), br(19, 0);
      for (int64_t t = 1; t <= 3; ++t) {
        HostTensor<float> g = randomTensor<float>({19}, -1, 1);
        HostTensor<int64_t> step({}, std::vector<int64_t>{t});
        KernelCall call;
        call.tensor(p).tensor(g);
        if (hasBuffer)
          call.tensor(buf);
        call.tensor(step).tensor(p);
        if (hasBuffer)
          call.tensor(buf);
        call.attrDouble(lr)
            .attrDouble(momentum)
            .attrDouble(dampening)
            .attrDouble(wd)
            .attr(nesterov)
            .attr(hasBuffer)
            .run(weft_k_sgd);
        for (int i = 0; i < 19; ++i) {
          double d = g[i] + wd * pr[i];
          if (hasBuffer) {
            br[i] = t == 1 ? d : br[i] * momentum + (1 - dampening) * d;
            d = nesterov ? d + momentum * br[i] : br[i];
          }
          pr[i] -= lr * d;
          EXPECT_NEAR(p[i], pr[i], 1e-5) << "t=" << t;
          if (hasBuffer) {
            EXPECT_NEAR(buf[i], br[i], 1e-5) << "t=" << t;
          }
        }
      }
    }
}

namespace {

/// A learning-rate schedule's kernel attributes (LrSchedule.h).
struct ScheduleAttrs {
  int64_t kind, warmup, decay;
  double minRatio;
};

/// One in-place SGD update of rate 0.1 (no momentum, no decay), under
/// `schedule` when given.
void runPlainSgd(HostTensor<float> &p, HostTensor<float> &g,
                 HostTensor<int64_t> &step,
                 std::optional<ScheduleAttrs> schedule = std::nullopt) {
  KernelCall call;
  call.tensor(p)
      .tensor(g)
      .tensor(step)
      .tensor(p)
      .attrDouble(0.1)
      .attrDouble(0)
      .attrDouble(0)
      .attrDouble(0)
      .attr(0)
      .attr(0);
  if (schedule)
    call.attr(schedule->kind)
        .attr(schedule->warmup)
        .attr(schedule->decay)
        .attrDouble(schedule->minRatio);
  call.run(weft_k_sgd);
}

} // namespace

TEST(OptimizerDeath, StepMustBePositive) {
  HostTensor<float> p({2}, std::vector<float>{1, 2}), g({2}, {1, 1});
  HostTensor<int64_t> step({}, std::vector<int64_t>{0});
  EXPECT_EXIT(runPlainSgd(p, g, step), testing::ExitedWithCode(1),
              "step number must be at least 1");
}

namespace {

/// The rates SGD (no momentum, no decay, gradient 1) takes at updates t =
/// 1, 2, ... under a schedule in the kernel's trailing attributes.
std::vector<double> scheduledRates(int64_t kind, int64_t warmup, int64_t decay,
                                   double minRatio, int64_t updates) {
  HostTensor<float> p({1}, std::vector<float>{0.f}), g({1}, {1.f});
  std::vector<double> rates;
  for (int64_t t = 1; t <= updates; ++t) {
    HostTensor<int64_t> step({}, std::vector<int64_t>{t});
    const float before = p[0];
    runPlainSgd(p, g, step, ScheduleAttrs{kind, warmup, decay, minRatio});
    rates.push_back(static_cast<double>(before) - p[0]);
  }
  return rates;
}

void expectRates(const std::vector<double> &got,
                 const std::vector<double> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 2e-7) << "update " << i + 1;
}

} // namespace

// Hugging Face's schedules (LrSchedule.h), written out by hand for lr 0.1:
// the warmup's first update takes rate 0, cosine and linear reach the
// minimum at the decay step and stay there.
TEST(Optimizer, LearningRateSchedules) {
  const double half = 0.5 * (1 + std::cos(M_PI / 4)); // cosine at 1/4
  expectRates(scheduledRates(/*cosine*/ 2, 2, 6, 0.1, 8),
              {0.0, 0.05, 0.1, 0.1 * (0.1 + 0.9 * half), 0.1 * (0.1 + 0.45),
               0.1 * (0.1 + 0.9 * (1 - half)), 0.01, 0.01});
  expectRates(scheduledRates(/*linear*/ 1, 0, 4, 0.0, 6),
              {0.1, 0.075, 0.05, 0.025, 0.0, 0.0});
  expectRates(scheduledRates(/*constant*/ 0, 3, 0, 0.0, 5),
              {0.0, 0.1 / 3, 0.2 / 3, 0.1, 0.1});
}

TEST(OptimizerDeath, ScheduleAttributesAreChecked) {
  HostTensor<float> p({2}, std::vector<float>{1, 2}), g({2}, {1, 1});
  HostTensor<int64_t> step({}, std::vector<int64_t>{1});
  EXPECT_EXIT(runPlainSgd(p, g, step, ScheduleAttrs{7, 0, 10, 0.0}),
              testing::ExitedWithCode(1),
              "invalid learning-rate schedule attributes");
}
