//===- Checkpoint.cpp - Training checkpoints ------------------------------===//

#include "Checkpoint.h"
#include "Reshard.h"

#include "weft/runtime/Comm.h"
#include "weft/runtime/FileUtil.h"
#include "weft/runtime/Json.h"
#include "weft/runtime/Safetensors.h"
#include "weft/runtime/Sha256.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace weft {

namespace {

constexpr const char *kManifestFile = "checkpoint.json";
constexpr const char *kLatestFile = "latest";
constexpr const char *kSignatureFile = "signature.json";

bool allDigits(const std::string &s, size_t from) {
  if (from >= s.size())
    return false;
  for (size_t i = from; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9')
      return false;
  return true;
}

/// ".step-00000006.tmp-123" / ".step-00000006.old-123": the pid, or -1.
int64_t scratchDirPid(const std::string &name) {
  if (name.compare(0, 6, ".step-") != 0)
    return -1;
  size_t dot = name.find('.', 1);
  if (dot == std::string::npos)
    return -1;
  std::string rest = name.substr(dot);
  if (rest.compare(0, 5, ".tmp-") != 0 && rest.compare(0, 5, ".old-") != 0)
    return -1;
  int64_t pid = 0;
  if (!allDigits(rest, 5) || !parseInt64(rest.substr(5), pid))
    return -1;
  return pid;
}

/// Whether process `pid` may still be writing (it exists, is not us and
/// is not a zombie: a killed rank whose parent, the launcher, is gone may
/// stay one where nobody reaps it).
bool otherProcessAlive(int64_t pid) {
  if (pid == static_cast<int64_t>(::getpid()))
    return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM)
    return false;
  std::string stat, error;
  if (readFile("/proc/" + std::to_string(pid) + "/stat", stat, error)) {
    size_t paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size() &&
        stat[paren + 2] == 'Z')
      return false;
  }
  return true;
}

/// The test hook WEFT_TEST_SLOW_SAVE_MS: sleep in the middle of every save,
/// so a test can kill the process while a checkpoint is half-written.
void slowSaveForTests() {
  const char *value = std::getenv("WEFT_TEST_SLOW_SAVE_MS");
  int64_t ms = 0;
  if (value && parseInt64(value, ms) && ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

std::string shortSha(const std::string &sha) {
  return sha.size() > 16 ? sha.substr(0, 16) + "..." : sha;
}

/// Moves directory `from` onto `to`: atomically exchanged when `to` exists
/// (the old directory ends up at `from`), else renamed. Without
/// RENAME_EXCHANGE an existing `to` is moved to `aside` and removed.
bool renameDirectory(const std::string &from, const std::string &to,
                     const std::string &aside, bool &exchanged,
                     std::string &error) {
  exchanged = false;
  if (isDirectory(to)) {
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(),
                    RENAME_EXCHANGE) == 0) {
      exchanged = true;
      return true;
    }
    // No RENAME_EXCHANGE on this file system: move the old one aside first.
    if (::rename(to.c_str(), aside.c_str()) != 0) {
      error = "cannot move '" + to + "' aside: " + std::strerror(errno);
      return false;
    }
    if (::rename(from.c_str(), to.c_str()) != 0) {
      error = "cannot rename '" + from + "' to '" + to +
              "': " + std::strerror(errno);
      (void)::rename(aside.c_str(), to.c_str());
      return false;
    }
    std::string ignored;
    (void)removeTree(aside, ignored);
    return true;
  }
  if (::rename(from.c_str(), to.c_str()) != 0) {
    error =
        "cannot rename '" + from + "' to '" + to + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

} // namespace

std::string checkpointDirName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08lld", static_cast<long long>(step));
  return buf;
}

bool parseCheckpointDirName(const std::string &name, int64_t &step) {
  if (name.compare(0, 5, "step-") != 0 || name.size() < 13 ||
      !allDigits(name, 5))
    return false;
  return parseInt64(name.substr(5), step) && step >= 0;
}

