//===- Cluster.cpp - Presets and cluster files ----------------------------===//
#include "tools/weftc/planner/Cluster.h"
#include "tools/weftc/planner/GemmModel.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>

using namespace weft::planner;

namespace {

/// The presets, as cluster files would state them for one node.
///
/// h100-sxm: NVIDIA H100 SXM5 80 GB datasheet: 67 TFLOP/s fp32, 495 tf32
/// and 989 bf16 dense tensor-core FLOP/s, 3.35 TB/s HBM3; NVLink 4 gives
/// 900 GB/s per GPU over both directions (450 GB/s each way); a node has
/// 8x 400 Gb/s InfiniBand NDR (ConnectX-7), 50 GB/s per GPU.
/// a100-sxm: A100 SXM4 80 GB datasheet: 19.5 TFLOP/s fp32, 156 tf32, 312
/// bf16, 2.039 TB/s HBM2e; NVLink 3 600 GB/s per GPU (300 each way); 8x
/// 200 Gb/s HDR InfiniBand per node, 25 GB/s per GPU.
/// Latencies, large-GEMM efficiency and launch overhead are not datasheet
/// figures: they are assumptions until `weft calibrate` measures a GPU
/// (NCCL's ring step costs microseconds; cuBLAS reaches about 3/4 of the
/// dense peak on large bf16 products; a kernel launch costs about 5 us).
/// h100-sxm's kernel_efficiency is weft's own fused attention as measured
/// on an H200 (the H100's compute with more memory): causal bf16 [8, 12,
/// 1024, 64], forward 102 and backward 75 TFLOP/s of the 989 dense peak
/// (bench/results/gpu-h200-gpt2.json; times 261 / 256 for the 5 softmax
/// FLOPs per score the cost model counts beside the products' 4 D). Its
/// kernel_overhead_graph_s is a kernel's cost in a replayed CUDA graph as
/// weft-calibrate-cuda measured it on the same H200 (1.09 us,
/// bench/results/cluster-h200-calibrated.json). Not measured on an A100:
/// a100-sxm prices attention as a product and every launch eagerly.
constexpr const char *kH100 = R"({
  "format": "weft-cluster/1", "name": "h100-sxm",
  "nodes": 1, "devices_per_node": 8,
  "device": {"kind": "gpu",
             "peak_flops": {"fp32": 6.7e13, "tf32": 4.95e14, "bf16": 9.89e14},
             "memory_bytes": 8.0e10, "memory_bandwidth": 3.35e12,
             "gemm_efficiency": [[1.0e9, 0.35], [1.0e10, 0.6], [1.0e11, 0.75]],
             "kernel_efficiency": {"attention": 0.105, "attention_grad": 0.0775},
             "kernel_overhead_s": 5e-6, "kernel_overhead_graph_s": 1.1e-6},
  "links": {"intra_node": {"bandwidth": 4.5e11, "latency": 3e-6},
            "inter_node": {"bandwidth": 5.0e10, "latency": 6e-6}},
  "overlap": 0.9})";

constexpr const char *kA100 = R"({
  "format": "weft-cluster/1", "name": "a100-sxm",
  "nodes": 1, "devices_per_node": 8,
  "device": {"kind": "gpu",
             "peak_flops": {"fp32": 1.95e13, "tf32": 1.56e14, "bf16": 3.12e14},
             "memory_bytes": 8.0e10, "memory_bandwidth": 2.039e12,
             "gemm_efficiency": [[1.0e9, 0.35], [1.0e10, 0.6], [1.0e11, 0.75]],
             "kernel_overhead_s": 5e-6},
  "links": {"intra_node": {"bandwidth": 3.0e11, "latency": 3e-6},
            "inter_node": {"bandwidth": 2.5e10, "latency": 6e-6}},
  "overlap": 0.9})";

