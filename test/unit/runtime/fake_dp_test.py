#!/usr/bin/env python3
"""Multi-rank runs of hand-written models on real MPI ranks.

Training: `weft-fake-dp-train-model` (FakeDpTrainModel.cpp) is a 2-rank
data-parallel SGD step of linear regression whose weft_model_run calls the
all_reduce_start / comm_wait kernels itself. Checks, against a numpy float32
replay of the same arithmetic:
  - the data slicing (each rank takes its half of rows [s*8, (s+1)*8) mod
    N of the whole files) through bitwise losses and per-rank state;
  - rank 0 alone writes the metrics and the summary line (world_size,
    peak_memory_bytes);
  - per-rank checkpoints (one step directory, state.rank<R>.safetensors,
    checkpoint.json listing both), resume bitwise identical to an
    uninterrupted run, kill -9 of a rank during a save (the previous
    checkpoint stays and resumes);
  - refusals with exit code 2 on every rank, reported once: another number
    of ranks (launcher, mpirun, a plain start, a checkpoint of another
    world size), torchrun-style variables without MASTER_PORT or without
    the other ranks, different executables or parameter
    files across the ranks, bad data;
  - a rank that exits, is killed or hangs in the middle of a step: every
    rank exits non-zero within WEFT_COMM_TIMEOUT=3 s, naming the collective;
  - a collective left without its comm_wait; `weft export` of a multi-rank
    checkpoint (rank 0's file) and its refusal of another bundle's.
Inference: `weft-fake-dp-model` (FakeDpModel.cpp) on a 2x2 mesh: every rank
reads the whole input and keeps its block, rank 0 writes the outputs (a
split one put together).

usage: fake_dp_test.py --train-model PATH --other-train-model PATH
                       --model PATH --weft PATH
"""

import argparse
import glob
import hashlib
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

FAILURES = []
N_ROWS, BATCH, LR = 20, 8, np.float32(0.1)
MPIRUN = ["mpirun", "--oversubscribe"]


def check(cond, what, detail=""):
    if cond:
        print("ok    " + what)
    else:
        print("FAIL  " + what + ("\n      " + detail if detail else ""))
        FAILURES.append(what)


# --- safetensors -------------------------------------------------------------

ST = {"F32": np.float32, "I64": np.int64}


def write_safetensors(path, tensors, metadata=None):
    names = {np.dtype(v): k for k, v in ST.items()}
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, arr in tensors:
        data = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": names[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + b:8 + n + e],
                                  ST[info["dtype"]]).reshape(info["shape"])
    return out, meta


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# --- the reference -------------------------------------------------------------


def reference(x, y, w0, b0, steps):
    """FakeDpTrainModel's arithmetic in the same order, in float32: losses,
    w, b and each rank's local_sq."""
    f32 = np.float32
    w = [f32(v) for v in w0.reshape(-1)]
    b = f32(b0[0])
    local_sq = [f32(0), f32(0)]
    losses = []
    for s in range(steps):
        sums = []
        for r in range(2):
            rows = [(s * BATCH + 4 * r + i) % N_ROWS for i in range(4)]
            err = []
            for i in rows:
                p = b
                for k in range(4):
                    p = f32(p + f32(x[i, k] * w[k]))
                err.append(f32(p - y[i, 0]))
            sq = f32(0)
            for e in err:
                sq = f32(sq + f32(e * e))
            gw = []
            for k in range(4):
                g = f32(0)
                for j, i in enumerate(rows):
                    g = f32(g + f32(x[i, k] * err[j]))
                gw.append(g)
            gb = f32(0)
            for e in err:
                gb = f32(gb + e)
            sums.append([sq] + gw + [gb])
            local_sq[r] = f32(local_sq[r] + sq)
        total = [f32(sums[0][j] + sums[1][j]) for j in range(6)]
        losses.append(f32(total[0] / f32(8)))
        w = [f32(w[k] - f32(LR * f32(total[1 + k] * f32(0.25))))
             for k in range(4)]
        b = f32(b - f32(LR * f32(total[5] * f32(0.25))))
    return (losses, np.array(w, np.float32).reshape(4, 1),
            np.array([b], np.float32), local_sq)


