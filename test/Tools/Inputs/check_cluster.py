"""Checks a cluster file written by `weft calibrate` (format weft-cluster/1).

usage: check_cluster.py CLUSTER.json RANKS

Every field of the schema is present, every figure is positive and in SI
units (latencies below 1 s, bandwidths above 1 MB/s), GEMM efficiencies are
in (0, 1] and sorted by FLOPs, and the collectives of every group size
2..RANKS were fitted. Prints "cluster ok" on success; exits 1 naming the
first problem otherwise.
"""
import json
import math
import sys


def fail(message):
    print("check_cluster: " + message, file=sys.stderr)
    sys.exit(1)


def positive(value, what, upper=None, lower=0.0):
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        fail(f"{what} is not a number: {value!r}")
    if not math.isfinite(value) or value <= lower:
        fail(f"{what} = {value} must be > {lower}")
    if upper is not None and value >= upper:
        fail(f"{what} = {value} must be < {upper}")


def check_link(link, what):
    positive(link.get("bandwidth"), what + ".bandwidth", lower=1e6)
    positive(link.get("latency"), what + ".latency", upper=1.0)


def main():
    path, ranks = sys.argv[1], int(sys.argv[2])
    with open(path) as f:
        c = json.load(f)
    if c.get("format") != "weft-cluster/1":
        fail(f"format is {c.get('format')!r}")
    if not str(c.get("name", "")).startswith("calibrated on "):
        fail(f"name is {c.get('name')!r}")
    if c.get("nodes") != 1 or c.get("devices_per_node") != ranks:
        fail(f"nodes/devices_per_node are {c.get('nodes')}/{c.get('devices_per_node')}")
    if not isinstance(c.get("cores_per_node"), int) or c["cores_per_node"] < 1:
        fail(f"cores_per_node is {c.get('cores_per_node')!r}")

    d = c["device"]
    if d.get("kind") != "cpu":
        fail(f"device.kind is {d.get('kind')!r}")
    for dtype, rate in d["peak_flops"].items():
        if dtype not in ("fp32", "bf16"):
            fail(f"unexpected dtype {dtype} in peak_flops")
        positive(rate, "device.peak_flops." + dtype, lower=1e6)
    if "fp32" not in d["peak_flops"]:
        fail("device.peak_flops.fp32 is missing")
    positive(d["memory_bytes"], "device.memory_bytes", lower=1e6)
    positive(d["memory_bandwidth"], "device.memory_bandwidth", lower=1e6)
    positive(d["kernel_overhead_s"], "device.kernel_overhead_s", upper=1.0)
    # The smallest dimension of a full-rate product: fitted to the skinny
    # products on the candidates' grid (1 .. 1024), each measured.
    positive(d.get("gemm_full_dim"), "device.gemm_full_dim", upper=1024.001,
             lower=0.999)
    skinny = c["calibration"].get("skinny_gemm", [])
    if sorted((s["contraction"], s["small"]) for s in skinny) != [
            (k, n) for k in (False, True) for n in (2, 4, 8, 16, 32, 64, 128, 256)]:
        fail(f"calibration.skinny_gemm has {len(skinny)} points, not 8 small "
             "dimensions of both shapes")
    for s in skinny:
        positive(s["fp32_flops_per_s"], "skinny_gemm rate", lower=1e6)
        positive(s["efficiency_vs_square"], "skinny_gemm efficiency")
    for key in ("cache_bytes", "cache_bandwidth"):
        if key in d:
            positive(d[key], "device." + key, lower=1e3)
    rated = d.get("kernel_bandwidth", {})
    expected = ["adamw", "binary", "cast", "layer_norm", "layer_norm_grad",
                "reduce", "softmax", "softmax_grad", "softmax_xent",
                "softmax_xent_grad", "transpose", "unary"]
    if sorted(rated) != expected:
        fail(f"device.kernel_bandwidth rates {sorted(rated)}, not {expected}")
    for kernel, rate in rated.items():
        positive(rate, "device.kernel_bandwidth." + kernel, lower=1e6)
    # What a small product pays to fetch a weight (omitted when nothing
    # was measurable) and the core's own cache.
    if "weight_stream_bandwidth" in d:
        positive(d["weight_stream_bandwidth"], "device.weight_stream_bandwidth",
                 lower=1e6)
    if "private_cache_bytes" in d:
        positive(d["private_cache_bytes"], "device.private_cache_bytes",
                 lower=1e3)
    # Fused attention's measured share of the fp32 peak, both directions.
    attention = d.get("kernel_efficiency", {})
    if sorted(attention) != ["attention", "attention_grad"]:
        fail(f"device.kernel_efficiency has {sorted(attention)}, not "
             "attention and attention_grad")
    for kernel, fraction in attention.items():
        positive(fraction, "device.kernel_efficiency." + kernel, upper=1.000001)
    eff = d["gemm_efficiency"]
    if len(eff) < 3:
        fail("device.gemm_efficiency has fewer than 3 points")
    for flops, fraction in eff:
        positive(flops, "gemm_efficiency flops")
        if not 0 < fraction <= 1:
            fail(f"gemm_efficiency fraction {fraction} is not in (0, 1]")
    if [p[0] for p in eff] != sorted(p[0] for p in eff):
        fail("gemm_efficiency is not sorted by flops")
    if max(p[1] for p in eff) != 1:
        fail("no gemm_efficiency point at the peak (fraction 1)")

    links = c["links"]
    check_link(links["intra_node"], "links.intra_node")
    check_link(links["inter_node"], "links.inter_node")
    if links["inter_node"].get("assumed") is not True:
        fail("links.inter_node of one node is not marked assumed")
    measured = links["intra_node"].get("measured", [])
    seen = set()
    for m in measured:
        check_link(m, f"measured {m.get('collective')} over {m.get('ranks')}")
        seen.add((m["collective"], m["ranks"]))
    wanted = {(coll, p) for p in range(2, ranks + 1)
              for coll in ("all_reduce", "all_gather", "reduce_scatter")}
    if ranks >= 2:
        wanted.add(("send_recv", 2))
    if wanted - seen:
        fail(f"no fit for {sorted(wanted - seen)}")
    if ranks >= 2:
        headline = [m for m in measured
                    if m["collective"] == "all_reduce" and m["ranks"] == ranks][0]
        if (headline["bandwidth"], headline["latency"]) != (
                links["intra_node"]["bandwidth"], links["intra_node"]["latency"]):
            fail("links.intra_node is not the all_reduce fit over every rank")

    overlap = c["overlap"]
    if not isinstance(overlap, (int, float)) or not 0 <= overlap <= 1:
        fail(f"overlap {overlap!r} is not in [0, 1]")
    cal = c["calibration"]
    if cal.get("ranks") != ranks or cal.get("threads_per_rank") != 1:
        fail(f"calibration is {cal}")
    if not isinstance(cal.get("quick"), bool) or len(str(cal.get("date"))) < 10:
        fail(f"calibration.quick/date are {cal.get('quick')!r}/{cal.get('date')!r}")
    print("cluster ok")


main()
