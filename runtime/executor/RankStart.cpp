//===- RankStart.cpp - Joining the other ranks of a multi-rank bundle -----===//
#include "RankStart.h"

#include "weft/runtime/Comm.h"
#include "weft/runtime/CorePlacement.h"
#include "weft/runtime/FileUtil.h"
#include "weft/runtime/MeshIndex.h"
#include "weft/runtime/Safetensors.h"
#include "weft/runtime/Sha256.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace weft {

namespace {

constexpr size_t kDigest = 64; ///< hex SHA-256
const std::string kUnknown(kDigest, '-');

/// "rank 2" / "ranks 1,3".
std::string rankList(const std::vector<int64_t> &ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i)
    s += (i ? "," : "") + std::to_string(ranks[i]);
  return s;
}

std::string shortDigest(const std::string &hex) {
  return hex.substr(0, 12) + "...";
}

} // namespace

bool paramsHeaderSha256(const std::string &path, std::string &hexDigest,
                        std::string &error) {
  SafetensorsReader reader;
  if (!reader.open(path, error))
    return false;
  std::string text;
  for (const auto &kv : reader.metadata())
    if (kv.first != "rank")
      text += "meta " + kv.first + "=" + kv.second + "\n";
  for (const SafetensorsEntry &t : reader.tensors()) {
    text += "tensor " + t.name + " " + safetensorsDTypeName(t.dtype) + " [";
    for (int64_t d : t.shape)
      text += std::to_string(d) + ",";
    text += "] " + std::to_string(t.fileOffset) + " " +
            std::to_string(t.byteSize) + "\n";
  }
  hexDigest = sha256Hex(text);
  return true;
}

static int64_t gPinnedCpu = -1;

int64_t pinnedCpu() { return gPinnedCpu; }

/// Ranks on one host share its cores: unless WEFT_NUM_THREADS says
/// otherwise, each one's kernels get cores / (ranks on the host) threads
/// (every core would oversubscribe them: N ranks x all cores). When the
/// ranks outnumber the cores, each rank runs one thread pinned to the core
/// CorePlacement.h gives it (WEFT_PIN_RANKS=0 leaves placement to the
/// operating system). Collective.
static void shareCoresWithLocalRanks(int64_t rank) {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0)
    std::snprintf(host, sizeof host, "unknown");
  std::vector<uint8_t> all = comm::allGatherBytes(host, sizeof host);
  int64_t local = 0, localRank = 0;
  for (size_t at = 0; at < all.size(); at += sizeof host)
    if (std::strncmp(reinterpret_cast<const char *>(all.data() + at), host,
                     sizeof host) == 0) {
      localRank += static_cast<int64_t>(at / sizeof host) < rank;
      ++local;
    }
  if (local < 1)
    return;
  const std::vector<int> cpus = allowedCpus();
  const int64_t cores =
      cpus.empty() ? static_cast<int64_t>(std::thread::hardware_concurrency())
                   : static_cast<int64_t>(cpus.size());
  const char *given = std::getenv("WEFT_NUM_THREADS");
  if (!(given && *given))
    setenv("WEFT_NUM_THREADS",
           std::to_string(std::max<int64_t>(1, cores / local)).c_str(), 1);
  const bool oneThread = std::strcmp(std::getenv("WEFT_NUM_THREADS"), "1") == 0;
  if (oneThread)
    gPinnedCpu = pinToSharedCore(localRank, local);
}

Status startRanks(const ModelSignature &sig, const std::string &bundleDir,
                  int64_t &rank) {
  comm::Context &context = comm::context();
  std::string error;
  if (!context.init(sig.worldSize, sig.meshShape, sig.meshAxes, error)) {
    Status status = Status::badInput(error);
    // Started ranks that disagree with the bundle all know it alike.
    if (context.active())
      status.everyRank();
    return status;
  }
  if (!context.active())
    return currentRank(rank);
  rank = context.rank();
  shareCoresWithLocalRanks(rank);

  // What this rank runs: its executable and its parameter file's header.
  std::string exe = kUnknown, params = kUnknown, digest;
  uint64_t bytes = 0;
  if (sha256File("/proc/self/exe", digest, bytes, error))
    exe = digest;
  if (paramsHeaderSha256(joinPath(bundleDir, paramsFileName(rank)), digest,
                         error))
    params = digest; // an unreadable file is reported when it is loaded
  std::string record = exe + params;
  std::vector<uint8_t> all = comm::allGatherBytes(record.data(), 2 * kDigest);
  auto field = [&](int64_t r, size_t which) {
    return std::string(
        reinterpret_cast<const char *>(all.data() + (r * 2 + which) * kDigest),
        kDigest);
  };
  // Parameter files agree within a pipeline stage (each stage's ranks hold
  // its parameters only): each is compared with its stage's first rank's.
  auto reference = [&](int64_t r) -> int64_t {
    if (sig.pipelineAxis < 0)
      return 0;
    int64_t stage = meshGroupIndex(r, sig.meshShape, &sig.pipelineAxis, 1);
    for (int64_t q = 0; q < r; ++q)
      if (meshGroupIndex(q, sig.meshShape, &sig.pipelineAxis, 1) == stage)
        return q;
    return r;
  };
  std::vector<int64_t> otherExe, otherParams;
  for (int64_t r = 1; r < context.size(); ++r) {
    int64_t ref = reference(r);
    if (field(r, 0) != field(0, 0) && field(r, 0) != kUnknown &&
        field(0, 0) != kUnknown)
      otherExe.push_back(r);
    else if (field(r, 1) != field(ref, 1) && field(r, 1) != kUnknown &&
             field(ref, 1) != kUnknown)
      otherParams.push_back(r);
  }
  if (!otherExe.empty()) {
    int64_t r = otherExe.front();
    return Status::badInput(
               rankList(otherExe) + (otherExe.size() == 1 ? " runs" : " run") +
               " a different executable than rank 0 (SHA-256 " +
               shortDigest(field(r, 0)) + " vs " + shortDigest(field(0, 0)) +
               "): every rank must run the same bundle")
        .everyRank();
  }
  if (!otherParams.empty()) {
    int64_t r = otherParams.front();
    int64_t ref = reference(r);
    return Status::badInput(
               "the parameter file of " + rankList(otherParams) + " (" +
               paramsFileName(r) + (otherParams.size() > 1 ? ", ..." : "") +
               ") belongs to another program than rank " + std::to_string(ref) +
               "'s (header SHA-256 " + shortDigest(field(r, 1)) + " vs " +
               shortDigest(field(ref, 1)) +
               "): every rank must run the same bundle")
        .everyRank();
  }
  return Status::success();
}

} // namespace weft
