//===- CalibrateReport.cpp - weft-calibrate's cluster file and table -----===//
//
// What weft-calibrate writes once it has measured: the cluster JSON of
// tools/weftc/planner/Cluster.h (with the raw measurements under
// "calibration") and the table it prints.
//
//===----------------------------------------------------------------------===//

#include "tools/weft/Calibrate.h"

#include "weft/runtime/FileUtil.h"
#include "weft/runtime/Json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <unistd.h>

namespace weft::calibrate {

namespace {

/// A measured figure (six significant digits).
std::string num(double v) {
  if (!std::isfinite(v))
    v = 0;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// A count (bytes, FLOPs): every digit.
std::string whole(double v) {
  if (!std::isfinite(v))
    v = 0;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

std::string hostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || !host[0])
    return "unknown host";
  return host;
}

/// MemTotal of /proc/meminfo in bytes (0 if unknown).
double memoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double value = 0;
  std::string unit;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemTotal:")
      return value * (unit.find("kB") != std::string::npos ? 1024.0 : 1.0);
  }
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * page : 0.0;
}

std::string isoDate() {
  std::time_t t = std::time(nullptr);
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

} // namespace

/// The 1-minute load average (-1 if unknown).
double loadAverage() {
  double load[1];
  return ::getloadavg(load, 1) == 1 ? load[0] : -1.0;
}

