//===- ExecutorTest.cpp - Signature, options and the in-process executor --===//

#include "weft/runtime/Executor.h"

#include "weft/runtime/Json.h"
#include "weft/runtime/Npy.h"
#include "weft/runtime/Safetensors.h"

#include "TestUtil.h"

#include <cstdlib>
#include <gtest/gtest.h>
#include <string>
#include <vector>

using namespace weft;
using weft::test::TempDir;

namespace {

const char *kSignature = R"({"format_version":1,"arena_bytes":100,
  "arena_alignment":128,
  "params":[{"name":"scale","dtype":"f32","shape":[3]}],
  "inputs":[{"name":"x","dtype":"f32","shape":[2,3]},
            {"name":"n","dtype":"i64","shape":[]}],
  "outputs":[{"name":"y/0","dtype":"f32","shape":[2,3]},
             {"name":"count","dtype":"i32","shape":[1]}]})";

int gRuns = 0;

/// y = x * scale + n; count = number of runs so far (kept in the arena).
void fakeRun(void *arena, void *const *params, void *const *inputs,
             void *const *outputs) {
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena) % 128, 0u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(inputs[i]) % 64, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(outputs[i]) % 64, 0u);
  }
  const float *scale = static_cast<const float *>(params[0]);
  const float *x = static_cast<const float *>(inputs[0]);
  int64_t n = *static_cast<const int64_t *>(inputs[1]);
  float *y = static_cast<float *>(outputs[0]);
  for (int i = 0; i < 6; ++i)
    y[i] = x[i] * scale[i % 3] + static_cast<float>(n);
  int32_t *counter = static_cast<int32_t *>(arena);
  ++*counter;
  *static_cast<int32_t *>(outputs[1]) = *counter;
  ++gRuns;
}

TEST(Signature, Parses) {
  ModelSignature sig;
  std::string error;
  ASSERT_TRUE(parseModelSignature(kSignature, sig, error)) << error;
  EXPECT_EQ(sig.formatVersion, 1);
  EXPECT_EQ(sig.arenaBytes, 100u);
  EXPECT_EQ(sig.arenaAlignment, 128u);
  ASSERT_EQ(sig.params.size(), 1u);
  EXPECT_EQ(sig.params[0].name, "scale");
  EXPECT_EQ(sig.params[0].byteSize, 12u);
  ASSERT_EQ(sig.inputs.size(), 2u);
  EXPECT_EQ(sig.inputs[1].dtype, WEFT_I64);
  EXPECT_TRUE(sig.inputs[1].shape.empty());
  EXPECT_EQ(sig.inputs[1].byteSize, 8u);
  ASSERT_EQ(sig.outputs.size(), 2u);
  EXPECT_EQ(sig.outputs[0].name, "y/0");

  const char *minimal = R"({"format_version":1,"arena_bytes":0,"params":[],
    "inputs":[],"outputs":[{"name":"c","dtype":"bf16","shape":[0,2]}]})";
  ASSERT_TRUE(parseModelSignature(minimal, sig, error)) << error;
  EXPECT_EQ(sig.arenaAlignment, 64u);
  EXPECT_EQ(sig.outputs[0].dtype, WEFT_BF16);
  EXPECT_EQ(sig.outputs[0].byteSize, 0u);

  // Launches name their kernel and, for traces, their tensors' types.
  const char *launches = R"({"format_version":1,"arena_bytes":0,"params":[],
    "inputs":[],"outputs":[],"launches":[{"kernel":"conv","backward":true,
    "tensors":["16x3x32x32xf32","64x3x7x7xf32","16x64x16x16xf32"]},
    {"kernel":"comm_progress"}]})";
  ASSERT_TRUE(parseModelSignature(launches, sig, error)) << error;
  ASSERT_EQ(sig.launches.size(), 2u);
  EXPECT_EQ(sig.launches[0].kernel, "conv");
  EXPECT_TRUE(sig.launches[0].backward);
  EXPECT_EQ(sig.launches[0].tensors,
            (std::vector<std::string>{"16x3x32x32xf32", "64x3x7x7xf32",
                                      "16x64x16x16xf32"}));
  EXPECT_TRUE(sig.launches[1].tensors.empty());
}

