//===- Cluster.h - The machines a plan runs on ----------------*- C++ -*-===//
//
// A cluster as the cost model sees it (DESIGN.md, "Cost model"): nodes of
// identical devices, each device's peak FLOP/s per dtype, memory and memory
// bandwidth, and per link level (inside a node, between nodes) a bandwidth
// and a latency. It comes from a preset (h100-sxm, a100-sxm, cpu-local) or a
// JSON file in the format `weft calibrate` writes ("weft-cluster/1"):
//
//   {"format": "weft-cluster/1", "name": "...", "nodes": 1,
//    "devices_per_node": 8,
//    "cores_per_node": 2,            (optional: CPU ranks share the cores)
//    "device": {"kind": "gpu"|"cpu",
//               "peak_flops": {"fp32": F, "tf32": F, "bf16": F},
//               "memory_bytes": B, "memory_bandwidth": B/s,
//               "gemm_efficiency": [[flops, fraction], ...],
//               "gemm_full_dim": d,  (smaller GEMM dims lose efficiency)
//               "cache_bytes": B, "cache_bandwidth": B/s,   (optional)
//               "kernel_bandwidth": {"adamw": B/s, ...},     (optional)
//               "kernel_efficiency": {"attention": f, ...},  (optional)
//               "weight_stream_bandwidth": B/s,              (optional)
//               "private_cache_bytes": B,                    (optional)
//               "kernel_overhead_s": s,
//               "kernel_overhead_graph_s": s},               (optional)
//
// Memory traffic is counted as operands + results, plus the results again
// on CPUs (a write first reads the line). Bandwidths are in that accounting.
//    "links": {"intra_node": {"bandwidth": B/s, "latency": s,
//                             "measured": [{"collective": "all_reduce",
//                                           "ranks": p, "bandwidth": B/s,
//                                           "latency": s}, ...]},
//              "inter_node": {"bandwidth": B/s, "latency": s}},
//    "overlap": x}
//
// Units are SI: bytes, seconds, FLOP/s, bytes/s. With "cores_per_node" the
// peak FLOP/s are one core's and the ranks placed on a node share its
// cores (RankStart gives each cores / ranks threads), and memory bytes and
// bandwidth are the node's, shared by its ranks: that is how CPU ranks on
// one machine are described.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_PLANNER_CLUSTER_H
#define WEFT_TOOLS_WEFTC_PLANNER_CLUSTER_H

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace weft::planner {

/// One level of the network: what a ring step over it costs.
struct Link {
  double bandwidth = 0; // bytes/s per device, one direction
  double latency = 0;   // seconds per message
};

/// An alpha-beta fit measured for one collective and group size.
struct MeasuredLink {
  std::string collective;
  int64_t ranks = 0;
  Link link;
};

struct Cluster {
  std::string name;
  int64_t nodes = 1;
  int64_t devicesPerNode = 1;
  /// 0 for accelerators; else the cores the ranks of a node share.
  int64_t coresPerNode = 0;
  std::string kind = "gpu";
  std::map<std::string, double> peakFlops; // by dtype: fp32, tf32, bf16
  double memoryBytes = 0;
  double memoryBandwidth = 0;
  /// (FLOPs of one product, fraction of peak), sorted by FLOPs.
  std::vector<std::pair<double, double>> gemmEfficiency;
  double kernelOverhead = 0;
  /// Per kernel of a step replayed as a CUDA graph (one-rank GPU plans:
  /// the CUDA backend records the step); -1: kernelOverhead.
  double kernelOverheadGraph = -1;
  /// What a kernel launch costs a plan of `ranks` ranks.
  double launchOverhead(int64_t ranks) const {
    return ranks == 1 && kernelOverheadGraph >= 0 ? kernelOverheadGraph
                                                  : kernelOverhead;
  }
  /// A GEMM dimension below this runs at a falling share of the rate.
  double gemmFullDim = 64;
  /// A cache level: the node's bytes (shared by its ranks) and one running
  /// rank's bandwidth; 0 when not described. Operands and results that fit
  /// a rank's share stream at this rate instead of memory's.
  double cacheBytes = 0, cacheBandwidth = 0;
  /// Measured node bandwidth (bytes/s, same accounting as the roofline) of
  /// kernels that reach less than memory_bandwidth, by runtime kernel name.
  std::map<std::string, double> kernelBandwidth;
  /// Measured fraction of the product peak (in the op's dtype) of
  /// product-like kernels that the GEMM curve does not describe (fused
  /// attention: its FLOPs go through softmax and tiles of the head size),
  /// by runtime kernel name; it replaces the GEMM efficiency for them.
  std::map<std::string, double> kernelEfficiency;
  /// What a product pays on top of its compute for each byte of weight (or
  /// weight gradient) it fetches from beyond a core's own cache, as bytes
  /// per second; 0: nothing (accelerators, uncalibrated CPUs). It applies
  /// when a rank's parameters, gradients and optimizer state outgrow
  /// privateCacheBytes (0: always).
  double weightStreamBandwidth = 0, privateCacheBytes = 0;
  Link intraNode, interNode;
  std::vector<MeasuredLink> measured;
  /// Fraction of an asynchronous collective hidden behind concurrent work.
  double overlap = 1.0;

  int64_t devices() const { return nodes * devicesPerNode; }

  /// How much of a device's (or core's) figures one of `ranks` ranks gets
  /// while it runs: 1 on accelerators; on shared cores, the cores it may
  /// use (at least one: more ranks than cores take turns instead).
  double rankShare(int64_t ranks) const;
  /// More ranks than cores on a node: how many ranks take turns on each
  /// core (1 otherwise). The step is then at least the node's total work
  /// over its cores.
  double oversubscription(int64_t ranks) const;
  /// Peak FLOP/s of one rank for products in `dtype` (fp32 or bf16).
  double rankPeakFlops(const std::string &dtype, int64_t ranks) const;
  double rankMemoryBandwidth(int64_t ranks) const;
  /// The bandwidth an op of `bytes` traffic through `kernel` sees.
  double rankStreamBandwidth(double bytes, const std::string &kernel,
                             int64_t ranks) const;
  double rankMemoryBytes(int64_t ranks) const;
  /// Fraction of peak a product of `flops` reaches (log-linear between
  /// the measured points, flat beyond them).
  double gemmEfficiencyAt(double flops) const;
  /// The link a ring over `size` ranks `stride` apart crosses: inside a
  /// node when the group fits in one, else between nodes; a measured fit
  /// for the collective and group size replaces the headline figures.
  Link linkFor(int64_t size, int64_t stride, const std::string &collective,
               int64_t ranks) const;
};

/// The presets' names, for messages.
const std::vector<std::string> &clusterPresets();

/// Loads `spec` (a preset name or a JSON file) for a plan of `devices`
/// devices (0: the cluster's own size). Presets grow by whole nodes
/// (`--devices 16` on h100-sxm is 2 nodes of 8); a file must have at least
/// `devices` devices, and only the nodes they fill are used. On failure
/// returns false with the reason (missing fields, impossible values).
bool loadCluster(const std::string &spec, int64_t devices, Cluster &cluster,
                 std::string &error);

/// Parses a cluster from JSON text; `origin` names it in errors.
bool parseCluster(const std::string &text, const std::string &origin,
                  Cluster &cluster, std::string &error);

/// One line describing the cluster, for plan listings.
std::string describeCluster(const Cluster &cluster);

} // namespace weft::planner

#endif // WEFT_TOOLS_WEFTC_PLANNER_CLUSTER_H