# --- processes -----------------------------------------------------------------


def clean_env(extra=None):
    env = dict(os.environ)
    for var in ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "RANK",
                "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                "SLURM_PROCID", "SLURM_NTASKS", "PMI_RANK", "PMIX_RANK",
                "WEFT_TEST_SLOW_SAVE_MS", "FAKE_DP_FAIL", "FAKE_DP_FAIL_RANK",
                "FAKE_DP_FAIL_STEP", "FAKE_DP_SKIP_WAIT"):
        env.pop(var, None)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1",
                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "WEFT_COMM_TIMEOUT": "30"})
    if extra:
        env.update(extra)
    return env


def run(cmd, env=None, timeout=120):
    start = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=clean_env(env), timeout=timeout)
    return (p.returncode, p.stdout.decode(), p.stderr.decode(),
            time.time() - start)


def errors_in(text):
    return [line for line in text.splitlines()
            if line.startswith("weft: error:")]


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def expect_refusal(what, cmd, needle, env=None, untouched=()):
    before = {p: os.path.exists(p) for p in untouched}
    rc, out, err, _ = run(cmd, env)
    check(rc == 2, what + ": exit code 2", "got %d; stderr: %s" % (rc, err))
    lines = errors_in(err)
    check(len(lines) == 1 and needle in lines[0],
          what + ": one 'weft: error:' line mentioning %r" % needle,
          "stderr: " + err.strip())
    for p in untouched:
        check(os.path.exists(p) == before[p], what + ": %s untouched" % p)


def rank_pids(exe, rank):
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().split(b"\0")
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].decode(errors="replace") == exe and \
                ("OMPI_COMM_WORLD_RANK=%d" % rank).encode() in env:
            pids.append(int(pid))
    return pids


def wait_for(cond, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.01)
    return False


# --- the checks ------------------------------------------------------------------


def make_train_bundle(path, exe, w0, b0):
    os.makedirs(path)
    shutil.copy2(exe, os.path.join(path, "model"))
    for r in range(2):
        write_safetensors(os.path.join(path, "params.rank%d.safetensors" % r),
                          [("w", w0), ("b", b0),
                           ("sgd.step_count", np.zeros((), np.float32)),
                           ("local_sq", np.zeros((1,), np.float32)),
                           ("step", np.zeros((), np.int64))],
                          {"format": "weft", "rank": str(r)})
    with open(os.path.join(path, "manifest.json"), "w") as f:
        json.dump({"format_version": 1, "world_size": 2, "executable": "model",
                   "mode": "train", "source_model_file": "source.onnx"}, f)


