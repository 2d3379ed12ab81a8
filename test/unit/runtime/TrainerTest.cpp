//===- TrainerTest.cpp - Training signatures, options, data, progress -----===//

#include "runtime/executor/Trainer.h"
#include "runtime/executor/DataLoader.h"
#include "runtime/executor/Progress.h"

#include "weft/runtime/Executor.h"
#include "weft/runtime/Npy.h"

#include "TestUtil.h"

#include <cmath>
#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace weft;
using weft::test::TempDir;

namespace {

const char *kTrainSignature = R"({"format_version":1,"mode":"train",
  "arena_bytes":64,
  "params":[{"name":"w","dtype":"f32","shape":[2],"role":"param",
             "trainable":true},
            {"name":"m","dtype":"f32","shape":[2],"role":"optimizer_state"},
            {"name":"step","dtype":"i64","shape":[],"role":"step"}],
  "inputs":[{"name":"x","dtype":"f32","shape":[3,2],"batch_dim":0},
            {"name":"label","dtype":"i64","shape":[3],"batch_dim":0}],
  "outputs":[{"name":"loss","dtype":"f32","shape":[]}]})";

//===--- Row windows ------------------------------------------------------===//

std::vector<RowRange> ranges(std::initializer_list<RowRange> r) { return r; }

TEST(RowWindow, NoWrap) {
  EXPECT_EQ(rowWindow(0, 8, 20), ranges({{0, 8}}));
  EXPECT_EQ(rowWindow(8, 8, 20), ranges({{8, 8}}));
  EXPECT_EQ(rowWindow(12, 8, 20), ranges({{12, 8}}));
}

TEST(RowWindow, WrapsRowByRow) {
  // N = 20, B = 8: step 2 takes rows 16..19 then 0..3.
  EXPECT_EQ(rowWindow(16, 8, 20), ranges({{16, 4}, {0, 4}}));
  EXPECT_EQ(rowWindow(24, 8, 20), ranges({{4, 8}}));
  EXPECT_EQ(rowWindow(32, 8, 20), ranges({{12, 8}}));
  EXPECT_EQ(rowWindow(40, 8, 20), ranges({{0, 8}}));
  EXPECT_EQ(rowWindow(72, 8, 20), ranges({{12, 8}}));
}

TEST(RowWindow, ExactAndSingleRowFiles) {
  EXPECT_EQ(rowWindow(0, 8, 8), ranges({{0, 8}}));
  EXPECT_EQ(rowWindow(80, 8, 8), ranges({{0, 8}}));
  EXPECT_EQ(rowWindow(5, 1, 1), ranges({{0, 1}}));
  // Large positions (long runs) stay exact.
  int64_t big = int64_t(1) << 50;
  EXPECT_EQ(rowWindow(big, 8, 20), ranges({{big % 20, 8}}));
}

