//===- Progress.cpp - What a training run shows and records ---------------===//

#include "Progress.h"

#include "weft/runtime/FileUtil.h"
#include "weft/runtime/Json.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <unistd.h>

namespace weft {

std::string formatEta(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 1e9)
    return "--:--";
  long long total = static_cast<long long>(std::llround(seconds));
  long long h = total / 3600, m = (total / 60) % 60, s = total % 60;
  char buf[48];
  if (h > 0)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", h, m, s);
  else
    std::snprintf(buf, sizeof buf, "%02lld:%02lld", m, s);
  return buf;
}

std::string formatProgressLine(int64_t step, int64_t total, double loss,
                               double samplesPerSec, double etaSeconds) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "step %lld/%lld  loss %.6g  %.1f samples/s",
                static_cast<long long>(step), static_cast<long long>(total),
                loss, samplesPerSec);
  return std::string(buf) + "  ETA " + formatEta(etaSeconds);
}

ProgressDisplay::ProgressDisplay(int fd) : fd_(fd) {
  active_ = ::isatty(fd) == 1;
}

void ProgressDisplay::write(const std::string &text) {
  if (fd_ < 0) // a rank other than 0 of a multi-rank run
    return;
  const char *p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return; // a progress line is not worth failing the run
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void ProgressDisplay::update(int64_t step, int64_t total, double loss,
                             double samplesPerSec, double etaSeconds,
                             bool force) {
  if (!active_)
    return;
  auto now = std::chrono::steady_clock::now();
  if (drawn_ && !force && now - lastDraw_ < std::chrono::milliseconds(100))
    return;
  last_ = formatProgressLine(step, total, loss, samplesPerSec, etaSeconds);
  // '\r', the line, then erase whatever a longer previous line left.
  write("\r" + last_ + "\x1b[K");
  drawn_ = true;
  lastDraw_ = now;
}

void ProgressDisplay::clear() {
  if (active_ && drawn_)
    write("\r\x1b[K");
  drawn_ = false;
}

void ProgressDisplay::warn(const std::string &message) {
  bool redraw = active_ && drawn_;
  clear();
  std::fflush(stdout);
  std::fflush(stderr);
  write("weft: warning: " + message + "\n");
  if (redraw) {
    write(last_ + "\x1b[K");
    drawn_ = true;
  }
}

std::string metricsLinesUpTo(const std::string &text, int64_t step) {
  std::string kept;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos)
      break; // a line cut short
    std::string_view line(text.data() + begin, end - begin);
    begin = end + 1;
    JsonValue record;
    std::string error;
    if (!parseJson(line, record, error) || !record.isObject())
      continue;
    const JsonValue *s = record.get("step");
    if (s && s->isInteger() && s->asInt() >= 1 && s->asInt() <= step) {
      kept.append(line.data(), line.size());
      kept.push_back('\n');
    }
  }
  return kept;
}

Status MetricsWriter::open(const std::string &path, int64_t resumeStep) {
  close();
  path_ = path;
  std::string error;
  if (resumeStep >= 0 && fileExists(path)) {
    std::string text;
    if (!readFile(path, text, error))
      return Status::badInput("--metrics: " + error);
    std::string kept = metricsLinesUpTo(text, resumeStep);
    if (kept != text &&
        !writeFileAtomic(path, {{kept.data(), kept.size()}}, error))
      return Status::badInput("--metrics: " + error);
  }
  file_ = std::fopen(path.c_str(), resumeStep >= 0 ? "ae" : "we");
  if (!file_)
    return Status::badInput("--metrics: cannot open '" + path +
                            "': " + std::strerror(errno));
  return Status::success();
}

Status MetricsWriter::write(int64_t step, double loss, double stepTimeS,
                            double samplesPerSec, double lr) {
  if (!file_)
    return Status::success();
  JsonValue record = JsonValue::object();
  record.set("step", JsonValue::integer(step));
  record.set("loss", JsonValue::number(loss));
  record.set("step_time_s", JsonValue::number(stepTimeS));
  record.set("samples_per_s", JsonValue::number(samplesPerSec));
  if (!std::isnan(lr))
    record.set("lr", JsonValue::number(lr));
  std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() ||
      std::fflush(file_) != 0)
    return Status::failure("cannot write the metrics file '" + path_ +
                           "': " + std::strerror(errno));
  return Status::success();
}

void MetricsWriter::close() {
  if (file_)
    std::fclose(file_);
  file_ = nullptr;
}

} // namespace weft