CheckpointStore::CheckpointStore(std::string dir,
                                 std::string_view signatureJson, int64_t rank,
                                 int64_t worldSize)
    : dir_(std::move(dir)), signatureJson_(signatureJson),
      signatureSha_(sha256Hex(signatureJson)), rank_(rank),
      worldSize_(worldSize) {}

std::string CheckpointStore::stateFileName(int64_t rank, int64_t worldSize) {
  return worldSize > 1 ? "state.rank" + std::to_string(rank) + ".safetensors"
                       : "state.safetensors";
}

/// The step-* directories of `dir`, newest last.
static std::vector<std::pair<int64_t, std::string>>
listCheckpoints(const std::string &dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::vector<std::string> names;
  std::string error;
  if (!listDirectory(dir, names, error))
    return found;
  for (const std::string &name : names) {
    int64_t step;
    if (parseCheckpointDirName(name, step) && isDirectory(joinPath(dir, name)))
      found.emplace_back(step, name);
  }
  std::sort(found.begin(), found.end());
  return found;
}

bool findCheckpoint(const std::string &dir, std::string &which) {
  std::string latest = joinPath(dir, kLatestFile);
  if (fileExists(latest)) {
    which = latest;
    return true;
  }
  auto found = listCheckpoints(dir);
  if (found.empty())
    return false;
  which = joinPath(dir, found.back().second);
  return true;
}

bool CheckpointStore::hasCheckpoint(std::string &which) const {
  return findCheckpoint(dir_, which);
}