// --shuffle: every epoch a permutation of the rows, another one each epoch
// and for each seed, the same every time it is asked (a resumed run reads
// what an uninterrupted one read); far epochs (long runs) work alike.
TEST(ShuffledRow, EachEpochIsAPermutationOfItsOwn) {
  for (int64_t rows : {1, 2, 3, 5, 16, 17, 20, 1000, 4097}) {
    SCOPED_TRACE(rows);
    std::vector<std::vector<int64_t>> epochs;
    for (int64_t epoch : {int64_t{0}, int64_t{1}, int64_t{1} << 40}) {
      std::vector<int64_t> order;
      std::vector<bool> seen(rows, false);
      for (int64_t i = 0; i < rows; ++i) {
        int64_t row = shuffledRow(7, epoch * rows + i, rows);
        ASSERT_GE(row, 0);
        ASSERT_LT(row, rows);
        EXPECT_FALSE(seen[row]) << "row " << row << " twice";
        seen[row] = true;
        order.push_back(row);
        EXPECT_EQ(shuffledRow(7, epoch * rows + i, rows), row);
      }
      epochs.push_back(order);
    }
    if (rows >= 16) {
      EXPECT_NE(epochs[0], epochs[1]);
      EXPECT_NE(epochs[1], epochs[2]);
      std::vector<int64_t> identity(rows);
      for (int64_t i = 0; i < rows; ++i)
        identity[i] = i;
      EXPECT_NE(epochs[0], identity);
      std::vector<int64_t> otherSeed;
      for (int64_t i = 0; i < rows; ++i)
        otherSeed.push_back(shuffledRow(8, i, rows));
      EXPECT_NE(otherSeed, epochs[0]);
    }
  }
  // The Python twin's values (test/tools/weft_tools.py shuffled_row), which
  // the training checks give PyTorch's loop.
  const std::vector<int64_t> epoch0 = {16, 3, 12, 8,  5, 13, 17, 15, 14, 11,
                                       9,  1, 7,  19, 4, 2,  18, 6,  0,  10};
  for (int64_t i = 0; i < 20; ++i)
    EXPECT_EQ(shuffledRow(7, i, 20), epoch0[i]);
  EXPECT_EQ(shuffledRow(7, 21, 20), 8);
  EXPECT_EQ(shuffledRow(123, 1000003, 1000), 386);
  EXPECT_EQ(shuffledRow(~uint64_t{0}, 5, 4097), 462);
}

TEST(RowWindow, MatchesTheDefinition) {
  for (int64_t rows = 1; rows <= 9; ++rows)
    for (int64_t batch = 1; batch <= rows; ++batch)
      for (int64_t step = 0; step < 12; ++step) {
        std::vector<int64_t> got;
        for (const RowRange &r : rowWindow(step * batch, batch, rows))
          for (int64_t k = 0; k < r.count; ++k)
            got.push_back(r.start + k);
        std::vector<int64_t> want;
        for (int64_t i = step * batch; i < (step + 1) * batch; ++i)
          want.push_back(i % rows);
        EXPECT_EQ(got, want) << rows << " " << batch << " " << step;
        EXPECT_LE(rowWindow(step * batch, batch, rows).size(), 2u);
      }
}

//===--- Training signatures ----------------------------------------------===//

TEST(TrainSignature, Parses) {
  ModelSignature sig;
  std::string error;
  ASSERT_TRUE(parseModelSignature(kTrainSignature, sig, error)) << error;
  EXPECT_TRUE(sig.isTraining());
  EXPECT_EQ(sig.globalBatch(), 3);
  ASSERT_EQ(sig.params.size(), 3u);
  EXPECT_EQ(sig.params[0].role, StateRole::Param);
  EXPECT_TRUE(sig.params[0].trainable);
  EXPECT_EQ(sig.params[1].role, StateRole::OptimizerState);
  EXPECT_EQ(sig.params[2].role, StateRole::Step);
  EXPECT_EQ(sig.inputs[1].batchDim, 0);
  EXPECT_STREQ(stateRoleName(StateRole::OptimizerState), "optimizer_state");
}

TEST(TrainSignature, InferenceByDefault) {
  ModelSignature sig;
  std::string error;
  ASSERT_TRUE(parseModelSignature(
      R"({"format_version":1,"arena_bytes":0,"params":[],"inputs":[],
          "outputs":[]})",
      sig, error));
  EXPECT_FALSE(sig.isTraining());
  ASSERT_TRUE(parseModelSignature(
      R"({"format_version":1,"mode":"inference","arena_bytes":0,"params":[],
          "inputs":[{"name":"x","dtype":"f32","shape":[2],"batch_dim":0}],
          "outputs":[]})",
      sig, error));
  EXPECT_FALSE(sig.isTraining());
}

void expectBad(const std::string &json, const std::string &needle);