/// This machine's CPU ranks (2 cores of an AVX-512 AMD EPYC), one core's
/// figures as measured through weft's own kernels (bench/README.md): fp32
/// GEMM peaks at 262 GFLOP/s per core from 64^3 up and falls to 4% at 8^3;
/// streaming kernels (an Add, counted as operands + results twice) move
/// 150 GB/s per core from cache and 110-124 GB/s over the node from memory;
/// one launch costs about 0.1 us. Kernels below that rate (transcendentals,
/// row reductions, transposes, AdamW's seven streams) carry their own
/// bandwidth, measured per kernel in the trace of a single-rank training
/// step of the LM of bench/run_plan_accuracy.py (2 threads; bytes in the
/// same accounting over kernel time). The ranks share the cores and the
/// memory bandwidth. Collectives: OpenMPI's
/// non-blocking collectives between 2 and 4 oversubscribed ranks, alpha-beta
/// fits over 1-4 MiB messages (bench/README.md).
constexpr const char *kCpuLocal = R"({
  "format": "weft-cluster/1", "name": "cpu-local",
  "nodes": 1, "devices_per_node": 4, "cores_per_node": 2,
  "device": {"kind": "cpu",
             "peak_flops": {"fp32": 2.6e11},
             "memory_bytes": 2.5e10, "memory_bandwidth": 1.1e11,
             "cache_bytes": 3.2e7, "cache_bandwidth": 1.5e11,
             "kernel_bandwidth": {"adamw": 2.8e10, "binary": 1.29e11,
                                  "unary": 5.2e10, "transpose": 6.3e10,
                                  "layer_norm": 3.1e10,
                                  "layer_norm_grad": 2.75e10,
                                  "reduce": 5.7e10, "softmax": 1.7e10,
                                  "softmax_grad": 5.6e10,
                                  "softmax_xent": 1.4e10,
                                  "softmax_xent_grad": 2.9e10},
             "gemm_efficiency": [[1.0e3, 0.04], [8.2e3, 0.165],
                                 [6.6e4, 0.73], [5.2e5, 0.97]],
             "kernel_overhead_s": 1e-7},
  "links": {"intra_node": {"bandwidth": 2.9e9, "latency": 1e-6,
     "measured": [
       {"collective": "all_reduce", "ranks": 4, "bandwidth": 2.9e9, "latency": 1e-6},
       {"collective": "all_gather", "ranks": 4, "bandwidth": 5.3e9, "latency": 3e-6},
       {"collective": "reduce_scatter", "ranks": 4, "bandwidth": 2.2e9, "latency": 1e-6},
       {"collective": "all_reduce", "ranks": 2, "bandwidth": 5.8e9, "latency": 1e-6},
       {"collective": "all_gather", "ranks": 2, "bandwidth": 1.3e10, "latency": 1e-6},
       {"collective": "reduce_scatter", "ranks": 2, "bandwidth": 4.2e9, "latency": 1e-6},
       {"collective": "send_recv", "ranks": 2, "bandwidth": 1.5e10, "latency": 3e-6}]},
            "inter_node": {"bandwidth": 2.9e9, "latency": 1e-6}},
  "overlap": 0.0})";

const char *presetText(const std::string &name) {
  if (name == "h100-sxm")
    return kH100;
  if (name == "a100-sxm")
    return kA100;
  if (name == "cpu-local")
    return kCpuLocal;
  return nullptr;
}

/// Reads the JSON fields of a cluster with messages that name the field.
class Reader {
public:
  Reader(std::string origin, std::string &error)
      : origin(std::move(origin)), error(error) {}

  bool fail(const std::string &path, const std::string &what) {
    error = origin + ": " + (path.empty() ? "" : "'" + path + "' ") + what;
    return false;
  }

  const llvm::json::Object *object(const llvm::json::Object &in,
                                   const std::string &key,
                                   const std::string &path) {
    const llvm::json::Value *v = in.get(key);
    if (!v) {
      fail(path, "is missing");
      return nullptr;
    }
    const llvm::json::Object *o = v->getAsObject();
    if (!o)
      fail(path, "must be an object");
    return o;
  }