Status CheckpointStore::verify(const std::string &name,
                               const ModelSignature &sig,
                               CheckpointInfo &info) const {
  std::string path = joinPath(dir_, name);
  std::string manifestPath = joinPath(path, kManifestFile);
  const std::string stateFile = stateFileName(rank_, worldSize_);
  std::string statePath = joinPath(path, stateFile);
  info.path = path;
  std::string text, error;
  if (!isDirectory(path))
    return Status::badInput("checkpoint '" + path + "' (named by " +
                            joinPath(dir_, kLatestFile) + ") does not exist");
  if (!readFile(manifestPath, text, error))
    return Status::badInput("checkpoint " + path + ": " + error);
  JsonValue root;
  if (!parseJson(text, root, error))
    return Status::badInput(manifestPath +
                            " is corrupted (invalid JSON: " + error + ")");
  auto bad = [&](const std::string &what) {
    return Status::badInput(manifestPath + " is corrupted: " + what);
  };
  if (!root.isObject())
    return bad("not a JSON object");
  const JsonValue *version = root.get("format_version");
  if (!version || !version->isInteger())
    return bad("no \"format_version\"");
  if (version->asInt() != 1)
    return Status::badInput(manifestPath + ": unsupported format_version " +
                            std::to_string(version->asInt()) +
                            " (this runtime reads 1)");
  const JsonValue *step = root.get("step");
  const JsonValue *position = root.get("data_position");
  const JsonValue *sigSha = root.get("signature_sha256");
  const JsonValue *files = root.get("files");
  if (!step || !step->isInteger() || step->asInt() < 0)
    return bad("\"step\" is missing or not a non-negative integer");
  if (!position || !position->isInteger() || position->asInt() < 0)
    return bad("\"data_position\" is missing or not a non-negative integer");
  if (!sigSha || !sigSha->isString())
    return bad("\"signature_sha256\" is missing");
  int64_t dirStep = -1;
  if (!parseCheckpointDirName(name, dirStep) || dirStep != step->asInt())
    return bad("\"step\" " + std::to_string(step->asInt()) +
               " does not match the directory name '" + name + "'");
  // Absent in checkpoints of single-rank runs written before it existed.
  int64_t worldSize = 1;
  if (const JsonValue *world = root.get("world_size")) {
    if (!world->isInteger() || world->asInt() < 1)
      return bad("\"world_size\" is not a positive integer");
    worldSize = world->asInt();
  }
  // (loadStepInto() has resharded a checkpoint of another plan of this
  // model; what gets here with another plan cannot move.)
  if (worldSize != worldSize_) // every rank finds this alike
    return Status::badInput("checkpoint " + path + " was written by a run on " +
                            std::to_string(worldSize) +
                            (worldSize == 1 ? " rank" : " ranks") +
                            " but this bundle runs on " +
                            std::to_string(worldSize_) + ", and " +
                            reshardRefusal(name))
        .everyRank();
  if (sigSha->asString() != signatureSha_)
    return Status::badInput("checkpoint " + path +
                            " was written by another model: its "
                            "signature_sha256 is " +
                            shortSha(sigSha->asString()) +
                            ", this bundle's is " + shortSha(signatureSha_) +
                            "; " + reshardRefusal(name))
        .everyRank();
  const JsonValue *state =
      files && files->isObject() ? files->get(stateFile) : nullptr;
  const JsonValue *bytes = state ? state->get("bytes") : nullptr;
  const JsonValue *sha = state ? state->get("sha256") : nullptr;
  if (!bytes || !bytes->isInteger() || bytes->asInt() < 0 || !sha ||
      !sha->isString())
    return bad("\"files\" has no valid entry for " + stateFile);
  info.step = step->asInt();
  info.dataPosition = position->asInt();
  info.loss = NAN;
  if (const JsonValue *loss = root.get("loss"))
    if (loss->isNumber())
      info.loss = loss->asDouble();
  info.dataOrder = "sequential";
  if (const JsonValue *order = root.get("data_order")) {
    if (!order->isString())
      return bad("\"data_order\" is not a string");
    info.dataOrder = order->asString();
  }

  // The state file: size, then checksum, then contents.
  std::string actualSha;
  uint64_t actualBytes = 0;
  if (!sha256File(statePath, actualSha, actualBytes, error))
    return Status::badInput("checkpoint " + path + ": " + error);
  uint64_t recorded = static_cast<uint64_t>(bytes->asInt());
  if (actualBytes < recorded)
    return Status::badInput(
        statePath + " is truncated: it has " + std::to_string(actualBytes) +
        " bytes, " + manifestPath + " records " + std::to_string(recorded));
  if (actualBytes > recorded)
    return Status::badInput(
        statePath + " is corrupted: it has " + std::to_string(actualBytes) +
        " bytes, " + manifestPath + " records " + std::to_string(recorded));
  if (actualSha != sha->asString())
    return Status::badInput(statePath + " is corrupted: its sha256 is " +
                            shortSha(actualSha) + ", " + manifestPath +
                            " records " + shortSha(sha->asString()));
  SafetensorsReader reader;
  if (!reader.open(statePath, error))
    return Status::badInput(error);
  // The metadata repeats what checkpoint.json says (and is checksummed).
  std::string metaStep, metaPosition, metaSig, metaRank = "0";
  for (const auto &kv : reader.metadata()) {
    if (kv.first == "step")
      metaStep = kv.second;
    else if (kv.first == "data_position")
      metaPosition = kv.second;
    else if (kv.first == "signature_sha256")
      metaSig = kv.second;
    else if (kv.first == "rank")
      metaRank = kv.second;
  }
  if (metaRank != std::to_string(rank_))
    return Status::badInput(statePath + " holds the state of rank " + metaRank +
                            ", not of rank " + std::to_string(rank_));
  if (metaStep != std::to_string(info.step) ||
      metaPosition != std::to_string(info.dataPosition) ||
      metaSig != signatureSha_)
    return Status::badInput(statePath + ": its metadata (step '" + metaStep +
                            "', data_position '" + metaPosition +
                            "') disagrees with " + manifestPath);
  for (const SafetensorsEntry &entry : reader.tensors()) {
    bool known = false;
    for (const TensorSpec &spec : sig.params)
      known = known || spec.name == entry.name;
    if (!known)
      return Status::badInput(statePath + ": tensor '" + entry.name +
                              "' is not state of this model");
  }
  for (const TensorSpec &spec : sig.params) {
    if (!paramHeldBy(sig, spec, rank_))
      continue; // another pipeline stage's: its ranks' files hold it
    const SafetensorsEntry *entry = reader.find(spec.name);
    if (!entry)
      return Status::badInput(statePath + ": " + stateRoleName(spec.role) +
                              " '" + spec.name + "' is missing (expected " +
                              formatTensorType(spec.dtype, spec.shape) + ")");
    if (entry->dtype != spec.dtype || entry->shape != spec.shape)
      return Status::badInput(statePath + ": '" + spec.name + "': expected " +
                              formatTensorType(spec.dtype, spec.shape) +
                              ", got " +
                              formatTensorType(entry->dtype, entry->shape));
  }
  return Status::success();
}