// Data and sequence parallelism: an input's rows over one mesh axis and
// each row's sequence over another.
TEST(TrainSignature, SequenceShard) {
  const std::string head =
      R"({"format_version":1,"arena_bytes":0,"world_size":4,
          "mesh":{"axes":["dp","tp"],"shape":[2,2]},"params":[],
          "outputs":[],"inputs":[{"name":"t","dtype":"i64","batch_dim":0,)";
  ModelSignature sig;
  std::string error;
  ASSERT_TRUE(parseModelSignature(
      head + R"("shape":[4,6],"shard":{"dim":0,"mesh_axes":[0]},
                "sequence_shard":{"dim":1,"mesh_axes":[1]}}]})",
      sig, error))
      << error;
  EXPECT_EQ(sig.inputs[0].shardDim, 0);
  EXPECT_EQ(sig.inputs[0].sequenceDim, 1);
  EXPECT_EQ(sig.inputs[0].sequenceAxes, std::vector<int64_t>{1});
  EXPECT_EQ(sig.globalBatch(), 8);
  const std::string why = "invalid \"sequence_shard\"";
  // Only dim 1, and only with rows split along dim 0.
  expectBad(head + R"("shape":[4,6],"shard":{"dim":0,"mesh_axes":[0]},
                      "sequence_shard":{"dim":0,"mesh_axes":[1]}}]})",
            why);
  expectBad(head + R"("shape":[4,6],
                      "sequence_shard":{"dim":1,"mesh_axes":[1]}}]})",
            why);
  expectBad(head + R"("shape":[4],"shard":{"dim":0,"mesh_axes":[0]},
                      "sequence_shard":{"dim":1,"mesh_axes":[1]}}]})",
            why);
  expectBad(head + R"("shape":[4,6],"shard":{"dim":0,"mesh_axes":[0]},
                      "sequence_shard":{"dim":1}}]})",
            why);
}

void expectBad(const std::string &json, const std::string &needle) {
  ModelSignature sig;
  std::string error;
  EXPECT_FALSE(parseModelSignature(json, sig, error)) << json;
  EXPECT_NE(error.find(needle), std::string::npos) << error;
}

TEST(TrainSignature, Errors) {
  std::string head = R"({"format_version":1,"mode":"train","arena_bytes":0,)";
  std::string okInputs =
      R"("inputs":[{"name":"x","dtype":"f32","shape":[3,2],"batch_dim":0}],)";
  std::string okOutputs = R"("outputs":[{"name":"loss","dtype":"f32",
                               "shape":[]}]})";
  expectBad(R"({"format_version":1,"mode":"eval","arena_bytes":0,
               "params":[],"inputs":[],"outputs":[]})",
            "\"mode\" must be");
  expectBad(head + R"("params":[{"name":"w","dtype":"f32","shape":[2]}],)" +
                okInputs + okOutputs,
            "params entry 'w' of a training model has no role");
  expectBad(head +
                R"("params":[{"name":"w","dtype":"f32","shape":[2],
                              "role":"weights"}],)" +
                okInputs + okOutputs,
            "\"role\" must be");
  expectBad(head +
                R"("params":[{"name":"w","dtype":"f32","shape":[2],
                              "role":"param","trainable":1}],)" +
                okInputs + okOutputs,
            "\"trainable\" is not a boolean");
  expectBad(head + R"("params":[],)" +
                R"("inputs":[{"name":"x","dtype":"f32","shape":[3,2]}],)" +
                okOutputs,
            "input 'x' of a training model needs batch_dim 0");
  expectBad(head + R"("params":[],)" +
                R"("inputs":[{"name":"x","dtype":"f32","shape":[3,2],
                              "batch_dim":2}],)" +
                okOutputs,
            "\"batch_dim\" is not a dimension");
  expectBad(head + R"("params":[],)" +
                R"("inputs":[{"name":"x","dtype":"f32","shape":[3,2],
                              "batch_dim":0},
                             {"name":"y","dtype":"f32","shape":[4],
                              "batch_dim":0}],)" +
                okOutputs,
            "input 'y' has batch dimension 4 but the global batch is 3");
  expectBad(head + R"("params":[],"inputs":[],)" + okOutputs,
            "at least one input");
  expectBad(head + R"("params":[],)" + okInputs +
                R"("outputs":[{"name":"loss","dtype":"f32","shape":[1]}]})",
            "must be the loss, a float scalar");
  expectBad(head + R"("params":[],)" + okInputs + R"("outputs":[]})",
            "must be the loss");
}

