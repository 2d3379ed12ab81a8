//===- Launch.h - Starting a command's ranks and watching them end -------===//
//
// `weft run`, `weft train` and `weft calibrate` start their executable as
// N ranks: directly for one, through `mpirun --oversubscribe -n N`
// otherwise. weft stays their parent rather than becoming them, so that a
// job never ends without a word:
//   - a rank or mpirun killed by a signal is named with the signal;
//   - a job of several ranks that exits non-zero while nothing at all was
//     written on stderr (by a rank, by MPI or by mpirun) gets a line saying
//     so, with the exit code;
//   - SIGTERM and SIGHUP sent to weft, and a SIGINT sent to weft alone
//     (not the terminal's, which its ranks receive too), are passed on, and
//     the ranks' launcher is told to stop when weft itself dies.
// A multi-rank job's stderr is relayed through weft (it notices the bytes,
// it does not change them); stdout is the ranks' own.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFT_LAUNCH_H
#define WEFT_TOOLS_WEFT_LAUNCH_H

#include <cstdint>
#include <string>
#include <vector>

namespace weft::cli {

/// argv for execv / execvp: pointers into `args`, then a null.
std::vector<char *> execArgv(std::vector<std::string> &args);

/// Runs `exe` with `exeArgs` as `ranks` ranks and returns their exit code
/// (1 when a signal ended them or they could not start; `whyMpi` says what
/// needed mpirun).
int runRanks(int64_t ranks, const std::string &exe,
             const std::vector<std::string> &exeArgs,
             const std::string &whyMpi);

/// Whether weft was sent SIGINT, SIGTERM or SIGHUP during the last
/// runRanks: the user stopped the job, and it must not be restarted.
bool stopRequested();

} // namespace weft::cli

#endif // WEFT_TOOLS_WEFT_LAUNCH_H