def write_source_onnx(path, w0, b0):
    """pred = x @ w + b, with w and b as initializers (for `weft export`)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]),
         helper.make_node("Add", ["xw", "b"], ["pred"])], "fake",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 4])],
        [helper.make_tensor_value_info("pred", TensorProto.FLOAT, [8, 1])],
        [numpy_helper.from_array(w0, "w"), numpy_helper.from_array(b0, "b")])
    onnx.save(helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17)]), path)


def state_files(ck, step):
    d = os.path.join(ck, "step-%08d" % step)
    return [os.path.join(d, "state.rank%d.safetensors" % r) for r in range(2)]


def train_checks(args, tmp, x, y, w0, b0):
    ref_losses, ref_w, ref_b, ref_sq = reference(x, y, w0, b0, 6)
    bundle = os.path.join(tmp, "dp")
    make_train_bundle(bundle, args.train_model, w0, b0)
    exe = os.path.join(bundle, "model")
    other = os.path.join(tmp, "dp-other")
    make_train_bundle(other, args.other_train_model, w0, b0)
    xf, yf = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
    np.save(xf, x)
    np.save(yf, y)
    data = ["--data", "x=" + xf, "--data", "y=" + yf]
    weft = args.weft

    # Uninterrupted: 6 steps, a checkpoint every 3.
    ck_a, metrics = os.path.join(tmp, "ck-a"), os.path.join(tmp, "m.jsonl")
    rc, out, err, _ = run([weft, "train", bundle, "-n", "2", *data,
                           "--steps", "6", "--save-every", "3",
                           "--checkpoint-dir", ck_a, "--metrics", metrics])
    check(rc == 0, "weft train -n 2: exit code 0", err)
    lines = out.strip().splitlines()
    check(len(lines) == 1, "one summary line on stdout (rank 0 only)", out)
    summary = json.loads(lines[-1]) if lines else {}
    check(summary.get("world_size") == 2 and summary.get("steps") == 6,
          "summary: world_size 2, steps 6", str(summary))
    check(summary.get("peak_memory_bytes", 0) > 1 << 20,
          "summary: peak_memory_bytes measured", str(summary))
    check(np.float32(summary.get("final_loss", 0)) == ref_losses[-1],
          "summary: final loss equals the reference bitwise", str(summary))
    with open(metrics) as f:
        rows = [json.loads(line) for line in f]
    check([r["step"] for r in rows] == list(range(1, 7)),
          "metrics: one line per step (rank 0 only)", str(rows))
    check([np.float32(r["loss"]) for r in rows] == ref_losses,
          "metrics: losses equal the reference bitwise (each rank read its "
          "half of the global batch)",
          "%s vs %s" % ([r["loss"] for r in rows], ref_losses))

    with open(os.path.join(ck_a, "latest")) as f:
        check(f.read() == "step-00000006\n", "latest names step 6")
    step_dir = os.path.join(ck_a, "step-00000006")
    check(sorted(os.listdir(step_dir)) ==
          ["checkpoint.json", "signature.json", "state.rank0.safetensors",
           "state.rank1.safetensors"],
          "the step directory holds both ranks' state files and the "
          "bundle's signature",
          str(os.listdir(step_dir)))
    with open(os.path.join(step_dir, "checkpoint.json")) as f:
        manifest = json.load(f)
    check(manifest.get("world_size") == 2, "checkpoint.json: world_size 2")
    files = manifest.get("files", {})
    for r, path in enumerate(state_files(ck_a, 6)):
        entry = files.get("state.rank%d.safetensors" % r, {})
        check(entry.get("sha256") == sha256(path) and
              entry.get("bytes") == os.path.getsize(path) and
              entry.get("rank") == r,
              "checkpoint.json lists rank %d's file (size, sha256)" % r)
        state, meta = read_safetensors(path)
        check(meta.get("rank") == str(r) and meta.get("world_size") == "2",
              "rank %d's state file says its rank" % r, str(meta))
        check(np.array_equal(state["w"], ref_w) and
              np.array_equal(state["b"], ref_b),
              "rank %d: w and b equal the reference bitwise" % r)
        check(state["local_sq"][0] == ref_sq[r],
              "rank %d: its own squared errors (its rows of every batch)" % r,
              "%r vs %r" % (state["local_sq"], ref_sq[r]))

    # Interrupted after 3 steps, resumed to 6: bitwise the same files.
    ck_b = os.path.join(tmp, "ck-b")
    rc, _, err, _ = run([weft, "train", bundle, "-n", "2", *data, "--steps",
                         "3", "--checkpoint-dir", ck_b])
    rc2, out2, err2, _ = run([weft, "train", bundle, "-n", "2", *data,
                              "--steps", "6", "--checkpoint-dir", ck_b,
                              "--resume"])
    check(rc == 0 and rc2 == 0, "train 3 steps, then --resume to 6",
          err + err2)
    check([sha256(p) for p in state_files(ck_b, 6)] ==
          [sha256(p) for p in state_files(ck_a, 6)],
          "the resumed run's state files equal the uninterrupted run's")

    # kill -9 of rank 1 while the step-4 checkpoint is being written.
    ck_k = os.path.join(tmp, "ck-k")
    proc = subprocess.Popen(
        [weft, "train", bundle, "-n", "2", *data, "--steps", "6",
         "--save-every", "2", "--checkpoint-dir", ck_k],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=clean_env({"WEFT_TEST_SLOW_SAVE_MS": "1500"}))
    saving = wait_for(lambda: glob.glob(
        os.path.join(ck_k, ".step-00000004.tmp-*", "state.rank1.*")))
    pids = rank_pids(os.path.realpath(exe), 1)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    try:
        proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
    check(saving and pids, "rank 1 killed during the step-4 save")
    check(proc.returncode not in (0, None),
          "the killed run exits non-zero (%s)" % proc.returncode)
    with open(os.path.join(ck_k, "latest")) as f:
        check(f.read() == "step-00000002\n",
              "after the kill, latest still names step 2")
    check(not os.path.exists(os.path.join(ck_k, "step-00000004")),
          "no half-written step-4 checkpoint")
    rc, _, err, _ = run([weft, "train", bundle, "-n", "2", *data, "--steps",
                         "6", "--save-every", "2", "--checkpoint-dir", ck_k,
                         "--resume"])
    check(rc == 0, "resume after the kill", err)
    check([sha256(p) for p in state_files(ck_k, 6)] ==
          [sha256(p) for p in state_files(ck_a, 6)],
          "the run resumed after the kill ends bitwise like the "
          "uninterrupted one")
    check(not glob.glob(os.path.join(ck_k, ".step-*")),
          "the killed save's temporary directory is gone",
          str(os.listdir(ck_k)))

    # Refusals: exit code 2 on every rank, reported once, nothing written.
    expect_refusal("weft train -n 3",
                   [weft, "train", bundle, "-n", "3", *data, "--steps", "1"],
                   "does not match the bundle's world size 2")
    m3 = os.path.join(tmp, "m3.jsonl")
    expect_refusal("mpirun -n 3",
                   MPIRUN + ["-n", "3", exe, "--train", *data, "--steps", "1",
                             "--metrics", m3],
                   "compiled for 2 ranks but 3 were started", untouched=[m3])
    expect_refusal("the executable started alone",
                   [exe, "--train", *data, "--steps", "1"],
                   "start it with 'weft run|train BUNDLE -n 2'")
    expect_refusal("torchrun-style variables without MASTER_PORT",
                   [exe, "--train", *data, "--steps", "1"],
                   "needs MASTER_ADDR and MASTER_PORT: where rank 0 listens "
                   "for the others (MASTER_PORT is not set)",
                   env={"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0",
                        "MASTER_ADDR": "127.0.0.1"})
    expect_refusal("torchrun-style rank 0 whose partner never comes",
                   [exe, "--train", *data, "--steps", "1"],
                   "rank 0 waited 1 s for the other ranks and only 1 of 2 "
                   "arrived",
                   env={"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0",
                        "MASTER_ADDR": "127.0.0.1",
                        "MASTER_PORT": str(free_port()),
                        "WEFT_COMM_TIMEOUT": "1"})
    ck_w = os.path.join(tmp, "ck-w")
    shutil.copytree(ck_a, ck_w)
    manifest_path = os.path.join(ck_w, "step-00000006", "checkpoint.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    manifest["world_size"] = 1
    with open(manifest_path, "w") as f:
        json.dump(manifest, f)
    expect_refusal("a checkpoint of another world size",
                   [weft, "train", bundle, "-n", "2", *data, "--steps", "8",
                    "--checkpoint-dir", ck_w, "--resume", "--metrics", m3],
                   "was written by a run on 1 rank but this bundle runs on 2",
                   untouched=[m3])
    # Rank files swapped (with checkpoint.json to match), or one corrupted.
    ck_x = os.path.join(tmp, "ck-x")
    shutil.copytree(ck_a, ck_x)
    first, second = state_files(ck_x, 6)
    os.rename(first, first + ".tmp")
    os.rename(second, first)
    os.rename(first + ".tmp", second)
    manifest_path = os.path.join(ck_x, "step-00000006", "checkpoint.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    entries = manifest["files"]
    entries["state.rank0.safetensors"], entries["state.rank1.safetensors"] = \
        entries["state.rank1.safetensors"], entries["state.rank0.safetensors"]
    with open(manifest_path, "w") as f:
        json.dump(manifest, f)
    rc, _, err, _ = run([weft, "train", bundle, "-n", "2", *data, "--steps",
                         "8", "--checkpoint-dir", ck_x, "--resume"])
    check(rc == 2 and "state.rank0.safetensors holds the state of rank 1, "
          "not of rank 0" in err and "holds the state of rank 0, not of "
          "rank 1" in err, "swapped rank files: each rank refuses its own",
          err)
    ck_c = os.path.join(tmp, "ck-c")
    shutil.copytree(ck_a, ck_c)
    with open(state_files(ck_c, 6)[1], "r+b") as f:
        f.seek(-3, os.SEEK_END)
        byte = f.read(1)
        f.seek(-3, os.SEEK_END)
        f.write(bytes([byte[0] ^ 1]))
    expect_refusal("a corrupted rank-1 state file",
                   [weft, "train", bundle, "-n", "2", *data, "--steps", "8",
                    "--checkpoint-dir", ck_c, "--resume"],
                   "state.rank1.safetensors is corrupted: its sha256 is")
    expect_refusal("different executables on the ranks",
                   MPIRUN + ["-n", "1", exe, "--bundle", bundle, "--train",
                             *data, "--steps", "1", ":", "-n", "1",
                             os.path.join(other, "model"), "--bundle", bundle,
                             "--train", *data, "--steps", "1"],
                   "rank 1 runs a different executable than rank 0")
    odd = os.path.join(tmp, "dp-odd-params")
    make_train_bundle(odd, args.train_model, w0, b0)
    write_safetensors(os.path.join(odd, "params.rank1.safetensors"),
                      [("b", b0), ("w", w0),
                       ("sgd.step_count", np.zeros((), np.float32)),
                       ("local_sq", np.zeros((1,), np.float32)),
                       ("step", np.zeros((), np.int64))],
                      {"format": "weft", "rank": "1"})
    expect_refusal("a parameter file of another program on rank 1",
                   [weft, "train", odd, "-n", "2", *data, "--steps", "1"],
                   "the parameter file of rank 1 (params.rank1.safetensors) "
                   "belongs to another program than rank 0's")
    short = os.path.join(tmp, "short.npy")
    np.save(short, x[:6])
    ck_s = os.path.join(tmp, "ck-s")
    expect_refusal("too few rows for the global batch",
                   [weft, "train", bundle, "-n", "2", "--data", "x=" + short,
                    "--data", "y=" + yf, "--steps", "1", "--checkpoint-dir",
                    ck_s, "--metrics", m3],
                   "has 6 rows, the global batch needs 8",
                   untouched=[ck_s, m3])

    # A rank that fails in the middle of step 3, with a 3 s watchdog.
    for how in ("exit", "kill", "hang"):
        rc, out, err, secs = run(
            [weft, "train", bundle, "-n", "2", *data, "--steps", "100"],
            env={"FAKE_DP_FAIL": how, "FAKE_DP_FAIL_RANK": "1",
                 "FAKE_DP_FAIL_STEP": "3", "WEFT_COMM_TIMEOUT": "3"},
            timeout=60)
        check(rc != 0 and secs < 20,
              "rank 1 %s at step 3: the job exits non-zero (%d) after %.1f s"
              % (how, rc, secs), err)
        check("rank 0: all_reduce over mesh axes [0] (ranks 0,1)" in err,
              "rank 1 %s: rank 0 names the collective it waited in" % how,
              err)
        if how == "hang":
            check("did not finish within 3 s" in err,
                  "rank 1 hangs: rank 0's watchdog gives up after 3 s", err)

    rc, _, err, _ = run([weft, "train", bundle, "-n", "2", *data, "--steps",
                         "1"], env={"FAKE_DP_SKIP_WAIT": "1"})
    check(rc == 1 and "collectives started and not waited for (comm_wait) "
          "on slots 3 (all_reduce_start)" in err,
          "a collective left without its comm_wait is an error", err)

    # weft export: rank 0's parameters (every rank has the same).
    try:
        import onnx  # noqa: F401
        from onnx import numpy_helper
    except ImportError:
        print("skip  weft export (no onnx module)")
        return
    write_source_onnx(os.path.join(bundle, "source.onnx"), w0, b0)
    out_onnx = os.path.join(tmp, "trained.onnx")
    rc, _, err, _ = run([weft, "export", bundle, "--checkpoint", ck_a, "-o",
                         out_onnx])
    check(rc == 0, "weft export of the 2-rank checkpoint", err)
    if rc == 0:
        model = onnx.load(out_onnx)
        inits = {t.name: numpy_helper.to_array(t)
                 for t in model.graph.initializer}
        check(np.array_equal(inits["w"], ref_w) and
              np.array_equal(inits["b"], ref_b),
              "exported w and b equal the trained ones")
    write_source_onnx(os.path.join(other, "source.onnx"), w0, b0)
    # (Joining split parameters is checked on real plans:
    # test/parallel/check_plans.py.)
    expect_refusal("weft export of another bundle's checkpoint",
                   [weft, "export", other, "--checkpoint", ck_a, "-o",
                    out_onnx + "2"],
                   "was written by another model")


def inference_checks(args, tmp):
    bundle = os.path.join(tmp, "inf")
    os.makedirs(bundle)
    shutil.copy2(args.model, os.path.join(bundle, "model"))
    for r in range(4):
        write_safetensors(os.path.join(bundle, "params.rank%d.safetensors" % r),
                          [("scale", np.array(2.0, np.float32))])
    with open(os.path.join(bundle, "manifest.json"), "w") as f:
        json.dump({"format_version": 1, "world_size": 4, "executable": "model"},
                  f)
    x = np.arange(12, dtype=np.float32).reshape(4, 3) * 1.5 - 4
    xf = os.path.join(tmp, "inf-x.npy")
    np.save(xf, x)
    out = os.path.join(tmp, "inf-out")
    rc, so, err, _ = run([args.weft, "run", bundle, "-n", "4", "--input",
                          "x=" + xf, "--output-dir", out])
    check(rc == 0, "weft run -n 4 (2x2 mesh): exit code 0", err)
    if rc == 0:
        f32 = np.float32
        total = np.array([f32(f32(x[0, c] + x[1, c]) + f32(x[2, c] + x[3, c]))
                          for c in range(3)], np.float32)
        check(np.array_equal(np.load(os.path.join(out, "doubled.npy")), 2 * x),
              "the split output, put together from the dp blocks, is 2x")
        check(np.array_equal(np.load(os.path.join(out, "total.npy")), total),
              "all_reduce over dp: the column sums of the whole input")
        check(np.array_equal(np.load(os.path.join(out, "whole.npy")), x),
              "all_gather over dp: the whole input")
    rc, so, err, _ = run([args.weft, "run", bundle, "-n", "4", "--input",
                          "x=" + xf, "--repeat", "2"])
    timing = [line for line in so.splitlines() if line.startswith("{")]
    check(rc == 0 and len(timing) == 1 and '"iterations":2' in timing[0],
          "--repeat: one timing line (rank 0)", so + err)
    local = os.path.join(tmp, "inf-local.npy")
    np.save(local, x[:2])
    expect_refusal("a split input given as one block",
                   [args.weft, "run", bundle, "-n", "4", "--input",
                    "x=" + local, "--output-dir", out + "2"],
                   "input 'x' (in %s): expected f32[4,3] (the whole input"
                   % local)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train-model", required=True)
    ap.add_argument("--other-train-model", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--weft", required=True)
    args = ap.parse_args()
    rng = np.random.default_rng(11)
    x = rng.standard_normal((N_ROWS, 4)).astype(np.float32)
    true_w = np.array([[1.5], [-2.0], [0.5], [3.0]], np.float32)
    y = (x @ true_w + 0.25 +
         0.1 * rng.standard_normal((N_ROWS, 1))).astype(np.float32)
    w0 = np.array([[0.1], [-0.2], [0.3], [0.05]], np.float32)
    b0 = np.array([0.0], np.float32)
    tmp = tempfile.mkdtemp(prefix="weft-fake-dp-")
    try:
        train_checks(args, tmp, x, y, w0, b0)
        inference_checks(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        print("\n%d check(s) failed:" % len(FAILURES))
        for f in FAILURES:
            print("  " + f)
        return 1
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