Status CheckpointStore::load(Executor &executor, CheckpointInfo &info) const {
  std::string latestPath = joinPath(dir_, kLatestFile);
  if (!isDirectory(dir_))
    return Status::badInput("no checkpoint in " + dir_ +
                            " (the directory does not exist)");
  std::string name, error;
  if (fileExists(latestPath)) {
    if (!readFile(latestPath, name, error))
      return Status::badInput(error);
    while (!name.empty() && (name.back() == '\n' || name.back() == ' ' ||
                             name.back() == '\r' || name.back() == '\t'))
      name.pop_back();
    int64_t step;
    if (!parseCheckpointDirName(name, step))
      return Status::badInput(latestPath +
                              " is corrupted: it does not name a "
                              "checkpoint directory (step-NNNNNNNN)");
  } else {
    // A save killed between renaming its directory into place and writing
    // DIR/latest for the first time: the newest complete directory.
    auto found = listCheckpoints(dir_);
    if (found.empty())
      return Status::badInput("no checkpoint in " + dir_ +
                              " (nothing to resume; run without --resume to "
                              "start from the bundle's parameters)");
    name = found.back().second;
  }
  return loadStep(executor, name, info);
}

Status CheckpointStore::loadStep(Executor &executor, const std::string &name,
                                 CheckpointInfo &info) const {
  const ModelSignature &sig = executor.signature();
  std::vector<HostTensor> tensors;
  Status status = loadStepInto(sig, name, tensors, info);
  if (!status.ok())
    return status;
  for (size_t i = 0; i < sig.params.size(); ++i)
    if (paramHeldBy(sig, sig.params[i], rank_))
      executor.mutableParam(i) = std::move(tensors[i]);
  return Status::success();
}

Status CheckpointStore::loadStepInto(const ModelSignature &sig,
                                     const std::string &name,
                                     std::vector<HostTensor> &tensors,
                                     CheckpointInfo &info) const {
  std::string writer;
  if (writtenElsewhere(name, writer))
    return loadResharded(sig, name, writer, tensors, info);
  std::string error;
  Status status = verify(name, sig, info);
  if (!status.ok())
    return status;
  std::string statePath = joinPath(info.path, stateFileName(rank_, worldSize_));
  SafetensorsReader reader;
  if (!reader.open(statePath, error))
    return Status::badInput(error);
  tensors.clear();
  tensors.resize(sig.params.size());
  for (size_t i = 0; i < sig.params.size(); ++i)
    if (paramHeldBy(sig, sig.params[i], rank_) &&
        !reader.readTensor(*reader.find(sig.params[i].name), tensors[i], error))
      return Status::badInput(error);
  return Status::success();
}

bool CheckpointStore::recordedPlan(const std::string &name, std::string &sha,
                                   int64_t &world) const {
  std::string text, error;
  JsonValue root;
  if (!readFile(joinPath(joinPath(dir_, name), kManifestFile), text, error) ||
      !parseJson(text, root, error) || !root.isObject())
    return false;
  const JsonValue *s = root.get("signature_sha256");
  const JsonValue *w = root.get("world_size");
  if (!s || !s->isString() || !w || !w->isInteger())
    return false;
  sha = s->asString();
  world = w->asInt();
  return true;
}