TEST(Signature, Errors) {
  auto errorOf = [](const std::string &json) {
    ModelSignature sig;
    std::string error;
    EXPECT_FALSE(parseModelSignature(json, sig, error)) << json;
    return error;
  };
  const std::string lists = R"("params":[],"inputs":[],"outputs":[])";
  EXPECT_EQ(errorOf("{"), "invalid model signature: byte 1: unexpected end of "
                          "input, expected a member name");
  EXPECT_EQ(errorOf(R"({"format_version":2,"arena_bytes":0,)" + lists + "}"),
            "invalid model signature: unsupported format_version 2 (this "
            "runtime reads 1)");
  EXPECT_EQ(errorOf(R"({"format_version":1,)" + lists + "}"),
            "invalid model signature: missing or negative \"arena_bytes\"");
  EXPECT_EQ(errorOf(R"({"format_version":1,"arena_bytes":0,)"
                    R"("arena_alignment":48,)" +
                    lists + "}"),
            "invalid model signature: \"arena_alignment\" is not a power of "
            "two");
  EXPECT_EQ(errorOf(R"({"format_version":1,"arena_bytes":0,"params":[],)"
                    R"("inputs":[]})"),
            "invalid model signature: \"outputs\" is missing or not an array");
  EXPECT_EQ(
      errorOf(R"({"format_version":1,"arena_bytes":0,"params":[],"outputs":[],)"
              R"("inputs":[{"name":"x","dtype":"f128","shape":[1]}]})"),
      "invalid model signature: inputs[0] ('x'): missing or unknown \"dtype\"");
  EXPECT_EQ(
      errorOf(R"({"format_version":1,"arena_bytes":0,"params":[],"outputs":[],)"
              R"("inputs":[{"name":"x","dtype":"f32","shape":[1,-1]}]})"),
      "invalid model signature: inputs[0] ('x'): invalid dimension in "
      "\"shape\"");
  EXPECT_EQ(
      errorOf(R"({"format_version":1,"arena_bytes":0,"inputs":[],"outputs":[],)"
              R"("params":[{"name":"w","dtype":"f32","shape":[1]},)"
              R"({"name":"w","dtype":"f32","shape":[1]}]})"),
      "invalid model signature: params[1] ('w'): the name appears twice");
  EXPECT_EQ(
      errorOf(R"({"format_version":1,"arena_bytes":0,"inputs":[],"outputs":[],)"
              R"("params":[{"dtype":"f32","shape":[1]}]})"),
      "invalid model signature: params[0] has no \"name\"");
  EXPECT_EQ(errorOf(R"({"format_version":1,"arena_bytes":0,)" + lists +
                    R"(,"launches":[{"kernel":"a","tensors":"4xf32"}]})"),
            "invalid model signature: launch 0: \"tensors\" is not an array");
  EXPECT_EQ(errorOf(R"({"format_version":1,"arena_bytes":0,)" + lists +
                    R"(,"launches":[{"kernel":"a","tensors":[4]}]})"),
            "invalid model signature: launch 0: \"tensors\" entry is not a "
            "string");
}

Status parseArgs(std::vector<std::string> args, RunOptions &options) {
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(&a[0]);
  return parseRunOptions(static_cast<int>(argv.size()), argv.data(), options);
}

TEST(RunOptions, Parses) {
  RunOptions o;
  Status s =
      parseArgs({"--bundle", "B", "--input", "x=a.npy", "--input=n=b=c",
                 "--output-dir=out", "--repeat", "5", "--warmup=2", "--quiet"},
                o);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(o.bundleDir, "B");
  ASSERT_EQ(o.inputs.size(), 2u);
  EXPECT_EQ(o.inputs[0],
            std::make_pair(std::string("x"), std::string("a.npy")));
  EXPECT_EQ(o.inputs[1], std::make_pair(std::string("n"), std::string("b=c")));
  EXPECT_EQ(o.outputDir, "out");
  EXPECT_EQ(o.repeat, 5);
  EXPECT_EQ(o.warmup, 2);
  EXPECT_TRUE(o.timed);
  EXPECT_TRUE(o.quiet);

  RunOptions timing;
  EXPECT_TRUE(parseArgs({"--repeat", "3"}, timing).ok());
  RunOptions help;
  EXPECT_TRUE(parseArgs({"--help"}, help).ok());
  EXPECT_TRUE(help.help);
}