  /// A number > 0 (or >= 0 with `zeroOk`), finite.
  bool number(const llvm::json::Object &in, const std::string &key,
              const std::string &path, double &out, bool zeroOk = false,
              bool optional = false) {
    const llvm::json::Value *v = in.get(key);
    if (!v) {
      if (optional)
        return true;
      return fail(path, "is missing");
    }
    std::optional<double> d = v->getAsNumber();
    if (!d)
      return fail(path, "must be a number");
    if (!std::isfinite(*d) || *d < 0 || (!zeroOk && *d == 0))
      return fail(path, zeroOk ? "must be a finite number >= 0, got " +
                                     llvm::formatv("{0}", *d).str()
                               : "must be a finite number > 0, got " +
                                     llvm::formatv("{0}", *d).str());
    out = *d;
    return true;
  }

  bool count(const llvm::json::Object &in, const std::string &key,
             const std::string &path, int64_t &out, bool optional = false) {
    const llvm::json::Value *v = in.get(key);
    if (!v) {
      if (optional)
        return true;
      return fail(path, "is missing");
    }
    std::optional<int64_t> i = v->getAsInteger();
    if (!i || *i < 1)
      return fail(path, "must be a whole number >= 1");
    out = *i;
    return true;
  }

  bool link(const llvm::json::Object &links, const std::string &key,
            Link &out) {
    const std::string path = "links." + key;
    const llvm::json::Object *o = object(links, key, path);
    return o && number(*o, "bandwidth", path + ".bandwidth", out.bandwidth) &&
           number(*o, "latency", path + ".latency", out.latency,
                  /*zeroOk=*/true) &&
           (out.latency < 1.0 ||
            fail(path + ".latency", "must be below 1 s (it is in seconds)"));
  }

  std::string origin;
  std::string &error;
};

} // namespace

const std::vector<std::string> &weft::planner::clusterPresets() {
  static const std::vector<std::string> names = {"h100-sxm", "a100-sxm",
                                                 "cpu-local"};
  return names;
}

