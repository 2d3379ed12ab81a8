"""Ranks started the torchrun way (no mpirun) meet over TCP and train.

Compiles MODEL for PLAN, trains it on one device and on the plan's ranks
started as torchrun starts them (test/unit/comm/torchrun_launch.py: RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, each process running the
bundle's executable with --bundle and --train), and requires per-step
losses equal within 1e-5 relative and the final checkpoints equal within
1e-5 relative to each tensor's largest magnitude. Then checks that:
  - a rank killed mid-run makes the survivor exit non-zero at once, naming
    the collective and the rank that left;
  - a launch without MASTER_PORT is refused with exit code 2, naming it;
  - WORLD_SIZE other than the bundle's is refused with exit code 2.

usage: /usr/bin/python3 check_torchrun.py MODEL PLAN WORKDIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_plans as cp  # noqa: E402

LAUNCH = os.path.join(HERE, "..", "unit", "comm", "torchrun_launch.py")
failures = []


def expect(ok, what, detail=""):
    print(("ok: " if ok else "FAILED: ") + what +
          ("" if ok or not detail else "\n" + detail))
    if not ok:
        failures.append(what)


def main():
    name, plan, work = sys.argv[1], sys.argv[2], sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    onnx_path, data_args = cp.export(name, work)
    single = os.path.join(work, "single")
    os.makedirs(single)
    cp.ct.run(["weftc", "compile", onnx_path, "-o",
               os.path.join(single, "b"), "--train"])
    ref, ref_ckpt = cp.train(os.path.join(single, "b"), data_args, single, 1)
    ref_state = cp.final_state(ref_ckpt, os.path.join(single, "b"), 1)

    flags, ranks = [], 1
    for kv in plan.split(","):
        k, v = kv.split("=")
        flags += [f"--{k}", v]
        ranks *= int(v) if k in ("dp", "tp") else 1
    bundle = os.path.join(work, "b")
    cp.ct.run(["weftc", "compile", onnx_path, "-o", bundle, "--train",
               *flags])
    exe = os.path.join(bundle, "model")
    metrics = os.path.join(work, "metrics.jsonl")
    ckpt = os.path.join(work, "ckpt")
    rank_cmd = [exe, "--bundle", bundle, "--train", *data_args, "--steps",
                str(cp.STEPS), "--metrics", metrics, "--checkpoint-dir", ckpt]
    proc = subprocess.run([sys.executable, LAUNCH, str(ranks), "--", *rank_cmd],
                          capture_output=True, text=True, timeout=300)
    expect(proc.returncode == 0, f"{name} {plan} on {ranks} torchrun-style "
           "ranks trains", proc.stdout + proc.stderr)
    if proc.returncode == 0:
        got = [json.loads(line)["loss"] for line in open(metrics)]
        err = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(got, ref))
        expect(len(got) == cp.STEPS and err <= cp.TOLERANCE,
               f"losses equal the single-device run (max rel. {err:.1e})")
        state = cp.final_state(ckpt, bundle, ranks)
        worst, noise_only = cp.compare_state(ref_state, state)
        expect(worst <= cp.TOLERANCE,
               f"final state equals the single-device run ({worst:.1e}"
               + (f"; {noise_only} AdamW elements with noise-only gradients "
                  "not compared" if noise_only else "") + ")")

    # A rank killed mid-run: the survivors stop at once and say why.
    env = dict(os.environ, WEFT_COMM_TIMEOUT="30")
    long_cmd = [exe, "--bundle", bundle, "--train", *data_args, "--steps",
                "100000000"]
    port = None
    procs = []
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    for r in range(ranks):
        e = dict(env, RANK=str(r), WORLD_SIZE=str(ranks), LOCAL_RANK=str(r),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen(long_cmd, env=e, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    time.sleep(2)
    procs[1].send_signal(signal.SIGKILL)
    start = time.time()
    outs = []
    for p in procs[:1] + procs[2:]:
        try:
            out, _ = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            out += "\n(still running after 20 s)"
        outs.append((p.returncode, out))
    procs[1].wait()
    took = time.time() - start
    # Rank 1's direct partners name it; the others name whichever rank
    # left first from their view (a partner that has stopped already).
    for rc, out in outs:
        expect(rc not in (0, None) and " over " in out and
               "closed its connection" in out,
               f"after kill -9 of rank 1 a survivor exits {rc} within "
               f"{took:.1f} s naming the operation, its group and a rank "
               "that left", out[-2000:])
    expect(any("rank 1 closed its connection" in out for _, out in outs),
           "a survivor names rank 1")
    # The line that names rank 1 (another survivor may name a rank that
    # stopped before it).
    line = next((l for rc, o in outs for l in o.splitlines()
                 if "rank 1 closed its connection" in l), "")
    print("  survivor says: " + line.strip())

    # Bad launches.
    e = dict(os.environ, RANK="0", WORLD_SIZE=str(ranks), LOCAL_RANK="0",
             MASTER_ADDR="127.0.0.1")
    e.pop("MASTER_PORT", None)
    p = subprocess.run(long_cmd[:4] + ["--steps", "1", *data_args], env=e,
                       capture_output=True, text=True, timeout=60)
    expect(p.returncode == 2 and "MASTER_PORT is not set" in p.stderr,
           "a launch without MASTER_PORT: exit 2 naming it",
           p.stdout + p.stderr)
    e = dict(e, MASTER_PORT="29999", WORLD_SIZE=str(ranks + 1))
    p = subprocess.run(long_cmd[:4] + ["--steps", "1", *data_args], env=e,
                       capture_output=True, text=True, timeout=60)
    expect(p.returncode == 2 and f"compiled for {ranks} ranks" in p.stderr,
           "WORLD_SIZE other than the bundle's: exit 2", p.stdout + p.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