bool CheckpointStore::writtenElsewhere(const std::string &name,
                                       std::string &writer) const {
  // Anything unreadable here is left to verify() to report.
  std::string sha;
  int64_t world = 0;
  if (!recordedPlan(name, sha, world) ||
      (sha == signatureSha_ && world == worldSize_))
    return false;
  return reshardRefusal(name, &writer).empty();
}

std::string CheckpointStore::reshardRefusal(const std::string &name,
                                            std::string *writer) const {
  const std::string path = joinPath(joinPath(dir_, name), kSignatureFile);
  std::string text, error;
  if (!fileExists(path) || !readFile(path, text, error))
    return std::string("it records no ") + kSignatureFile +
           " (an older weft wrote it), so only the bundle that wrote it "
           "resumes it";
  ModelSignature mine, theirs;
  if (!parseModelSignature(signatureJson_, mine, error) ||
      !parseModelSignature(text, theirs, error) || mine.modelSha256.empty() ||
      theirs.modelSha256.empty())
    return "the two bundles do not both record their source model "
           "(model_sha256), so only the bundle that wrote it resumes it";
  if (mine.modelSha256 != theirs.modelSha256)
    return "it was compiled from another ONNX model (model_sha256 " +
           shortSha(theirs.modelSha256) + ", this bundle's " +
           shortSha(mine.modelSha256) + ")";
  if (writer)
    *writer = std::move(text);
  return "";
}

Status CheckpointStore::loadResharded(const ModelSignature &sig,
                                      const std::string &name,
                                      const std::string &writerJson,
                                      std::vector<HostTensor> &tensors,
                                      CheckpointInfo &info) const {
  const std::string path = joinPath(dir_, name);
  const std::string sigPath = joinPath(path, kSignatureFile);
  ModelSignature writer;
  std::string error;
  if (!parseModelSignature(writerJson, writer, error))
    return Status::badInput(sigPath + " is corrupted: " + error).everyRank();
  // signature.json is the signature checkpoint.json records; the writer's
  // own store then verifies its files.
  std::string sha;
  int64_t world = 0;
  if (!recordedPlan(name, sha, world) || sha != sha256Hex(writerJson) ||
      world != writer.worldSize)
    return Status::badInput(sigPath +
                            " is corrupted: it is not the signature " +
                            joinPath(path, kManifestFile) +
                            " records (its SHA-256 or world size differs)")
        .everyRank();
  // Every rank's file records the same step and data position (verified
  // against checkpoint.json): any file read gives them.
  auto readRank = [&](int64_t r, std::vector<HostTensor> &got) {
    CheckpointStore store(dir_, writerJson, r, writer.worldSize);
    return store.loadStepInto(writer, name, got, info);
  };
  return reshardState(sig, rank_, writer, path, readRank, tensors);
}

namespace {

/// One rank's part of a save, as gathered: outcome, file size and SHA-256.
struct SaveRecord {
  int64_t code = 0;
  uint64_t bytes = 0;
  char sha[64] = {};
};

/// Every rank's record (one rank: its own).
std::vector<SaveRecord> gatherRecords(const SaveRecord &mine) {
  std::vector<uint8_t> all = comm::allGatherBytes(&mine, sizeof mine);
  std::vector<SaveRecord> records(all.size() / sizeof mine);
  std::memcpy(records.data(), all.data(), all.size());
  return records;
}

int64_t worstCode(const std::vector<SaveRecord> &records) {
  int64_t worst = 0;
  for (const SaveRecord &r : records)
    worst = std::max(worst, r.code);
  return worst;
}

/// `mine` when this rank failed, else a quiet failure with another's code.
Status sharedOutcome(const Status &mine, int64_t worst) {
  if (!mine.ok() || worst == 0)
    return mine;
  Status status = Status::failure("");
  status.code = static_cast<int>(worst);
  status.quiet = true;
  return status;
}

} // namespace