bool weft::planner::parseCluster(const std::string &text,
                                 const std::string &origin, Cluster &cluster,
                                 std::string &error) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed) {
    error = origin + ": not valid JSON: " + llvm::toString(parsed.takeError());
    return false;
  }
  Reader r(origin, error);
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return r.fail("", "must hold a JSON object");
  if (std::optional<llvm::StringRef> format = root->getString("format"))
    if (*format != "weft-cluster/1")
      return r.fail("format", "is '" + format->str() +
                                  "', this weftc reads 'weft-cluster/1'");
  Cluster c;
  if (std::optional<llvm::StringRef> name = root->getString("name"))
    c.name = name->str();
  else
    c.name = origin;
  if (!r.count(*root, "nodes", "nodes", c.nodes) ||
      !r.count(*root, "devices_per_node", "devices_per_node",
               c.devicesPerNode) ||
      !r.count(*root, "cores_per_node", "cores_per_node", c.coresPerNode,
               /*optional=*/true))
    return false;
  const llvm::json::Object *device = r.object(*root, "device", "device");
  if (!device)
    return false;
  if (std::optional<llvm::StringRef> kind = device->getString("kind")) {
    if (*kind != "gpu" && *kind != "cpu")
      return r.fail("device.kind", "must be \"gpu\" or \"cpu\"");
    c.kind = kind->str();
  }
  const llvm::json::Object *peak =
      r.object(*device, "peak_flops", "device.peak_flops");
  if (!peak)
    return false;
  for (const auto &[key, value] : *peak) {
    std::string dtype = key.str();
    if (dtype != "fp32" && dtype != "tf32" && dtype != "bf16")
      return r.fail("device.peak_flops." + dtype,
                    "is not a dtype weft knows (fp32, tf32, bf16)");
    double flops;
    if (!r.number(*peak, dtype, "device.peak_flops." + dtype, flops))
      return false;
    c.peakFlops[dtype] = flops;
  }
  if (!c.peakFlops.count("fp32"))
    return r.fail("device.peak_flops.fp32", "is missing");
  if (!r.number(*device, "memory_bytes", "device.memory_bytes",
                c.memoryBytes) ||
      !r.number(*device, "memory_bandwidth", "device.memory_bandwidth",
                c.memoryBandwidth) ||
      !r.number(*device, "kernel_overhead_s", "device.kernel_overhead_s",
                c.kernelOverhead, /*zeroOk=*/true, /*optional=*/true))
    return false;
  if (device->get("kernel_overhead_graph_s") &&
      !r.number(*device, "kernel_overhead_graph_s",
                "device.kernel_overhead_graph_s", c.kernelOverheadGraph,
                /*zeroOk=*/true))
    return false;
  if (!r.number(*device, "cache_bytes", "device.cache_bytes", c.cacheBytes,
                /*zeroOk=*/true, /*optional=*/true) ||
      !r.number(*device, "cache_bandwidth", "device.cache_bandwidth",
                c.cacheBandwidth, /*zeroOk=*/true, /*optional=*/true))
    return false;
  if (const llvm::json::Object *rates = device->getObject("kernel_bandwidth"))
    for (const auto &[key, value] : *rates) {
      double rate;
      if (!r.number(*rates, key.str(), "device.kernel_bandwidth." + key.str(),
                    rate))
        return false;
      c.kernelBandwidth[key.str()] = rate;
    }
  if (!r.number(*device, "weight_stream_bandwidth",
                "device.weight_stream_bandwidth", c.weightStreamBandwidth,
                /*zeroOk=*/false, /*optional=*/true) ||
      !r.number(*device, "private_cache_bytes", "device.private_cache_bytes",
                c.privateCacheBytes, /*zeroOk=*/false, /*optional=*/true))
    return false;
  if (const llvm::json::Object *fractions =
          device->getObject("kernel_efficiency"))
    for (const auto &[key, value] : *fractions) {
      const std::string path = "device.kernel_efficiency." + key.str();
      double fraction;
      if (!r.number(*fractions, key.str(), path, fraction))
        return false;
      if (fraction > 1.0)
        return r.fail(path, "must be a fraction of the peak in (0, 1]");
      c.kernelEfficiency[key.str()] = fraction;
    }
  // Tensor cores want 64-wide tiles; AVX-512 kernels 12-16 rows.
  c.gemmFullDim = c.kind == "cpu" ? 12 : 64;
  if (!r.number(*device, "gemm_full_dim", "device.gemm_full_dim", c.gemmFullDim,
                /*zeroOk=*/false, /*optional=*/true))
    return false;
  if (const llvm::json::Value *eff = device->get("gemm_efficiency")) {
    const llvm::json::Array *points = eff->getAsArray();
    if (!points || points->empty())
      return r.fail("device.gemm_efficiency",
                    "must be a non-empty list of [flops, fraction] pairs");
    for (const llvm::json::Value &p : *points) {
      const llvm::json::Array *pair = p.getAsArray();
      std::optional<double> flops, fraction;
      if (pair && pair->size() == 2) {
        flops = (*pair)[0].getAsNumber();
        fraction = (*pair)[1].getAsNumber();
      }
      if (!flops || !fraction || !(*flops >= 0) || !(*fraction > 0) ||
          !(*fraction <= 1.0) || !std::isfinite(*flops))
        return r.fail("device.gemm_efficiency",
                      "must hold [flops >= 0, fraction in (0, 1]] pairs");
      c.gemmEfficiency.emplace_back(*flops, *fraction);
    }
    std::sort(c.gemmEfficiency.begin(), c.gemmEfficiency.end());
  }
  const llvm::json::Object *links = r.object(*root, "links", "links");
  if (!links || !r.link(*links, "intra_node", c.intraNode))
    return false;
  if (c.nodes > 1 || links->get("inter_node")) {
    if (!r.link(*links, "inter_node", c.interNode))
      return false;
  } else {
    c.interNode = c.intraNode;
  }
  if (const llvm::json::Object *intra = links->getObject("intra_node"))
    if (const llvm::json::Array *measured = intra->getArray("measured"))
      for (const llvm::json::Value &m : *measured) {
        const llvm::json::Object *o = m.getAsObject();
        const std::string path = "links.intra_node.measured";
        if (!o)
          return r.fail(path, "must hold objects");
        MeasuredLink fit;
        std::optional<llvm::StringRef> coll = o->getString("collective");
        if (!coll)
          return r.fail(path + ".collective", "is missing");
        fit.collective = coll->str();
        if (!r.count(*o, "ranks", path + ".ranks", fit.ranks) ||
            !r.number(*o, "bandwidth", path + ".bandwidth",
                      fit.link.bandwidth) ||
            !r.number(*o, "latency", path + ".latency", fit.link.latency,
                      /*zeroOk=*/true))
          return false;
        c.measured.push_back(fit);
      }
  if (!r.number(*root, "overlap", "overlap", c.overlap, /*zeroOk=*/true,
                /*optional=*/true))
    return false;
  if (c.overlap > 1.0)
    return r.fail("overlap", "is a fraction: it must be at most 1");
  cluster = std::move(c);
  return true;
}