TEST(RunOptions, Errors) {
  auto errorOf = [](std::vector<std::string> args) {
    RunOptions o;
    Status s = parseArgs(args, o);
    EXPECT_EQ(s.code, 2);
    EXPECT_TRUE(s.showUsage);
    return s.message;
  };
  EXPECT_EQ(errorOf({}), "--output-dir is required");
  EXPECT_EQ(errorOf({"--output-dir", "o", "--frobnicate"}),
            "unknown option '--frobnicate'");
  EXPECT_EQ(errorOf({"--output-dir", "o", "stray"}),
            "unexpected argument 'stray'");
  EXPECT_EQ(errorOf({"--output-dir"}), "option '--output-dir' needs a value");
  EXPECT_EQ(errorOf({"--output-dir", "o", "--input", "x.npy"}),
            "--input expects NAME=FILE.npy, got 'x.npy'");
  EXPECT_EQ(errorOf({"--output-dir", "o", "--input", "=x.npy"}),
            "--input expects NAME=FILE.npy, got '=x.npy'");
  EXPECT_EQ(errorOf({"--output-dir", "o", "--repeat", "0"}),
            "--repeat expects a positive integer, got '0'");
  EXPECT_EQ(errorOf({"--output-dir", "o", "--repeat", "3x"}),
            "--repeat expects a positive integer, got '3x'");
  EXPECT_EQ(errorOf({"--output-dir", "o", "--warmup", "-1"}),
            "--warmup expects a non-negative integer, got '-1'");
}

TEST(Executor, OutputFileNames) {
  EXPECT_EQ(outputFileName("y"), "y.npy");
  EXPECT_EQ(outputFileName("logits.1-a_b"), "logits.1-a_b.npy");
  EXPECT_EQ(outputFileName("a/b:0 c"), "a_b_0_c.npy");
  EXPECT_EQ(outputFileName(".."), "__.npy");
  EXPECT_EQ(paramsFileName(3), "params.rank3.safetensors");
}

TEST(Executor, Rank) {
  const char *vars[] = {"OMPI_COMM_WORLD_RANK", "RANK", "SLURM_PROCID"};
  for (const char *v : vars)
    unsetenv(v);
  int64_t rank = -1;
  EXPECT_TRUE(currentRank(rank).ok());
  EXPECT_EQ(rank, 0);
  setenv("SLURM_PROCID", "5", 1);
  EXPECT_TRUE(currentRank(rank).ok());
  EXPECT_EQ(rank, 5);
  setenv("RANK", "3", 1);
  EXPECT_TRUE(currentRank(rank).ok());
  EXPECT_EQ(rank, 3);
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  EXPECT_TRUE(currentRank(rank).ok());
  EXPECT_EQ(rank, 1);
  setenv("OMPI_COMM_WORLD_RANK", "one", 1);
  Status s = currentRank(rank);
  EXPECT_EQ(s.code, 2);
  EXPECT_EQ(s.message, "invalid rank in OMPI_COMM_WORLD_RANK='one'");
  for (const char *v : vars)
    unsetenv(v);
}

struct Fixture {
  TempDir dir;
  std::string params, x, n;
  Fixture() {
    params = dir.file("params.safetensors");
    x = dir.file("x.npy");
    n = dir.file("n.npy");
    float scale[3] = {1, 2, 3};
    float xs[6] = {1, 2, 3, 4, 5, 6};
    int64_t nv = 10;
    std::string error;
    EXPECT_TRUE(
        writeSafetensors(params, {{"scale", WEFT_F32, {3}, scale}}, {}, error))
        << error;
    EXPECT_TRUE(writeNpy(x, WEFT_F32, {2, 3}, xs, error)) << error;
    EXPECT_TRUE(writeNpy(n, WEFT_I64, {}, &nv, error)) << error;
  }
};