Status CheckpointStore::save(const Executor &executor, int64_t step,
                             int64_t dataPosition, double loss) const {
  const ModelSignature &sig = executor.signature();
  const bool leader = rank_ == 0;
  std::string name = checkpointDirName(step);
  std::string finalPath = joinPath(dir_, name);
  std::string error;
  auto failure = [&](const std::string &what) {
    return Status::failure("cannot save checkpoint " + finalPath + ": " + what);
  };
  if (comm::size() != worldSize_)
    return failure("the store is for " + std::to_string(worldSize_) +
                   " ranks but " + std::to_string(comm::size()) + " run");

  // 1. Rank 0 creates the temporary directory, named with its pid.
  SaveRecord mine;
  Status status;
  if (leader) {
    mine.bytes = static_cast<uint64_t>(::getpid());
    std::string tmp =
        joinPath(dir_, "." + name + ".tmp-" + std::to_string(mine.bytes));
    if (!makeDirectories(dir_, error) || !removeTree(tmp, error) ||
        !makeDirectories(tmp, error))
      status = failure(error);
    mine.code = status.code;
  }
  std::vector<SaveRecord> records = gatherRecords(mine);
  if (int64_t worst = worstCode(records))
    return sharedOutcome(status, worst);
  const std::string tmp =
      joinPath(dir_, "." + name + ".tmp-" + std::to_string(records[0].bytes));
  auto removeTmp = [&] {
    std::string ignored;
    if (leader)
      (void)removeTree(tmp, ignored);
  };

  // 2. Every rank writes and hashes its own state file.
  std::vector<SafetensorsTensorRef> refs;
  for (size_t i = 0; i < sig.params.size(); ++i)
    if (paramHeldBy(sig, sig.params[i], rank_))
      refs.push_back({sig.params[i].name, sig.params[i].dtype,
                      sig.params[i].shape, executor.param(i).data.data()});
  SafetensorsMetadata metadata = {
      {"format", "weft-checkpoint"},
      {"step", std::to_string(step)},
      {"data_position", std::to_string(dataPosition)},
      {"signature_sha256", signatureSha_}};
  if (worldSize_ > 1) {
    metadata.push_back({"rank", std::to_string(rank_)});
    metadata.push_back({"world_size", std::to_string(worldSize_)});
  }
  std::string statePath = joinPath(tmp, stateFileName(rank_, worldSize_));
  std::string sha;
  mine = SaveRecord();
  status = Status::success();
  if (!writeSafetensors(statePath, refs, metadata, error) ||
      !sha256File(statePath, sha, mine.bytes, error))
    status = failure(error);
  else
    std::memcpy(mine.sha, sha.data(), sizeof mine.sha);
  mine.code = status.code;
  slowSaveForTests();
  records = gatherRecords(mine);
  if (int64_t worst = worstCode(records)) {
    removeTmp();
    return sharedOutcome(status, worst);
  }

  // 3. Rank 0 publishes the checkpoint; every rank learns the outcome.
  status = Status::success();
  if (leader) {
    std::vector<std::pair<uint64_t, std::string>> files;
    for (const SaveRecord &r : records)
      files.push_back({r.bytes, std::string(r.sha, sizeof r.sha)});
    status = publish(tmp, name, step, dataPosition, loss, files);
  }
  mine = SaveRecord();
  mine.code = status.code;
  return sharedOutcome(status, worstCode(gatherRecords(mine)));
}