//===--- Options ----------------------------------------------------------===//

Status parse(std::vector<std::string> args, TrainOptions &out) {
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(&a[0]);
  return parseTrainOptions(static_cast<int>(argv.size()), argv.data(), out);
}

TEST(TrainOptions, Parses) {
  TrainOptions o;
  Status s = parse({"--train", "--bundle", "b", "--data", "x=x.npy",
                    "--data=y=y.npy", "--steps", "10", "--metrics=m.jsonl",
                    "--checkpoint-dir", "ck", "--save-every", "3", "--resume"},
                   o);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(o.bundleDir, "b");
  ASSERT_EQ(o.data.size(), 2u);
  EXPECT_EQ(o.data[1].first, "y");
  EXPECT_EQ(o.data[1].second, "y.npy");
  EXPECT_EQ(o.steps, 10);
  EXPECT_EQ(o.metricsFile, "m.jsonl");
  EXPECT_EQ(o.checkpointDir, "ck");
  EXPECT_EQ(o.saveEvery, 3);
  EXPECT_TRUE(o.resume);
}

void expectUsageError(std::vector<std::string> args,
                      const std::string &needle) {
  TrainOptions o;
  Status s = parse(std::move(args), o);
  EXPECT_EQ(s.code, 2);
  EXPECT_NE(s.message.find(needle), std::string::npos) << s.message;
}

TEST(TrainOptions, Errors) {
  expectUsageError({"--data", "x=x.npy"}, "--steps is required");
  expectUsageError({"--steps", "0"},
                   "--steps expects a positive integer, got '0'");
  expectUsageError({"--steps", "-3"}, "--steps expects a positive integer");
  expectUsageError({"--steps", "ten"}, "--steps expects a positive integer");
  expectUsageError(
      {"--steps", "3", "--save-every", "0", "--checkpoint-dir", "ck"},
      "--save-every expects a positive integer");
  expectUsageError({"--steps", "3", "--save-every", "2"},
                   "--save-every needs --checkpoint-dir");
  expectUsageError({"--steps", "3", "--resume"},
                   "--resume needs --checkpoint-dir");
  expectUsageError({"--steps", "3", "--data", "x.npy"},
                   "--data expects NAME=FILE.npy");
  expectUsageError({"--steps", "3", "--input", "x=x.npy"},
                   "--input is for inference runs");
  expectUsageError({"--steps", "3", "--bogus"}, "unknown option '--bogus'");
  expectUsageError({"--steps"}, "'--steps' needs a value");
  TrainOptions o;
  EXPECT_TRUE(parse({"--help"}, o).ok());
  EXPECT_TRUE(o.help);
}

//===--- Data -------------------------------------------------------------===//