TEST(Executor, RunsAndWritesOutputs) {
  Fixture f;
  Executor ex;
  Status s = ex.init(kSignature, fakeRun);
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_TRUE((s = ex.loadParams(f.params)).ok()) << s.message;
  ASSERT_TRUE((s = ex.loadInputs({{"n", f.n}, {"x", f.x}})).ok()) << s.message;
  ASSERT_TRUE((s = ex.prepare()).ok()) << s.message;
  gRuns = 0;
  ex.run();
  ex.run();
  EXPECT_EQ(gRuns, 2);
  const float *y = static_cast<const float *>(ex.output(0).data.data());
  EXPECT_EQ(y[0], 11.0f);
  EXPECT_EQ(y[5], 28.0f);
  EXPECT_EQ(*static_cast<const int32_t *>(ex.output(1).data.data()), 2);

  std::string out = f.dir.file("out/nested");
  ASSERT_TRUE((s = ex.writeOutputs(out)).ok()) << s.message;
  HostTensor t;
  std::string error;
  ASSERT_TRUE(readNpy(out + "/y_0.npy", t, error)) << error;
  EXPECT_EQ(t.shape, std::vector<int64_t>({2, 3}));
  EXPECT_EQ(static_cast<float *>(t.data.data())[4], 20.0f);
  ASSERT_TRUE(readNpy(out + "/count.npy", t, error)) << error;
  EXPECT_EQ(t.dtype, WEFT_I32);
}

TEST(Executor, InputErrors) {
  Fixture f;
  Executor ex;
  ASSERT_TRUE(ex.init(kSignature, fakeRun).ok());
  Status s = ex.loadInputs({{"x", f.x}});
  EXPECT_EQ(s.code, 2);
  EXPECT_EQ(s.message, "missing input 'n' (expected i64[]); pass --input "
                       "n=FILE.npy");
  s = ex.loadInputs({{"x", f.x}, {"n", f.n}, {"z", f.x}});
  EXPECT_EQ(s.message,
            "unknown input 'z' (in " + f.x + "); the model's inputs are: x, n");
  s = ex.loadInputs({{"x", f.x}, {"n", f.n}, {"x", f.n}});
  EXPECT_EQ(s.message,
            "input 'x' is given twice (" + f.x + " and " + f.n + ")");
  s = ex.loadInputs({{"x", f.n}, {"n", f.x}});
  EXPECT_EQ(s.code, 2);
  EXPECT_EQ(s.message,
            "input 'x' (in " + f.n + "): expected f32[2,3], got i64[]");

  std::string wrongShape = f.dir.file("w.npy");
  float v[6] = {};
  std::string error;
  ASSERT_TRUE(writeNpy(wrongShape, WEFT_F32, {3, 2}, v, error));
  s = ex.loadInputs({{"x", wrongShape}, {"n", f.n}});
  EXPECT_EQ(s.message, "input 'x' (in " + wrongShape +
                           "): expected f32[2,3], got f32[3,2]");

  std::string missing = f.dir.file("missing.npy");
  s = ex.loadInputs({{"x", missing}, {"n", f.n}});
  EXPECT_EQ(s.code, 2);
  EXPECT_EQ(s.message, "input 'x': " + missing +
                           ": cannot open: No such file or directory");

  HostTensor t;
  t.dtype = WEFT_F64;
  t.shape = {2, 3};
  ASSERT_TRUE(t.data.allocate(48));
  s = ex.setInput(0, std::move(t));
  EXPECT_EQ(s.message, "input 'x': expected f32[2,3], got f64[2,3]");
  EXPECT_EQ(ex.prepare().code, 2);
}

TEST(Executor, ParamErrors) {
  Fixture f;
  Executor ex;
  ASSERT_TRUE(ex.init(kSignature, fakeRun).ok());
  std::string missing = f.dir.file("params.rank0.safetensors");
  Status s = ex.loadParams(missing);
  EXPECT_EQ(s.code, 2);
  EXPECT_EQ(s.message, "cannot read parameters: " + missing +
                           ": cannot open: No such file or directory (needed "
                           "for 'scale')");

  std::string error;
  float w[4] = {};
  std::string wrong = f.dir.file("wrong.safetensors");
  ASSERT_TRUE(
      writeSafetensors(wrong, {{"scale", WEFT_F32, {4}, w}}, {}, error));
  s = ex.loadParams(wrong);
  EXPECT_EQ(s.message,
            wrong + ": parameter 'scale': expected f32[3], got f32[4]");
  ASSERT_TRUE(
      writeSafetensors(wrong, {{"scale", WEFT_F16, {3}, w}}, {}, error));
  s = ex.loadParams(wrong);
  EXPECT_EQ(s.message,
            wrong + ": parameter 'scale': expected f32[3], got f16[3]");
  ASSERT_TRUE(
      writeSafetensors(wrong, {{"other", WEFT_F32, {3}, w}}, {}, error));
  s = ex.loadParams(wrong);
  EXPECT_EQ(s.message,
            wrong + ": parameter 'scale' is missing (expected f32[3])");
}

