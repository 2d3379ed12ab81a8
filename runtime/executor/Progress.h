//===- Progress.h - What a training run shows and records -----------------===//
//
// On a terminal, `weft train` keeps one line on stderr up to date:
//
//   step 5/10  loss 0.123456  812.3 samples/s  ETA 00:03
//
// (redrawn with '\r', at most ten times a second, and erased at the end).
// When stderr is not a terminal nothing is printed per step. --metrics FILE
// gets one JSON object per step (MetricsWriter).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_EXECUTOR_PROGRESS_H
#define WEFT_RUNTIME_EXECUTOR_PROGRESS_H

#include "weft/runtime/Executor.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace weft {

/// "00:03", "59:59", "1:00:00"; "--:--" when unknown (negative or not
/// finite).
std::string formatEta(double seconds);

/// "step 5/10  loss 0.123456  812.3 samples/s  ETA 00:03".
std::string formatProgressLine(int64_t step, int64_t total, double loss,
                               double samplesPerSec, double etaSeconds);

class ProgressDisplay {
public:
  /// Draws on file descriptor `fd` when it is a terminal; otherwise stays
  /// silent.
  explicit ProgressDisplay(int fd);
  ~ProgressDisplay() { clear(); }
  ProgressDisplay(const ProgressDisplay &) = delete;
  ProgressDisplay &operator=(const ProgressDisplay &) = delete;

  bool active() const { return active_; }
  /// Redraws the line (rate-limited unless `force`).
  void update(int64_t step, int64_t total, double loss, double samplesPerSec,
              double etaSeconds, bool force);
  /// Erases the line.
  void clear();
  /// Prints "weft: warning: <message>" on stderr without mangling the line.
  void warn(const std::string &message);

private:
  void write(const std::string &text);

  int fd_;
  bool active_ = false;
  bool drawn_ = false;
  std::string last_;
  std::chrono::steady_clock::time_point lastDraw_;
};

/// The lines of a metrics file to keep when resuming at step `step`: every
/// complete line whose "step" is at most `step` (records of steps the resumed
/// run repeats, and a line cut short by a kill, are dropped).
std::string metricsLinesUpTo(const std::string &text, int64_t step);

class MetricsWriter {
public:
  MetricsWriter() = default;
  ~MetricsWriter() { close(); }
  MetricsWriter(const MetricsWriter &) = delete;
  MetricsWriter &operator=(const MetricsWriter &) = delete;

  /// Opens `path`: truncated for a fresh run (`resumeStep` < 0), else with
  /// the records after `resumeStep` dropped and new ones appended.
  Status open(const std::string &path, int64_t resumeStep);
  bool isOpen() const { return file_ != nullptr; }
  /// Appends {"step", "loss", "step_time_s", "samples_per_s"} (and "lr",
  /// the update's learning rate, unless NaN: not known) and flushes.
  Status write(int64_t step, double loss, double stepTimeS,
               double samplesPerSec, double lr = NAN);
  void close();

private:
  std::string path_;
  std::FILE *file_ = nullptr;
};

} // namespace weft

#endif // WEFT_RUNTIME_EXECUTOR_PROGRESS_H