TEST(DataLoader, FillsWrappedBatches) {
  ModelSignature sig;
  std::string error;
  ASSERT_TRUE(parseModelSignature(kTrainSignature, sig, error)) << error;
  TempDir dir;
  // x: 5 rows of 2 floats (row r holds r, r + 0.5); label: 5 rows.
  std::vector<float> x;
  std::vector<int64_t> label;
  for (int r = 0; r < 5; ++r) {
    x.push_back(static_cast<float>(r));
    x.push_back(static_cast<float>(r) + 0.5f);
    label.push_back(100 + r);
  }
  ASSERT_TRUE(writeNpy(dir.file("x.npy"), WEFT_F32, {5, 2}, x.data(), error));
  ASSERT_TRUE(writeNpy(dir.file("l.npy"), WEFT_I64, {5}, label.data(), error));
  DataLoader loader;
  Status s = loader.open(
      sig, {{"label", dir.file("l.npy")}, {"x", dir.file("x.npy")}});
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(loader.batch(), 3);
  EXPECT_EQ(loader.rows(0), 5);
  HostTensor bx, bl;
  ASSERT_TRUE(bx.data.allocate(3 * 2 * 4));
  ASSERT_TRUE(bl.data.allocate(3 * 8));
  std::vector<HostTensor *> inputs = {&bx, &bl};
  // Step 1 (position 3): rows 3, 4, 0.
  loader.fill(3, inputs);
  const float *fx = static_cast<const float *>(bx.data.data());
  const int64_t *fl = static_cast<const int64_t *>(bl.data.data());
  EXPECT_EQ(fx[0], 3.0f);
  EXPECT_EQ(fx[1], 3.5f);
  EXPECT_EQ(fx[2], 4.0f);
  EXPECT_EQ(fx[4], 0.0f);
  EXPECT_EQ(fx[5], 0.5f);
  EXPECT_EQ(fl[0], 103);
  EXPECT_EQ(fl[1], 104);
  EXPECT_EQ(fl[2], 100);
  // Step 3 (position 9): rows 4, 0, 1.
  loader.fill(9, inputs);
  EXPECT_EQ(fl[0], 104);
  EXPECT_EQ(fl[1], 100);
  EXPECT_EQ(fl[2], 101);
  EXPECT_EQ(fx[4], 1.0f);
}

void expectDataError(
    const std::vector<std::pair<std::string, std::string>> &data,
    const std::string &needle) {
  ModelSignature sig;
  std::string error;
  ASSERT_TRUE(parseModelSignature(kTrainSignature, sig, error)) << error;
  DataLoader loader;
  Status s = loader.open(sig, data);
  EXPECT_EQ(s.code, 2);
  EXPECT_NE(s.message.find(needle), std::string::npos) << s.message;
}

TEST(DataLoader, Errors) {
  TempDir dir;
  std::string error;
  std::vector<float> f(40, 1.0f);
  std::vector<int64_t> i64(20, 1);
  std::vector<double> f64(20, 1.0);
  ASSERT_TRUE(writeNpy(dir.file("x.npy"), WEFT_F32, {4, 2}, f.data(), error));
  ASSERT_TRUE(writeNpy(dir.file("x3.npy"), WEFT_F32, {4, 3}, f.data(), error));
  ASSERT_TRUE(writeNpy(dir.file("x1d.npy"), WEFT_F32, {8}, f.data(), error));
  ASSERT_TRUE(
      writeNpy(dir.file("x64.npy"), WEFT_F64, {4, 2}, f64.data(), error));
  ASSERT_TRUE(
      writeNpy(dir.file("short.npy"), WEFT_F32, {2, 2}, f.data(), error));
  ASSERT_TRUE(writeNpy(dir.file("l.npy"), WEFT_I64, {4}, i64.data(), error));
  std::string x = dir.file("x.npy"), l = dir.file("l.npy");
  expectDataError({{"x", x}}, "missing --data for input 'label'");
  expectDataError({{"x", x}, {"label", l}, {"z", x}},
                  "--data: unknown input 'z'");
  expectDataError({{"x", x}, {"label", l}, {"x", x}},
                  "input 'x' is given twice");
  expectDataError({{"x", dir.file("x3.npy")}, {"label", l}},
                  "expected f32[N,2], got f32[4,3] (wrong shape after dim 0)");
  expectDataError({{"x", dir.file("x1d.npy")}, {"label", l}},
                  "expected f32[N,2], got f32[8]");
  expectDataError({{"x", dir.file("x64.npy")}, {"label", l}},
                  "expected f32[N,2], got f64[4,2] (wrong dtype)");
  expectDataError({{"x", dir.file("short.npy")}, {"label", l}},
                  "has 2 rows, the global batch needs 3");
  expectDataError({{"x", dir.file("nope.npy")}, {"label", l}}, "No such file");
}