std::string clusterJson(const Report &r) {
  std::string j;
  j += "{\n  \"format\": \"weft-cluster/1\",\n  \"name\": ";
  appendJsonString(j, "calibrated on " + hostName());
  j +=
      ",\n  \"nodes\": 1,\n  \"devices_per_node\": " + std::to_string(r.ranks) +
      ",\n  \"cores_per_node\": " + std::to_string(r.cores) + ",\n";
  const DeviceFigures &d = r.device;
  j += "  \"device\": {\n    \"kind\": \"cpu\",\n";
  j += "    \"peak_flops\": {\"fp32\": " + num(d.peakFp32);
  if (d.peakBf16 > 0)
    j += ", \"bf16\": " + num(d.peakBf16);
  j += "},\n";
  j += "    \"memory_bytes\": " + whole(memoryBytes()) + ",\n";
  j += "    \"memory_bandwidth\": " + num(d.memoryBandwidth) + ",\n";
  if (d.cacheBandwidth > 0)
    j += "    \"cache_bytes\": " + whole(d.cacheBytes) +
         ",\n    \"cache_bandwidth\": " + num(d.cacheBandwidth) + ",\n";
  j += "    \"kernel_bandwidth\": {\"adamw\": " + num(d.adamwBandwidth);
  for (const auto &[name, rate] : d.kernelBandwidth)
    j += ", \"" + name + "\": " + num(rate);
  j += "},\n";
  if (d.attentionRate > 0 && d.attentionGradRate > 0)
    j += "    \"kernel_efficiency\": {\"attention\": " +
         num(std::min(1.0, d.attentionRate / d.peakFp32)) +
         ", \"attention_grad\": " +
         num(std::min(1.0, d.attentionGradRate / d.peakFp32)) + "},\n";
  j += "    \"gemm_efficiency\": [";
  for (size_t i = 0; i < d.gemm.size(); ++i) {
    double eff = std::min(1.0, d.gemm[i].fp32Rate / d.peakFp32);
    j += (i ? ", " : "") + std::string("[") + whole(d.gemm[i].flops) + ", " +
         num(std::max(eff, 1e-6)) + "]";
  }
  j += "],\n";
  if (d.gemmFullDim > 0)
    j += "    \"gemm_full_dim\": " + num(d.gemmFullDim) + ",\n";
  if (d.weightStreamBandwidth > 0)
    j += "    \"weight_stream_bandwidth\": " + num(d.weightStreamBandwidth) +
         ",\n";
  if (d.privateCacheBytes > 0)
    j += "    \"private_cache_bytes\": " + whole(d.privateCacheBytes) + ",\n";
  j += "    \"kernel_overhead_s\": " + num(d.kernelOverhead) + "\n  },\n";

  const std::string headline = "\"bandwidth\": " + num(r.headlineBandwidth) +
                               ", \"latency\": " + num(r.headlineLatency);
  j += "  \"links\": {\n    \"intra_node\": {" + headline;
  if (!r.haveLinks)
    j += ", \"assumed\": true";
  j += ",\n      \"measured\": [";
  bool first = true;
  for (const Series &s : r.series) {
    j += first ? "\n" : ",\n";
    first = false;
    j += std::string("        {\"collective\": \"") + collName(s.coll) +
         "\", \"ranks\": " + std::to_string(s.ranks) +
         ", \"bandwidth\": " + num(s.bandwidth) +
         ", \"latency\": " + num(s.latency) +
         ", \"concurrent_groups\": " + std::to_string(s.groups) +
         ", \"rms_rel_error\": " + num(s.rmsRelError) + "}";
  }
  j += first ? "]},\n" : "]},\n";
  j += "    \"inter_node\": {" + headline + ", \"assumed\": true}\n  },\n";
  j += "  \"overlap\": " + num(r.overlap.overlap) + ",\n";

  j += "  \"calibration\": {\n    \"date\": \"" + isoDate() +
       "\",\n    \"ranks\": " + std::to_string(r.ranks) +
       ",\n    \"threads_per_rank\": 1,\n    \"quick\": " +
       (r.quick ? "true" : "false") + ",\n    \"seconds\": " + num(r.seconds) +
       ",\n    \"load_average\": [" + num(r.loadBefore) + ", " +
       num(r.loadAfter) + "],\n";
  j += "    \"gemm\": [";
  for (size_t i = 0; i < d.gemm.size(); ++i)
    j += (i ? ", " : "") + std::string("{\"n\": ") +
         std::to_string(d.gemm[i].n) +
         ", \"fp32_flops_per_s\": " + num(d.gemm[i].fp32Rate) +
         ", \"bf16_flops_per_s\": " + num(d.gemm[i].bf16Rate) + "}";
  j += "],\n";
  j += "    \"skinny_gemm\": [";
  for (size_t i = 0; i < d.skinny.size(); ++i)
    j += (i ? ", " : "") + std::string("{\"small\": ") +
         std::to_string(d.skinny[i].d) +
         ", \"wide\": " + std::to_string(kSkinnyWide) +
         ", \"contraction\": " + (d.skinny[i].contraction ? "true" : "false") +
         ", \"fp32_flops_per_s\": " + num(d.skinny[i].rate) +
         ", \"efficiency_vs_square\": " + num(d.skinny[i].efficiency) + "}";
  j += "],\n";
  j += "    \"memory\": {\"accounting\": \"operands + results + results "
       "again (write-allocate)\", \"node_threads\": " +
       std::to_string(d.nodeThreads) +
       ", \"array_bytes\": " + whole(static_cast<double>(d.streamArrayBytes)) +
       ", \"node\": " + num(d.memoryBandwidth) +
       ", \"one_core\": " + num(d.oneCoreBandwidth) +
       ", \"one_core_read_written\": " + num(d.oneCoreReadWritten) +
       ", \"cache_array_bytes\": " +
       whole(static_cast<double>(d.cacheArrayBytes)) + "},\n";
  if (r.haveLinks) {
    const OverlapFigures &o = r.overlap;
    j += "    \"overlap\": {\"all_reduce_bytes\": " + whole(o.bytes) +
         ", \"gemm_n\": " + std::to_string(o.gemmN) +
         ", \"gemm_calls\": " + std::to_string(o.gemmCalls) +
         ", \"t_all_reduce_s\": " + num(o.tAllReduce) +
         ", \"t_gemm_s\": " + num(o.tGemm) + ", \"t_both_s\": " + num(o.tBoth) +
         ", \"t_both_no_progress_s\": " + num(o.tBothNoProgress) +
         ", \"overlap_no_progress\": " + num(o.overlapNoProgress) + "},\n";
  } else {
    j += "    \"links_assumed\": \"one rank: links are its weft_k_copy "
         "bandwidth and kernel overhead\",\n";
  }
  j += "    \"collective_times\": [";
  first = true;
  for (const Series &s : r.series) {
    j += first ? "\n" : ",\n";
    first = false;
    j += std::string("      {\"collective\": \"") + collName(s.coll) +
         "\", \"ranks\": " + std::to_string(s.ranks) + ", \"bytes\": [";
    for (size_t i = 0; i < s.bytes.size(); ++i)
      j += (i ? ", " : "") + whole(s.bytes[i]);
    j += "], \"seconds\": [";
    for (size_t i = 0; i < s.seconds.size(); ++i)
      j += (i ? ", " : "") + num(s.seconds[i]);
    j += "]}";
  }
  j += "]\n  }\n}\n";
  return j;
}

