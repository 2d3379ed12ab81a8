"""A failing rank never hangs a multi-rank run.

Compiles the MLP for dp=2 and checks, with real MPI ranks:
  - kill -9 of rank 1 mid-run: the run exits non-zero within 30 s and the
    surviving rank names the collective it was in;
  - rank 1 stopped (SIGSTOP) mid-run: rank 0's watchdog gives up after
    WEFT_COMM_TIMEOUT=3 s naming the op, its mesh axes and group, and every
    rank exits non-zero;
  - two different executables in one job (mpirun MPMD): refused at start-up
    with exit code 2, before any step;
  - a 2-rank bundle started on 3 ranks: refused with exit code 2;
  - `weft train --max-restarts 1` with rank 1 killed (kill -9) once a
    checkpoint exists: weft restarts the job from that checkpoint, and it
    ends where an uninterrupted run ends, bit for bit.

usage: /usr/bin/python3 check_failures.py WORKDIR
"""
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_plans  # noqa: E402

failures = []


def expect(ok, what):
    print(("ok: " if ok else "FAILED: ") + what)
    if not ok:
        failures.append(what)


def rank_pids(exe, rank):
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].decode(errors="replace") == exe and \
                f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            pids.append(int(pid))
    return pids


def interrupt(bundle, data_args, sig, env):
    """Starts a long run, hits rank 1 with `sig` after 2 s, waits."""
    exe = os.path.join(bundle, "model")
    proc = subprocess.Popen(
        ["weft", "train", bundle, "-n", "2", *data_args, "--steps",
         "100000000"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env=env)
    time.sleep(2)
    pids = rank_pids(exe, 1)
    for pid in pids:
        os.kill(pid, sig)
    start = time.time()
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        return None, out, time.time() - start, pids
    return proc.returncode, out, time.time() - start, pids


def main():
    work = sys.argv[1]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    onnx_path, data_args = check_plans.export("mlp", work)
    bundle = os.path.join(work, "dp2")
    other = os.path.join(work, "dp2-other")
    check_plans.ct.run(["weftc", "compile", onnx_path, "-o", bundle,
                        "--train", "--dp", "2"])
    check_plans.ct.run(["weftc", "compile", onnx_path, "-o", other,
                        "--train", "--dp", "2", "--lr", "0.5"])
    env = dict(os.environ, WEFT_COMM_TIMEOUT="3")

    rc, out, secs, pids = interrupt(bundle, data_args, signal.SIGKILL, env)
    expect(bool(pids), "found rank 1's process to kill")
    expect(rc not in (None, 0), f"kill -9 of rank 1: exit code {rc} after "
           f"{secs:.1f} s")
    expect("interrupted: another rank failed" in out and
           "all_reduce over mesh axes [0] (ranks 0,1)" in out,
           "the surviving rank names its collective")

    rc, out, secs, pids = interrupt(bundle, data_args, signal.SIGSTOP, env)
    expect(rc not in (None, 0), f"rank 1 stopped: exit code {rc} after "
           f"{secs:.1f} s")
    expect("did not finish within 3 s" in out and "rank 0:" in out,
           "rank 0's watchdog names the stuck collective")
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass

    mpmd = ["mpirun", "--oversubscribe", "-n", "1",
            os.path.join(bundle, "model"), "--bundle", bundle, "--train",
            *data_args, "--steps", "3", ":", "-n", "1",
            os.path.join(other, "model"), "--bundle", other, "--train",
            *data_args, "--steps", "3"]
    p = subprocess.run(mpmd, capture_output=True, text=True, timeout=60)
    expect(p.returncode == 2 and "runs a different executable than rank 0"
           in p.stdout + p.stderr, "different executables refused at start-up")

    p = subprocess.run(["mpirun", "--oversubscribe", "-n", "3",
                        os.path.join(bundle, "model"), "--bundle", bundle,
                        "--train", *data_args, "--steps", "3"],
                       capture_output=True, text=True, timeout=60)
    expect(p.returncode == 2 and "compiled for 2 ranks but 3 were started"
           in p.stdout + p.stderr, "wrong number of ranks refused")
    restarted = os.path.join(work, "ck-restarted")
    proc = subprocess.Popen(
        ["weft", "train", bundle, "-n", "2", *data_args, "--steps", "200000",
         "--checkpoint-dir", restarted, "--save-every", "10000",
         "--max-restarts", "1"], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, env=env)
    deadline = time.time() + 60
    while not os.path.exists(os.path.join(restarted, "latest")) and \
            proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    pids = rank_pids(os.path.join(bundle, "model"), 1)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    expect(bool(pids) and proc.returncode == 0,
           f"--max-restarts 1: rank 1 killed once a checkpoint existed, the "
           f"job exits {proc.returncode}")
    expect("restart 1 of 1 from the checkpoint " + restarted + "/step-" in out,
           "weft restarts the job from the latest checkpoint")
    reference = os.path.join(work, "ck-uninterrupted")
    check_plans.ct.run(["weft", "train", bundle, "-n", "2", *data_args,
                        "--steps", "200000", "--checkpoint-dir", reference])
    same = all(
        open(os.path.join(restarted, "step-00200000", name), "rb").read() ==
        open(os.path.join(reference, "step-00200000", name), "rb").read()
        for name in ("state.rank0.safetensors", "state.rank1.safetensors"))
    expect(same, "the restarted run's final state equals an uninterrupted "
           "run's, bit for bit")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