bool weft::planner::loadCluster(const std::string &spec, int64_t devices,
                                Cluster &cluster, std::string &error) {
  if (devices < 0) {
    error = "--devices must be at least 1";
    return false;
  }
  if (const char *preset = presetText(spec)) {
    if (!parseCluster(preset, spec, cluster, error))
      return false;
    if (devices == 0)
      devices = cluster.devicesPerNode;
    if (cluster.coresPerNode > 0) {
      // Every rank on this machine.
      cluster.devicesPerNode = devices;
      cluster.nodes = 1;
      return true;
    }
    if (devices <= cluster.devicesPerNode) {
      cluster.devicesPerNode = devices;
      return true;
    }
    if (devices % cluster.devicesPerNode != 0) {
      error = "--devices " + std::to_string(devices) + " on " + spec +
              " must fill whole nodes of " +
              std::to_string(cluster.devicesPerNode) + " devices";
      return false;
    }
    cluster.nodes = devices / cluster.devicesPerNode;
    return true;
  }
  if (spec.size() < 5 || spec.substr(spec.size() - 5) != ".json") {
    error = "--cluster '" + spec + "' is neither a preset (";
    for (size_t i = 0; i < clusterPresets().size(); ++i)
      error += (i ? ", " : "") + clusterPresets()[i];
    error += ") nor a .json file";
    return false;
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(spec);
  if (!file) {
    error =
        "cannot read cluster file " + spec + ": " + file.getError().message();
    return false;
  }
  if (!parseCluster((*file)->getBuffer().str(), spec, cluster, error))
    return false;
  if (devices == 0)
    return true;
  if (devices > cluster.devices()) {
    error = "--devices " + std::to_string(devices) + " but " + spec +
            " describes " + std::to_string(cluster.devices()) + " devices (" +
            std::to_string(cluster.nodes) + " x " +
            std::to_string(cluster.devicesPerNode) + ")";
    return false;
  }
  if (devices < cluster.devicesPerNode) {
    cluster.devicesPerNode = devices;
    cluster.nodes = 1;
  } else {
    cluster.nodes =
        (devices + cluster.devicesPerNode - 1) / cluster.devicesPerNode;
  }
  return true;
}

double Cluster::rankShare(int64_t ranks) const {
  if (coresPerNode <= 0)
    return 1.0;
  int64_t onNode = std::max<int64_t>(1, std::min(ranks, devicesPerNode));
  if (onNode <= coresPerNode)
    return static_cast<double>(coresPerNode / onNode);
  return 1.0; // a running rank has a core; oversubscription() says how often
}

double Cluster::oversubscription(int64_t ranks) const {
  if (coresPerNode <= 0)
    return 1.0;
  int64_t onNode = std::max<int64_t>(1, std::min(ranks, devicesPerNode));
  return std::max(1.0, static_cast<double>(onNode) /
                           static_cast<double>(coresPerNode));
}

double Cluster::rankPeakFlops(const std::string &dtype, int64_t ranks) const {
  auto it = peakFlops.find(dtype);
  if (it == peakFlops.end())
    it = peakFlops.find("fp32");
  return it->second * rankShare(ranks);
}

double Cluster::rankMemoryBandwidth(int64_t ranks) const {
  if (coresPerNode <= 0)
    return memoryBandwidth;
  // A node's memory bandwidth is shared by the ranks running at once.
  int64_t onNode = std::max<int64_t>(1, std::min(ranks, devicesPerNode));
  return memoryBandwidth / static_cast<double>(std::min(onNode, coresPerNode));
}

double Cluster::rankStreamBandwidth(double bytes, const std::string &kernel,
                                    int64_t ranks) const {
  int64_t onNode = std::max<int64_t>(1, std::min(ranks, devicesPerNode));
  int64_t running =
      coresPerNode > 0 ? std::min(onNode, coresPerNode) : int64_t(1);
  const bool cached =
      cacheBandwidth > 0 && bytes <= cacheBytes / static_cast<double>(onNode);
  const double roof =
      cached ? cacheBandwidth * rankShare(ranks) : rankMemoryBandwidth(ranks);
  // A kernel's measured rate (weft calibrate rates them on data a core's
  // own cache holds) is its own ceiling; data beyond that cache also meets
  // the shared cache's bandwidth, or the memory's.
  auto it = kernelBandwidth.find(kernel);
  if (it != kernelBandwidth.end()) {
    double rate = it->second / static_cast<double>(running);
    const bool privatelyCached =
        privateCacheBytes > 0 ? bytes <= privateCacheBytes : cached;
    return privatelyCached ? rate : std::min(rate, roof);
  }
  return roof;
}

double Cluster::rankMemoryBytes(int64_t ranks) const {
  if (coresPerNode <= 0)
    return memoryBytes;
  int64_t onNode = std::max<int64_t>(1, std::min(ranks, devicesPerNode));
  return memoryBytes / static_cast<double>(onNode);
}

double Cluster::gemmEfficiencyAt(double flops) const {
  return efficiencyAt(gemmEfficiency, flops);
}

Link Cluster::linkFor(int64_t size, int64_t stride,
                      const std::string &collective, int64_t ranks) const {
  const bool crossesNodes =
      nodes > 1 && size * stride > std::min(devicesPerNode, ranks);
  if (crossesNodes)
    return interNode;
  // The measured fit of this collective for the nearest group size.
  const MeasuredLink *best = nullptr;
  for (const MeasuredLink &m : measured)
    if (m.collective == collective &&
        (!best || std::llabs(m.ranks - size) < std::llabs(best->ranks - size)))
      best = &m;
  return best ? best->link : intraNode;
}

std::string weft::planner::describeCluster(const Cluster &c) {
  std::string text =
      c.name + ": " + std::to_string(c.nodes) + " node" +
      (c.nodes == 1 ? "" : "s") + " x " + std::to_string(c.devicesPerNode) +
      " " + c.kind +
      (c.coresPerNode > 0
           ? " ranks sharing " + std::to_string(c.coresPerNode) + " cores"
           : " devices");
  double memory = c.rankMemoryBytes(c.devices());
  text += memory >= 1e9   ? llvm::formatv(", {0:f1} GB", memory / 1e9).str()
          : memory >= 1e6 ? llvm::formatv(", {0:f1} MB", memory / 1e6).str()
                          : llvm::formatv(", {0:f1} KB", memory / 1e3).str();
  text += c.coresPerNode > 0 ? " per rank" : " per device";
  return text;
}