void printTable(const Report &r, const std::string &output) {
  const DeviceFigures &d = r.device;
  std::printf("weft calibrate: %lld rank%s on %s (%u hardware threads), one "
              "kernel thread per rank%s\n",
              static_cast<long long>(r.ranks), r.ranks == 1 ? "" : "s",
              hostName().c_str(), r.cores, r.quick ? ", --quick" : "");
  if (r.loadBefore >= 0.5 * r.cores)
    std::printf("note: the machine was busy before calibrating (load "
                "average %.2f on %u hardware threads): the figures may be "
                "low\n",
                r.loadBefore, r.cores);
  std::printf("\ncompute, one core (weft_k_matmul, n x n x n):\n");
  std::printf("  %6s %11s %12s %6s %12s\n", "n", "flops", "fp32 GFLOP/s", "eff",
              "bf16 GFLOP/s");
  for (const GemmPoint &p : d.gemm)
    std::printf("  %6lld %11.3g %12.2f %6.3f %12.2f\n",
                static_cast<long long>(p.n), p.flops, p.fp32Rate / 1e9,
                p.fp32Rate / d.peakFp32, p.bf16Rate / 1e9);
  std::printf("  peak: fp32 %.1f GFLOP/s, bf16 %.1f GFLOP/s\n",
              d.peakFp32 / 1e9, d.peakBf16 / 1e9);
  if (!d.skinny.empty()) {
    std::printf("\nskinny products, f32, one dimension small, the others "
                "%lld (efficiency against the square table at their "
                "FLOPs):\n  %6s %22s %22s\n",
                static_cast<long long>(kSkinnyWide), "small",
                "rows: GFLOP/s  eff", "contraction: GFLOP/s  eff");
    const size_t half = d.skinny.size() / 2; // rows first, then contraction
    for (size_t i = 0; i < half; ++i)
      std::printf("  %6lld %15.2f %6.3f %15.2f %6.3f\n",
                  static_cast<long long>(d.skinny[i].d), d.skinny[i].rate / 1e9,
                  d.skinny[i].efficiency, d.skinny[half + i].rate / 1e9,
                  d.skinny[half + i].efficiency);
    std::printf("  fitted gemm_full_dim: %.1f (efficiency x min(1, small / "
                "it)^0.8)\n",
                d.gemmFullDim);
  }
  std::printf("\nweights from beyond the core's caches (64 x %lld x %lld "
              "products, B from %lld MiB of weights, against one B): %.2f "
              "GB/s of weight; private cache %.2f MiB\n",
              static_cast<long long>(kSkinnyWide),
              static_cast<long long>(kSkinnyWide),
              static_cast<long long>(kWeightPoolBytes >> 20),
              d.weightStreamBandwidth / 1e9, d.privateCacheBytes / (1 << 20));
  std::printf("\nmemory (weft_k_binary add of %.0f MiB f32 arrays; traffic "
              "counted as operands + results twice):\n"
              "  node, %d threads at once  %8.2f GB/s\n"
              "  one core alone            %8.2f GB/s (%.2f GB/s read + "
              "written)\n",
              static_cast<double>(d.streamArrayBytes) / (1 << 20),
              d.nodeThreads, d.memoryBandwidth / 1e9, d.oneCoreBandwidth / 1e9,
              d.oneCoreReadWritten / 1e9);
  if (d.cacheBandwidth > 0)
    std::printf("  cache, per core           %8.2f GB/s (%.2f MiB arrays; "
                "last-level cache %.0f MiB)\n",
                d.cacheBandwidth / 1e9,
                static_cast<double>(d.cacheArrayBytes) / (1 << 20),
                d.cacheBytes / (1 << 20));
  std::printf("  weft_k_adamw, node        %8.2f GB/s\n",
              d.adamwBandwidth / 1e9);
  if (!d.kernelBandwidth.empty()) {
    std::printf("kernels on %.0f KiB f32 tensors, node (GB/s as the cost "
                "model counts traffic):\n ",
                static_cast<double>(kKernelElems) * 4 / 1024);
    int column = 0;
    for (const auto &[name, rate] : d.kernelBandwidth)
      std::printf(" %s %.2f%s", name.c_str(), rate / 1e9,
                  ++column % 4 == 0 ? "\n " : "");
    std::printf("\n");
  }
  std::printf("fused attention, f32 [2, 4, 256, 64] causal: forward %.2f, "
              "backward %.2f GFLOP/s (%.2f and %.2f of peak)\n",
              d.attentionRate / 1e9, d.attentionGradRate / 1e9,
              d.attentionRate / d.peakFp32, d.attentionGradRate / d.peakFp32);
  std::printf("kernel overhead (weft_k_binary, one element): %.3g us\n",
              d.kernelOverhead * 1e6);
  if (r.haveLinks) {
    std::printf("\ncollectives (f32, %.0f B .. %.0f MiB; groups of "
                "consecutive ranks measure at once):\n",
                r.series.front().bytes.front(),
                r.series.front().bytes.back() / (1 << 20));
    std::printf("  %-15s %5s %6s %12s %14s %9s\n", "collective", "ranks",
                "groups", "latency us", "bandwidth GB/s", "fit err");
    for (const Series &s : r.series)
      std::printf("  %-15s %5lld %6lld %12.2f %14.3f %8.0f%%\n",
                  collName(s.coll), static_cast<long long>(s.ranks),
                  static_cast<long long>(s.groups), s.latency * 1e6,
                  s.bandwidth / 1e9, s.rmsRelError * 100);
    const OverlapFigures &o = r.overlap;
    std::printf("\noverlap: %.2f (all_reduce of %.0f MiB over %lld ranks, "
                "%.2f ms, behind %lld matmul %lld^3 calls, %.2f ms, with "
                "comm_progress after each: %.2f ms together; %.2f without "
                "comm_progress)\n",
                o.overlap, o.bytes / (1 << 20), static_cast<long long>(r.ranks),
                o.tAllReduce * 1e3, static_cast<long long>(o.gemmCalls),
                static_cast<long long>(o.gemmN), o.tGemm * 1e3, o.tBoth * 1e3,
                o.overlapNoProgress);
    std::printf("links (all_reduce over %lld ranks): latency %.2f us, "
                "bandwidth %.3f GB/s\n",
                static_cast<long long>(r.ranks), r.headlineLatency * 1e6,
                r.headlineBandwidth / 1e9);
  } else {
    std::printf("\none rank: no collectives measured; links assumed from "
                "weft_k_copy (%.2f GB/s) and the kernel overhead\n",
                r.headlineBandwidth / 1e9);
  }
  std::printf("\nwrote %s (%.1f s)\n", output.c_str(), r.seconds);
  std::fflush(stdout);
}

/// Whether `output` can be written (a file in an existing, writable
/// directory); `why` says why not.
bool checkOutput(const std::string &output, std::string &why) {
  if (output.empty() || output.back() == '/' || isDirectory(output)) {
    why = "output '" + output + "' is a directory; give the file to write";
    return false;
  }
  std::string dir = parentPath(output);
  if (!isDirectory(dir)) {
    why = "cannot write output '" + output + "': directory '" + dir +
          "' does not exist";
    return false;
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    why = "cannot write output '" + output + "': directory '" + dir +
          "' is not writable (" + std::strerror(errno) + ")";
    return false;
  }
  return true;
}

} // namespace weft::calibrate