TEST(Executor, OutputNameCollision) {
  Executor ex;
  Status s = ex.init(R"({"format_version":1,"arena_bytes":0,"params":[],
    "inputs":[],"outputs":[{"name":"a/b","dtype":"f32","shape":[1]},
    {"name":"a_b","dtype":"f32","shape":[1]}]})",
                     fakeRun);
  EXPECT_EQ(s.code, 1);
  EXPECT_EQ(s.message,
            "outputs 'a/b' and 'a_b' would both be written to a_b.npy");
}

const char *kNoInputs = R"({"format_version":1,"arena_bytes":0,"params":[],
  "inputs":[],"outputs":[{"name":"k","dtype":"u8","shape":[4]}]})";

int gNoInputRuns = 0;

void noInputRun(void *arena, void *const *, void *const *,
                void *const *outputs) {
  EXPECT_NE(arena, nullptr);
  unsigned char *k = static_cast<unsigned char *>(outputs[0]);
  for (int i = 0; i < 4; ++i)
    k[i] = static_cast<unsigned char>(i + 1);
  ++gNoInputRuns;
}

TEST(Executor, ModelWithoutInputsOrParams) {
  TempDir dir;
  Executor ex;
  Status s = ex.init(kNoInputs, noInputRun);
  ASSERT_TRUE(s.ok()) << s.message;
  // No parameters: the file is not needed.
  ASSERT_TRUE((s = ex.loadParams(dir.file("absent.safetensors"))).ok())
      << s.message;
  ASSERT_TRUE((s = ex.loadInputs({})).ok()) << s.message;
  ASSERT_TRUE((s = ex.prepare()).ok()) << s.message;
  ex.run();
  EXPECT_EQ(static_cast<const unsigned char *>(ex.output(0).data.data())[3], 4);
}

TEST(Executor, MainTimesAndWrites) {
  TempDir dir;
  std::string out = dir.file("out");
  std::vector<std::string> args = {
      "model",    "--bundle", dir.path(),     "--repeat", "3",
      "--warmup", "2",        "--output-dir", out};
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(&a[0]);
  gNoInputRuns = 0;
  testing::internal::CaptureStdout();
  int rc = executorMain(static_cast<int>(argv.size()), argv.data(), kNoInputs,
                        noInputRun);
  std::string stdoutText = testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(gNoInputRuns, 5);
  JsonValue line;
  std::string error;
  ASSERT_TRUE(parseJson(stdoutText, line, error)) << stdoutText;
  ASSERT_TRUE(line.isObject());
  EXPECT_EQ(line.keyAt(0), "iterations");
  EXPECT_EQ(line.get("iterations")->asInt(), 3);
  for (const char *key : {"mean_s", "median_s", "min_s"}) {
    ASSERT_NE(line.get(key), nullptr) << key;
    EXPECT_TRUE(line.get(key)->isNumber());
    EXPECT_GE(line.get(key)->asDouble(), 0.0);
  }
  HostTensor t;
  ASSERT_TRUE(readNpy(out + "/k.npy", t, error)) << error;
  EXPECT_EQ(t.dtype, WEFT_U8);

  // A usage error returns 2 without running.
  std::vector<std::string> bad = {"model", "--repeat", "0"};
  std::vector<char *> badArgv;
  for (std::string &a : bad)
    badArgv.push_back(&a[0]);
  testing::internal::CaptureStderr();
  rc = executorMain(3, badArgv.data(), kNoInputs, noInputRun);
  std::string stderrText = testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 2);
  EXPECT_EQ(gNoInputRuns, 5);
  EXPECT_EQ(stderrText.rfind("weft: error: --repeat expects", 0), 0u)
      << stderrText;
  EXPECT_NE(stderrText.find("usage: model [--bundle DIR]"), std::string::npos);
}

} // namespace
