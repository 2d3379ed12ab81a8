//===- CheckpointTest.cpp - Saving, verifying and loading checkpoints -----===//

#include "runtime/executor/Checkpoint.h"

#include "weft/runtime/Executor.h"
#include "weft/runtime/FileUtil.h"
#include "weft/runtime/Json.h"
#include "weft/runtime/Safetensors.h"
#include "weft/runtime/Sha256.h"

#include "TestUtil.h"

#include <cstring>
#include <gtest/gtest.h>
#include <string>
#include <sys/stat.h>
#include <vector>

using namespace weft;
using weft::test::TempDir;

namespace {

const char *kSignature = R"({"format_version":1,"mode":"train",
  "arena_bytes":64,
  "params":[{"name":"w","dtype":"f32","shape":[3],"role":"param",
             "trainable":true},
            {"name":"step","dtype":"i64","shape":[],"role":"step"}],
  "inputs":[{"name":"x","dtype":"f32","shape":[2,3],"batch_dim":0}],
  "outputs":[{"name":"loss","dtype":"f32","shape":[]}]})";

/// w += x[0]; step += 1; loss = w[0].
void fakeStep(void *, void *const *params, void *const *inputs,
              void *const *outputs) {
  float *w = static_cast<float *>(params[0]);
  const float *x = static_cast<const float *>(inputs[0]);
  for (int i = 0; i < 3; ++i)
    w[i] += x[i];
  ++*static_cast<int64_t *>(params[1]);
  *static_cast<float *>(outputs[0]) = w[0];
}

/// An executor of `signature` (kSignature's tensors) with w = {1, 2, 3},
/// step 0, x filled with 0.5.
void makeExecutor(Executor &e, const std::string &signature = kSignature) {
  ASSERT_TRUE(e.init(signature, fakeStep).ok());
  HostTensor &w = e.mutableParam(0);
  w.dtype = WEFT_F32;
  w.shape = {3};
  ASSERT_TRUE(w.data.allocate(12));
  float init[3] = {1, 2, 3};
  std::memcpy(w.data.data(), init, 12);
  HostTensor &step = e.mutableParam(1);
  step.dtype = WEFT_I64;
  ASSERT_TRUE(step.data.allocate(8, 64, true));
  ASSERT_TRUE(e.allocateInputs().ok());
  float *x = static_cast<float *>(e.mutableInput(0).data.data());
  for (int i = 0; i < 6; ++i)
    x[i] = 0.5f;
  ASSERT_TRUE(e.prepare().ok());
}

float weight(const Executor &e, int i) {
  return static_cast<const float *>(e.param(0).data.data())[i];
}
int64_t stepOf(const Executor &e) {
  return *static_cast<const int64_t *>(e.param(1).data.data());
}

std::vector<std::string> list(const std::string &dir) {
  std::vector<std::string> names;
  std::string error;
  listDirectory(dir, names, error);
  return names;
}

TEST(Checkpoint, DirNames) {
  EXPECT_EQ(checkpointDirName(5), "step-00000005");
  EXPECT_EQ(checkpointDirName(123456789), "step-123456789");
  int64_t step = -1;
  EXPECT_TRUE(parseCheckpointDirName("step-00000005", step));
  EXPECT_EQ(step, 5);
  EXPECT_TRUE(parseCheckpointDirName("step-123456789", step));
  EXPECT_EQ(step, 123456789);
  EXPECT_FALSE(parseCheckpointDirName("step-5", step));
  EXPECT_FALSE(parseCheckpointDirName("step-0000000x", step));
  EXPECT_FALSE(parseCheckpointDirName(".step-00000005.tmp-12", step));
  EXPECT_FALSE(parseCheckpointDirName("latest", step));
}

TEST(Checkpoint, SaveLoadRoundTrip) {
  TempDir tmp;
  std::string dir = tmp.file("ck");
  Executor a;
  makeExecutor(a);
  CheckpointStore store(dir, kSignature);
  EXPECT_EQ(store.signatureSha256(), sha256Hex(kSignature));
  std::string which;
  EXPECT_FALSE(store.hasCheckpoint(which));
  a.run();
  a.run();
  ASSERT_TRUE(store.save(a, 2, 4, 2.0).ok());
  EXPECT_TRUE(store.hasCheckpoint(which));
  EXPECT_EQ(list(dir), (std::vector<std::string>{"latest", "step-00000002"}));
  EXPECT_EQ(test::readBytes(dir + "/latest"), "step-00000002\n");
  EXPECT_EQ(list(dir + "/step-00000002"),
            (std::vector<std::string>{"checkpoint.json", "signature.json",
                                      "state.safetensors"}));
  // The bundle's signature, which a bundle of another plan reshards with.
  EXPECT_EQ(test::readBytes(dir + "/step-00000002/signature.json"),
            std::string(kSignature));

  // checkpoint.json records the step, position, signature and checksum.
  JsonValue manifest;
  std::string error;
  ASSERT_TRUE(parseJson(test::readBytes(dir + "/step-00000002/checkpoint.json"),
                        manifest, error));
  EXPECT_EQ(manifest.get("format_version")->asInt(), 1);
  EXPECT_EQ(manifest.get("step")->asInt(), 2);
  EXPECT_EQ(manifest.get("data_position")->asInt(), 4);
  EXPECT_EQ(manifest.get("signature_sha256")->asString(),
            sha256Hex(kSignature));
  std::string state = test::readBytes(dir + "/step-00000002/state.safetensors");
  const JsonValue *file = manifest.get("files")->get("state.safetensors");
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file->get("bytes")->asInt(), static_cast<int64_t>(state.size()));
  EXPECT_EQ(file->get("sha256")->asString(), sha256Hex(state));

  Executor b;
  makeExecutor(b);
  CheckpointInfo info;
  Status s = store.load(b, info);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(info.step, 2);
  EXPECT_EQ(info.dataPosition, 4);
  EXPECT_EQ(info.loss, 2.0);
  EXPECT_EQ(weight(b, 0), 2.0f);
  EXPECT_EQ(weight(b, 2), 4.0f);
  EXPECT_EQ(stepOf(b), 2);
}

