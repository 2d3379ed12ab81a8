//===- RankStart.h - Joining the other ranks of a multi-rank bundle -------===//
//
// A bundle compiled for several devices ("world_size" > 1) starts its
// world (Comm.h: MPI under mpirun or srun) before it reads anything, and
// refuses, on every rank with exit code 2, a launch of another number of
// ranks and a job whose ranks do not all run the same program: every rank
// hashes its executable (/proc/self/exe) and the header of its parameter
// file (tensor names, dtypes, shapes and offsets; the "rank" metadata
// aside), the hashes are gathered, and the ranks that differ from rank 0
// are named. Ranks that outnumber their host's cores are pinned to one
// each (CorePlacement.h; WEFT_PIN_RANKS=0 leaves them to the OS).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_EXECUTOR_RANKSTART_H
#define WEFT_RUNTIME_EXECUTOR_RANKSTART_H

#include "weft/runtime/Executor.h"

#include <cstdint>
#include <string>

namespace weft {

/// Starts the ranks of `sig` and checks them as above; `rank` is this
/// process's rank (for a single-rank bundle: currentRank()). `bundleDir`
/// holds the params.rank<R>.safetensors files.
Status startRanks(const ModelSignature &sig, const std::string &bundleDir,
                  int64_t &rank);

/// The CPU startRanks pinned this rank to (ranks outnumbering the host's
/// cores: weft/runtime/CorePlacement.h), or -1.
int64_t pinnedCpu();

/// The SHA-256 of what identifies a parameter file's program: its header
/// without the "rank" metadata. False (with `error`) when it cannot be
/// read.
bool paramsHeaderSha256(const std::string &path, std::string &hexDigest,
                        std::string &error);

} // namespace weft

#endif // WEFT_RUNTIME_EXECUTOR_RANKSTART_H