//===--- Progress and metrics ---------------------------------------------===//

TEST(Progress, Eta) {
  EXPECT_EQ(formatEta(0), "00:00");
  EXPECT_EQ(formatEta(3.4), "00:03");
  EXPECT_EQ(formatEta(59.6), "01:00");
  EXPECT_EQ(formatEta(3599), "59:59");
  EXPECT_EQ(formatEta(3600), "1:00:00");
  EXPECT_EQ(formatEta(86400 + 61), "24:01:01");
  EXPECT_EQ(formatEta(-1), "--:--");
  EXPECT_EQ(formatEta(NAN), "--:--");
}

TEST(Progress, Line) {
  EXPECT_EQ(formatProgressLine(5, 10, 0.123456, 812.34, 3.2),
            "step 5/10  loss 0.123456  812.3 samples/s  ETA 00:03");
  EXPECT_EQ(formatProgressLine(1, 2, 2.5e-9, 10, 0),
            "step 1/2  loss 2.5e-09  10.0 samples/s  ETA 00:00");
}

TEST(Metrics, LinesUpTo) {
  std::string text = "{\"step\":1,\"loss\":1}\n"
                     "{\"step\":2,\"loss\":2}\n"
                     "{\"step\":3,\"loss\":3}\n"
                     "{\"step\":4,\"lo";
  EXPECT_EQ(metricsLinesUpTo(text, 2),
            "{\"step\":1,\"loss\":1}\n{\"step\":2,\"loss\":2}\n");
  EXPECT_EQ(metricsLinesUpTo(text, 9),
            "{\"step\":1,\"loss\":1}\n{\"step\":2,\"loss\":2}\n"
            "{\"step\":3,\"loss\":3}\n");
  EXPECT_EQ(metricsLinesUpTo(text, 0), "");
  EXPECT_EQ(metricsLinesUpTo("garbage\n{\"step\":1}\n", 1), "{\"step\":1}\n");
}

TEST(Metrics, Writer) {
  TempDir dir;
  std::string path = dir.file("m.jsonl");
  {
    MetricsWriter w;
    ASSERT_TRUE(w.open(path, -1).ok());
    ASSERT_TRUE(w.write(1, 0.5, 0.25, 32).ok());
    ASSERT_TRUE(w.write(2, NAN, 0.25, 32).ok());
    ASSERT_TRUE(w.write(3, 0.125, 0.25, 32).ok());
  }
  EXPECT_EQ(test::readBytes(path),
            "{\"step\":1,\"loss\":0.5,\"step_time_s\":0.25,"
            "\"samples_per_s\":32}\n"
            "{\"step\":2,\"loss\":null,\"step_time_s\":0.25,"
            "\"samples_per_s\":32}\n"
            "{\"step\":3,\"loss\":0.125,\"step_time_s\":0.25,"
            "\"samples_per_s\":32}\n");
  {
    MetricsWriter w;
    ASSERT_TRUE(w.open(path, 1).ok()); // resume at step 1: 2 and 3 dropped
    ASSERT_TRUE(w.write(2, 4, 1, 8).ok());
  }
  EXPECT_EQ(test::readBytes(path),
            "{\"step\":1,\"loss\":0.5,\"step_time_s\":0.25,"
            "\"samples_per_s\":32}\n"
            "{\"step\":2,\"loss\":4,\"step_time_s\":1,\"samples_per_s\":8}\n");
  MetricsWriter w;
  Status s = w.open(dir.file("no/such/dir/m.jsonl"), -1);
  EXPECT_EQ(s.code, 2);
  EXPECT_NE(s.message.find("--metrics: cannot open"), std::string::npos);
}

} // namespace