TEST(Checkpoint, KeepsTheTwoNewestAndCleansUp) {
  TempDir tmp;
  std::string dir = tmp.file("ck");
  Executor e;
  makeExecutor(e);
  CheckpointStore store(dir, kSignature);
  std::string error;
  // A stale temporary directory of a killed save (no process has that pid).
  ASSERT_TRUE(makeDirectories(dir + "/.step-00000003.tmp-999999999", error));
  for (int64_t step = 1; step <= 4; ++step) {
    e.run();
    ASSERT_TRUE(store.save(e, step, 2 * step, 0).ok());
  }
  EXPECT_EQ(list(dir), (std::vector<std::string>{"latest", "step-00000003",
                                                 "step-00000004"}));
  // Saving a step whose directory exists replaces it.
  ASSERT_TRUE(store.save(e, 4, 8, 0).ok());
  EXPECT_EQ(list(dir), (std::vector<std::string>{"latest", "step-00000003",
                                                 "step-00000004"}));
}

/// Saves step 1 and returns the checkpoint directory.
std::string saveOne(const TempDir &tmp, CheckpointStore &store) {
  Executor e;
  makeExecutor(e);
  e.run();
  EXPECT_TRUE(store.save(e, 1, 2, 1.5).ok());
  return tmp.file("ck/step-00000001");
}

void expectLoadError(CheckpointStore &store, const std::string &needle) {
  Executor e;
  makeExecutor(e);
  CheckpointInfo info;
  Status s = store.load(e, info);
  EXPECT_EQ(s.code, 2);
  EXPECT_NE(s.message.find(needle), std::string::npos) << s.message;
  EXPECT_EQ(weight(e, 0), 1.0f) << "the model was touched";
}

TEST(Checkpoint, RefusesCorruption) {
  TempDir tmp;
  CheckpointStore store(tmp.file("ck"), kSignature);
  expectLoadError(store, "no checkpoint in " + tmp.file("ck"));
  std::string ck = saveOne(tmp, store);
  std::string statePath = ck + "/state.safetensors";
  std::string good = test::readBytes(statePath);

  std::string flipped = good;
  flipped[flipped.size() - 3] ^= 0x40;
  ASSERT_TRUE(test::writeBytes(statePath, flipped));
  expectLoadError(store, statePath + " is corrupted: its sha256 is");
  ASSERT_TRUE(test::writeBytes(statePath, good.substr(0, good.size() - 5)));
  expectLoadError(store, statePath + " is truncated: it has");
  ASSERT_TRUE(test::writeBytes(statePath, good + "x"));
  expectLoadError(store, statePath + " is corrupted: it has");
  ASSERT_TRUE(test::writeBytes(statePath, good));

  std::string manifestPath = ck + "/checkpoint.json";
  std::string manifest = test::readBytes(manifestPath);
  ASSERT_TRUE(test::writeBytes(manifestPath, manifest.substr(0, 20)));
  expectLoadError(store, manifestPath + " is corrupted (invalid JSON");
  ASSERT_TRUE(test::writeBytes(manifestPath, manifest));

  ASSERT_TRUE(test::writeBytes(tmp.file("ck/latest"), "step-00000009\n"));
  expectLoadError(store, "step-00000009' (named by");
  ASSERT_TRUE(test::writeBytes(tmp.file("ck/latest"), "../etc\n"));
  expectLoadError(store, "latest is corrupted");
  ASSERT_TRUE(test::writeBytes(tmp.file("ck/latest"), "step-00000001\n"));

  // Another model: same tensors, another signature.
  std::string other = kSignature;
  other.replace(other.find("\"arena_bytes\":64"), 16, "\"arena_bytes\":65");
  CheckpointStore otherStore(tmp.file("ck"), other);
  Executor e;
  ASSERT_TRUE(e.init(other, fakeStep).ok());
  CheckpointInfo info;
  Status s = otherStore.load(e, info);
  EXPECT_EQ(s.code, 2);
  EXPECT_NE(s.message.find("was written by another model"), std::string::npos)
      << s.message;

  // Still loads once repaired.
  Executor ok;
  makeExecutor(ok);
  EXPECT_TRUE(store.load(ok, info).ok());
  EXPECT_EQ(stepOf(ok), 1);
}