Status CheckpointStore::publish(
    const std::string &tmp, const std::string &name, int64_t step,
    int64_t dataPosition, double loss,
    const std::vector<std::pair<uint64_t, std::string>> &files) const {
  std::string finalPath = joinPath(dir_, name);
  std::string error;
  auto fail = [&](const std::string &what) {
    std::string ignored;
    (void)removeTree(tmp, ignored);
    return Status::failure("cannot save checkpoint " + finalPath + ": " + what);
  };
  JsonValue manifest = JsonValue::object();
  manifest.set("format_version", JsonValue::integer(1));
  manifest.set("step", JsonValue::integer(step));
  manifest.set("data_position", JsonValue::integer(dataPosition));
  manifest.set("data_order", JsonValue::string(dataOrder_));
  manifest.set("signature_sha256", JsonValue::string(signatureSha_));
  manifest.set("loss", std::isfinite(loss) ? JsonValue::number(loss)
                                           : JsonValue::null());
  manifest.set("world_size", JsonValue::integer(worldSize_));
  JsonValue &entries = manifest.set("files", JsonValue::object());
  for (size_t r = 0; r < files.size(); ++r) {
    JsonValue &state =
        entries.set(stateFileName(static_cast<int64_t>(r), worldSize_),
                    JsonValue::object());
    state.set("bytes",
              JsonValue::integer(static_cast<int64_t>(files[r].first)));
    state.set("sha256", JsonValue::string(files[r].second));
    if (worldSize_ > 1)
      state.set("rank", JsonValue::integer(static_cast<int64_t>(r)));
  }
  std::string text = manifest.dump(/*pretty=*/true) + "\n";
  if (!writeFileAtomic(joinPath(tmp, kSignatureFile),
                       {{signatureJson_.data(), signatureJson_.size()}},
                       error) ||
      !writeFileAtomic(joinPath(tmp, kManifestFile),
                       {{text.data(), text.size()}}, error) ||
      !fsyncDirectory(tmp, error))
    return fail(error);

  bool exchanged = false;
  std::string aside =
      joinPath(dir_, "." + name + ".old-" + std::to_string(::getpid()));
  if (!renameDirectory(tmp, finalPath, aside, exchanged, error))
    return fail(error);
  if (exchanged)
    (void)removeTree(tmp, error); // now the replaced directory
  if (!fsyncDirectory(dir_, error))
    return Status::failure("cannot save checkpoint " + finalPath + ": " +
                           error);
  std::string latest = name + "\n";
  if (!writeFileAtomic(joinPath(dir_, kLatestFile),
                       {{latest.data(), latest.size()}}, error))
    return Status::failure("cannot save checkpoint " + finalPath + ": " +
                           error);
  prune(step);
  return Status::success();
}

void CheckpointStore::prune(int64_t keepStep) const {
  std::vector<std::string> names;
  std::string error;
  if (!listDirectory(dir_, names, error))
    return;
  // Keep the new checkpoint and the newest other one.
  auto found = listCheckpoints(dir_);
  int64_t previous = -1;
  for (const auto &entry : found)
    if (entry.first != keepStep)
      previous = entry.first;
  for (const auto &entry : found) {
    if (entry.first == keepStep || entry.first == previous)
      continue;
    // Renamed first, so a removal cut short never leaves a directory that
    // looks like a checkpoint.
    std::string from = joinPath(dir_, entry.second);
    std::string doomed = joinPath(dir_, "." + entry.second + ".old-" +
                                            std::to_string(::getpid()));
    if (::rename(from.c_str(), doomed.c_str()) == 0)
      (void)removeTree(doomed, error);
  }
  // Leftovers of killed saves (their process is gone).
  for (const std::string &name : names) {
    int64_t pid = scratchDirPid(name);
    if (pid >= 0 && !otherProcessAlive(pid))
      (void)removeTree(joinPath(dir_, name), error);
    else if (name.compare(0, 8, ".latest.") == 0) {
      size_t tmpAt = name.rfind(".tmp.");
      int64_t writer = -1;
      if (tmpAt != std::string::npos &&
          parseInt64(name.substr(tmpAt + 5), writer) && writer >= 0 &&
          !otherProcessAlive(writer))
        (void)removeTree(joinPath(dir_, name), error);
    }
  }
  (void)fsyncDirectory(dir_, error);
}

} // namespace weft
