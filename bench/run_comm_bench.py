#!/usr/bin/python3
"""weft's collective kernels against plain MPI: bus bandwidth per size.

    /usr/bin/python3 bench/run_comm_bench.py [--ranks 2 4] [--build build]
        [--json bench/results/comm-cpu.json]

Runs build/bin/weft_comm_bench (bench/comm/comm_bench.cpp) under
`mpirun --oversubscribe -n N` for each N: weft_k_all_reduce, all_gather and
reduce_scatter over a 1-D mesh against MPI_Allreduce, MPI_Allgather and
MPI_Reduce_scatter_block, and against their non-blocking forms polled with
MPI_Test (what the kernels build on, for the watchdog), on the same f32
buffers, 4 KiB to 64 MiB, median of the slowest rank's time per call,
alternating the three. busbw as nccl-tests defines it. Prints a table with
the ratios weft/MPI of busbw (1.0 = equal, above = weft faster) and writes
the JSON file. Not part of the tests.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--json", default=os.path.join(ROOT, "bench", "results",
                                                   "comm-cpu.json"))
    args = ap.parse_args()
    exe = os.path.join(args.build, "bin", "weft_comm_bench")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    rows = []
    for n in args.ranks:
        p = subprocess.run(["mpirun", "--oversubscribe", "-n", str(n), exe],
                           capture_output=True, text=True, env=env)
        if p.returncode != 0:
            sys.exit(f"{exe} on {n} ranks failed:\n{p.stdout}{p.stderr}")
        rows += [json.loads(line) for line in p.stdout.splitlines()
                 if line.startswith("{")]
    print(f"{'op':15s} {'ranks':>5s} {'bytes':>10s} {'weft GB/s':>10s} "
          f"{'MPI GB/s':>9s} {'ratio':>6s} {'MPI-I GB/s':>10s} {'ratio':>6s}")
    for r in rows:
        r["ratio"] = r["weft_busbw_gbps"] / r["mpi_busbw_gbps"]
        r["ratio_nonblocking"] = (r["weft_busbw_gbps"] /
                                  r["mpi_nonblocking_busbw_gbps"])
        print(f"{r['op']:15s} {r['ranks']:5d} {int(r['bytes']):10d} "
              f"{r['weft_busbw_gbps']:10.3f} {r['mpi_busbw_gbps']:9.3f} "
              f"{r['ratio']:6.2f} {r['mpi_nonblocking_busbw_gbps']:10.3f} "
              f"{r['ratio_nonblocking']:6.2f}")

    def median(key, small):
        v = sorted(r[key] for r in rows
                   if (r["bytes"] < (1 << 20)) == small)
        return v[len(v) // 2] if v else None
    summary = {"median_ratio_1MiB_and_up": median("ratio", False),
               "median_ratio_below_1MiB": median("ratio", True),
               "median_ratio_nonblocking_1MiB_and_up":
                   median("ratio_nonblocking", False),
               "median_ratio_nonblocking_below_1MiB":
                   median("ratio_nonblocking", True)}
    print("median busbw ratio weft/MPI (blocking calls): "
          f"{summary['median_ratio_1MiB_and_up']:.3f} for sizes >= 1 MiB, "
          f"{summary['median_ratio_below_1MiB']:.3f} below")
    print("median busbw ratio weft/MPI (non-blocking calls, MPI_Test): "
          f"{summary['median_ratio_nonblocking_1MiB_and_up']:.3f} for sizes "
          f">= 1 MiB, {summary['median_ratio_nonblocking_below_1MiB']:.3f} "
          "below")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"machine": os.uname().nodename, "cpus": os.cpu_count(),
                   "results": rows, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    main()