/// kSignature with a source model (`model`), on `world` ranks of a 1-D
/// mesh with w split over them (local `shape`) when world > 1.
std::string planSignature(const std::string &model, int world,
                          const std::string &shape) {
  std::string sig = kSignature;
  sig.replace(
      sig.find("\"shape\":[3]"), 11,
      "\"shape\":" + shape +
          (world > 1 ? ",\"shard\":{\"dim\":0,\"mesh_axes\":[0]}" : ""));
  sig.insert(1, "\"model_sha256\":\"" + model + "\",");
  if (world > 1)
    sig.insert(1, "\"world_size\":" + std::to_string(world) +
                      ",\"mesh\":{\"shape\":[" + std::to_string(world) +
                      "],\"axes\":[\"dp\"]},");
  return sig;
}

// A checkpoint of one rank resumes under a plan that splits w over three
// ranks (each gets its element) when both bundles record one source model;
// another model, another whole shape and a signature.json that is not the
// writer's are refused.
TEST(Checkpoint, MovesToAnotherPlanOfTheSameModel) {
  TempDir tmp;
  const std::string one = planSignature("aa11", 1, "[3]");
  Executor a;
  makeExecutor(a, one);
  *static_cast<int64_t *>(a.mutableParam(1).data.data()) = 7;
  const float init[3] = {1, 2, 3};
  CheckpointStore writer(tmp.file("ck"), one);
  Status saved = writer.save(a, 7, 14, 0.5);
  ASSERT_TRUE(saved.ok()) << saved.message;

  const std::string three = planSignature("aa11", 3, "[1]");
  ModelSignature sig;
  std::string error;
  ASSERT_TRUE(parseModelSignature(three, sig, error)) << error;
  for (int64_t r = 0; r < 3; ++r) {
    CheckpointStore reader(tmp.file("ck"), three, r, 3);
    std::vector<HostTensor> got;
    CheckpointInfo info;
    Status s = reader.loadStepInto(sig, "step-00000007", got, info);
    ASSERT_TRUE(s.ok()) << s.message;
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].shape, std::vector<int64_t>{1});
    EXPECT_EQ(*static_cast<const float *>(got[0].data.data()), init[r]);
    EXPECT_EQ(*static_cast<const int64_t *>(got[1].data.data()), 7);
    EXPECT_EQ(info.step, 7);
    EXPECT_EQ(info.dataPosition, 14);
  }

  auto refusal = [&](const std::string &other, int64_t world) {
    ModelSignature o;
    std::string e;
    EXPECT_TRUE(parseModelSignature(other, o, e)) << e;
    CheckpointStore reader(tmp.file("ck"), other, 0, world);
    std::vector<HostTensor> got;
    CheckpointInfo info;
    Status s = reader.loadStepInto(o, "step-00000007", got, info);
    EXPECT_EQ(s.code, 2);
    return s.message;
  };
  std::string m = refusal(planSignature("bb22", 3, "[1]"), 3);
  EXPECT_NE(m.find("was written by a run on 1 rank but this bundle runs on 3, "
                   "and it was compiled from another ONNX model"),
            std::string::npos)
      << m;
  m = refusal(planSignature("aa11", 3, "[2]"), 3);
  EXPECT_NE(m.find("was written by another model: it holds 'w' as parameter "
                   "f32[3], this bundle as parameter f32[6]"),
            std::string::npos)
      << m;
  m = refusal(planSignature("", 1, "[3]"), 1);
  EXPECT_NE(m.find("the two bundles do not both record their source model"),
            std::string::npos)
      << m;
  ASSERT_TRUE(test::writeBytes(tmp.file("ck/step-00000007/signature.json"),
                               planSignature("aa11", 1, "[4]")));
  m = refusal(three, 3);
  EXPECT_NE(m.find("signature.json is corrupted: it is not the signature"),
            std::string::npos)
      << m;
  ASSERT_EQ(::unlink(tmp.file("ck/step-00000007/signature.json").c_str()), 0);
  m = refusal(three, 3);
  EXPECT_NE(m.find("runs on 3, and it records no signature.json"),
            std::string::npos)
      << m;
}

TEST(Checkpoint, FallsBackWithoutLatest) {
  TempDir tmp;
  CheckpointStore store(tmp.file("ck"), kSignature);
  saveOne(tmp, store);
  ASSERT_EQ(::unlink(tmp.file("ck/latest").c_str()), 0);
  std::string which;
  EXPECT_TRUE(store.hasCheckpoint(which));
  Executor e;
  makeExecutor(e);
  CheckpointInfo info;
  ASSERT_TRUE(store.load(e, info).ok());
  EXPECT_EQ(info.step, 1);
}

} // namespace
