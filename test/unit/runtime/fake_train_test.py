#!/usr/bin/env python3
"""End-to-end test of training bundles: `weft train` and the executable.

Drives `weft-fake-train-model` (FakeTrainModel.cpp linked with
weft_runtime_main): one call is one SGD step (lr 0.1) of linear regression
pred = x @ w + b with the mean squared error, global batch 8, on data files of
20 rows (so batches wrap). Checks the losses against a numpy float32 replay of
the same arithmetic, the metrics file, the progress line (on a pty only),
checkpoints, bitwise-exact resumption after SIGKILL (during and after a
save), and that bad input exits with code 2 and modifies nothing.

usage: fake_train_test.py --model PATH --other-model PATH
                          --inference-model PATH --weft PATH
"""

import argparse
import hashlib
import json
import os
import pty
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


def check(cond, what, detail=""):
    if cond:
        print("ok    " + what)
    else:
        print("FAIL  " + what + ("\n      " + detail if detail else ""))
        FAILURES.append(what)


# --- safetensors -------------------------------------------------------------

ST_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64,
             "I32": np.int32}


def write_safetensors(path, tensors):
    names = {np.dtype(v): k for k, v in ST_DTYPES.items()}
    header, blobs, offset = {}, [], 0
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
    """-> ({name: array}, metadata)"""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + b:8 + n + e],
                                  ST_DTYPES[info["dtype"]]).reshape(
                                      info["shape"])
    return out, meta


# --- the reference -------------------------------------------------------------


def reference(x, y, w0, b0, steps):
    """The fake model's arithmetic, in the same order, in float32."""
    w = [np.float32(v) for v in w0.reshape(-1)]
    b = np.float32(b0[0])
    f32 = np.float32
    losses = []
    for s in range(steps):
        rows = [(s * BATCH + i) % N_ROWS for i in range(BATCH)]
        xb, yb = x[rows], y[rows, 0]
        err = []
        for i in range(BATCH):
            p = b
            for k in range(4):
                p = f32(p + f32(xb[i, k] * w[k]))
            err.append(f32(p - yb[i]))
        total = f32(0)
        for e in err:
            total = f32(total + f32(e * e))
        losses.append(f32(total / f32(8)))
        gw = []
        for k in range(4):
            g = f32(0)
            for i in range(BATCH):
                g = f32(g + f32(xb[i, k] * err[i]))
            gw.append(f32(g * f32(0.25)))
        gb = f32(0)
        for e in err:
            gb = f32(gb + e)
        gb = f32(gb * f32(0.25))
        w = [f32(w[k] - f32(LR * gw[k])) for k in range(4)]
        b = f32(b - f32(LR * gb))
    return losses, np.array(w, np.float32).reshape(4, 1), \
        np.array([b], np.float32)


# --- processes -----------------------------------------------------------------


def clean_env(extra=None):
    env = dict(os.environ)
    for var in ("OMPI_COMM_WORLD_RANK", "RANK", "SLURM_PROCID",
                "WEFT_TEST_SLOW_SAVE_MS"):
        env.pop(var, None)
    if extra:
        env.update(extra)
    return env


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=clean_env(env), timeout=120)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def snapshot(*paths):
    """Every file under `paths` (or the file itself) with its bytes."""
    out = {}
    for root in paths:
        if os.path.isfile(root):
            with open(root, "rb") as f:
                out[root] = f.read()
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            for d in dirnames:
                out[os.path.join(dirpath, d) + "/"] = None
            for name in filenames:
                path = os.path.join(dirpath, name)
                with open(path, "rb") as f:
                    out[path] = f.read()
    return out


def expect_error(what, cmd, needles, untouched=(), env=None):
    before = snapshot(*untouched)
    rc, out, err = run(cmd, env)
    check(rc == 2, what + ": exit code 2", "got %d; stderr: %s" % (rc, err))
    check(err.startswith("weft: error: "), what + ": 'weft: error:' prefix",
          "stderr: " + err.strip())
    for n in needles:
        check(n in err, what + ": message mentions %r" % n,
              "stderr: " + err.strip())
    if untouched:
        check(snapshot(*untouched) == before,
              what + ": nothing modified", repr(untouched))
    return err


def read_metrics(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def summary_of(out):
    lines = out.strip().splitlines()
    try:
        return json.loads(lines[-1]) if len(lines) == 1 else None
    except ValueError:
        return None


def wait_for(cond, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.005)
    return False


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--other-model", required=True)
    ap.add_argument("--inference-model", required=True)
    ap.add_argument("--weft", required=True)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="weft-fake-train-")
    try:
        run_all(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        print("\n%d check(s) failed:" % len(FAILURES))
        for f in FAILURES:
            print("  " + f)
        return 1
    print("\nall checks passed")
    return 0


def run_all(args, tmp):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((N_ROWS, 4)).astype(np.float32)
    true_w = np.array([[1.5], [-2.0], [0.5], [3.0]], np.float32)
    y = (x @ true_w + 0.25 +
         0.1 * rng.standard_normal((N_ROWS, 1))).astype(np.float32)
    w0 = np.array([[0.1], [-0.2], [0.3], [0.05]], np.float32)
    b0 = np.array([0.0], np.float32)
    ref_losses, ref_w, ref_b = reference(x, y, w0, b0, 10)

    bundle = os.path.join(tmp, "bundle")
    os.makedirs(bundle)
    exe = os.path.join(bundle, "model")
    shutil.copy2(args.model, exe)
    params_file = os.path.join(bundle, "params.rank0.safetensors")
    write_safetensors(params_file, [
        ("w", w0), ("b", b0), ("sgd.step_count", np.zeros((), np.float32)),
        ("step", np.zeros((), np.int64))])
    with open(os.path.join(bundle, "manifest.json"), "w") as f:
        json.dump({"format_version": 1, "world_size": 1, "executable": "model",
                   "mode": "train"}, f)
    other_bundle = os.path.join(tmp, "other_bundle")
    shutil.copytree(bundle, other_bundle)
    shutil.copy2(args.other_model, os.path.join(other_bundle, "model"))

    x_npy, y_npy = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
    np.save(x_npy, x)
    np.save(y_npy, y)
    data = ["--data", "x=" + x_npy, "--data", "y=" + y_npy]
    weft = args.weft
    bundle_before = snapshot(bundle)

    def train(extra, env=None, prog=None):
        cmd = ([weft, "train", bundle] if prog is None else prog) + data
        return run(cmd + extra, env)

    # --- 10 steps: losses, metrics, summary, silence off a terminal ---------
    metrics = os.path.join(tmp, "plain.jsonl")
    rc, out, err = train(["--steps", "10", "--metrics", metrics])
    check(rc == 0, "weft train --steps 10: exit 0", err)
    check(err == "", "nothing on stderr when it is not a terminal", repr(err))
    records = read_metrics(metrics) if os.path.exists(metrics) else []
    losses = [np.float32(r["loss"]) for r in records]
    check([r.get("step") for r in records] == list(range(1, 11)),
          "metrics: one record per step, steps 1..10",
          repr([r.get("step") for r in records]))
    check(all(set(r) == {"step", "loss", "step_time_s", "samples_per_s"}
              for r in records), "metrics: step, loss, step_time_s, "
          "samples_per_s", repr(records[:1]))
    check(all(r["step_time_s"] >= 0 and r["samples_per_s"] >= 0 and
              (r["step_time_s"] == 0 or abs(r["samples_per_s"] *
               r["step_time_s"] - BATCH) < 1e-6 * BATCH) for r in records),
          "metrics: samples_per_s = B / step_time_s", repr(records[:2]))
    check(len(losses) == 10 and all(a == b for a, b in
                                    zip(losses, ref_losses)),
          "losses equal the numpy SGD replay on wrapped rows (bitwise)",
          "got %r\nwant %r" % (losses, ref_losses))
    check(ref_losses[-1] < ref_losses[0], "the loss goes down",
          repr(ref_losses))
    summary = summary_of(out)
    check(summary is not None and summary.get("steps") == 10 and
          np.float32(summary.get("final_loss")) == ref_losses[-1] and
          summary.get("mean_step_time_s") >= 0 and
          summary.get("samples_per_s") >= 0,
          "stdout: one summary line {steps, final_loss, mean_step_time_s, "
          "samples_per_s}", repr(out))
    check(snapshot(bundle) == bundle_before,
          "training never writes into the bundle")

    # The executable itself, and 'weft train' forwarding -n 1.
    rc, out, err = run([exe, "--train"] + data + ["--steps", "2"])
    check(rc == 0 and np.float32(summary_of(out)["final_loss"]) ==
          ref_losses[1], "the executable trains with --train "
          "(bundle = its directory)", out + err)
    rc, out, err = run([weft, "train", bundle, "-n", "1"] + data +
                       ["--steps=3"])
    check(rc == 0 and summary_of(out)["steps"] == 3, "weft train -n 1",
          out + err)

    # --- checkpoints every 3 steps ------------------------------------------
    ck_a = os.path.join(tmp, "ck_a")
    metrics_a = os.path.join(tmp, "a.jsonl")
    rc, out, err = train(["--steps", "10", "--checkpoint-dir", ck_a,
                          "--save-every", "3", "--metrics", metrics_a])
    check(rc == 0, "--checkpoint-dir --save-every 3: exit 0", err)
    check(sorted(os.listdir(ck_a)) == ["latest", "step-00000009",
                                       "step-00000010"],
          "the two newest checkpoints are kept (9, and 10 after the last step)",
          repr(sorted(os.listdir(ck_a))))
    with open(os.path.join(ck_a, "latest")) as f:
        check(f.read() == "step-00000010\n", "latest names step-00000010")
    final_a = os.path.join(ck_a, "step-00000010")
    with open(os.path.join(final_a, "checkpoint.json")) as f:
        manifest = json.load(f)
    state_a = os.path.join(final_a, "state.safetensors")
    signature_sha = manifest.get("signature_sha256", "")
    check(manifest.get("format_version") == 1 and
          manifest.get("step") == 10 and
          manifest.get("data_position") == 10 * BATCH and
          len(signature_sha) == 64 and
          manifest.get("files", {}).get("state.safetensors") ==
          {"bytes": os.path.getsize(state_a), "sha256": sha256(state_a)},
          "checkpoint.json: format_version, step, data_position, "
          "signature_sha256, files{bytes, sha256}", json.dumps(manifest))
    tensors, meta = read_safetensors(state_a)
    check(sorted(tensors) == ["b", "sgd.step_count", "step", "w"],
          "state.safetensors holds every persistent buffer", repr(tensors))
    check(np.array_equal(tensors["w"], ref_w) and
          np.array_equal(tensors["b"], ref_b) and
          tensors["sgd.step_count"] == 10 and tensors["step"] == 10,
          "state after 10 steps equals the reference (bitwise)",
          repr(tensors))
    check(meta.get("step") == "10" and meta.get("data_position") == "80" and
          meta.get("signature_sha256") == signature_sha,
          "state.safetensors __metadata__", repr(meta))
    tensors9, _ = read_safetensors(os.path.join(ck_a, "step-00000009",
                                                "state.safetensors"))
    check(tensors9["step"] == 9, "step-00000009 holds the state after step 9")
    check([np.float32(r["loss"]) for r in read_metrics(metrics_a)] ==
          ref_losses, "checkpointing does not change the trajectory")

    # --- 5 steps, then --resume to 10 ---------------------------------------
    ck_b = os.path.join(tmp, "ck_b")
    metrics_b = os.path.join(tmp, "b.jsonl")
    rc, out, err = train(["--steps", "5", "--checkpoint-dir", ck_b,
                          "--save-every", "3", "--metrics", metrics_b])
    check(rc == 0 and sorted(os.listdir(ck_b)) ==
          ["latest", "step-00000003", "step-00000005"],
          "5 steps: checkpoints at 3 and at the end (5)",
          err + repr(os.listdir(ck_b) if os.path.isdir(ck_b) else None))
    rc, out, err = train(["--steps", "10", "--checkpoint-dir", ck_b,
                          "--save-every", "3", "--metrics", metrics_b,
                          "--resume"])
    check(rc == 0, "--resume --steps 10: exit 0", err)
    check(summary_of(out) is not None and summary_of(out)["steps"] == 10,
          "--steps is the total: the summary says 10", out)
    check([r["step"] for r in read_metrics(metrics_b)] == list(range(1, 11)) and
          [np.float32(r["loss"]) for r in read_metrics(metrics_b)] ==
          ref_losses, "resumed metrics: steps 1..10 with the uninterrupted "
          "losses")

    def same_final(ck, what):
        final = os.path.join(ck, "step-00000010")
        same = all(
            os.path.exists(os.path.join(final, f)) and
            sha256(os.path.join(final, f)) ==
            sha256(os.path.join(final_a, f))
            for f in ("state.safetensors", "checkpoint.json"))
        check(same, what + ": final state and checkpoint.json identical "
              "(bitwise) to the uninterrupted run")

    same_final(ck_b, "5 + resume to 10")
    check(sorted(os.listdir(ck_b)) == ["latest", "step-00000009",
                                       "step-00000010"],
          "old checkpoints pruned after the resume", repr(os.listdir(ck_b)))

    # Resuming at the target: nothing to do, nothing changed.
    before = snapshot(ck_b)
    rc, out, err = train(["--steps", "10", "--checkpoint-dir", ck_b,
                          "--resume"])
    check(rc == 0 and "nothing to train" in err and
          summary_of(out) is not None and
          np.float32(summary_of(out)["final_loss"]) == ref_losses[-1] and
          snapshot(ck_b) == before,
          "--resume at the target step: exit 0, nothing to train", out + err)

    # --- SIGKILL during a save, and after one --------------------------------
    def killed_run(ck, metrics_path, ready, what):
        cmd = [weft, "train", bundle] + data + [
            "--steps", "10", "--checkpoint-dir", ck, "--save-every", "3",
            "--metrics", metrics_path]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE,
                             env=clean_env({"WEFT_TEST_SLOW_SAVE_MS": "1500"}))
        hit = wait_for(lambda: ready(ck))
        p.send_signal(signal.SIGKILL)
        p.communicate()
        check(hit and p.returncode == -signal.SIGKILL,
              what + ": killed at the intended point",
              "rc %r" % p.returncode)

    def saving(step):
        def ready(ck):
            return os.path.isdir(ck) and any(
                n.startswith(".step-%08d.tmp-" % step) and
                os.path.exists(os.path.join(ck, n, "state.safetensors"))
                for n in os.listdir(ck))
        return ready

    def latest_is(step):
        def ready(ck):
            try:
                with open(os.path.join(ck, "latest")) as f:
                    return f.read() == "step-%08d\n" % step
            except OSError:
                return False
        return ready

    ck_c = os.path.join(tmp, "ck_c")
    metrics_c = os.path.join(tmp, "c.jsonl")
    killed_run(ck_c, metrics_c, saving(6), "kill -9 in the middle of a save")
    names = sorted(os.listdir(ck_c))
    with open(os.path.join(ck_c, "latest")) as f:
        latest = f.read()
    check(latest == "step-00000003\n" and "step-00000003" in names and
          "step-00000006" not in names and
          any(n.startswith(".step-00000006.tmp-") for n in names),
          "a killed save leaves the previous checkpoint and latest intact",
          "%r %r" % (latest, names))
    rc, out, err = train(["--steps", "10", "--checkpoint-dir", ck_c,
                          "--save-every", "3", "--metrics", metrics_c,
                          "--resume"])
    check(rc == 0, "--resume after a killed save: exit 0", err)
    same_final(ck_c, "killed during a save + resume")
    check(not any(n.startswith(".") for n in os.listdir(ck_c)),
          "the stale temporary directory is removed by the next save",
          repr(os.listdir(ck_c)))
    check([np.float32(r["loss"]) for r in read_metrics(metrics_c)] ==
          ref_losses and [r["step"] for r in read_metrics(metrics_c)] ==
          list(range(1, 11)), "metrics after kill + resume: steps 1..10, "
          "records of repeated steps dropped")

    ck_d = os.path.join(tmp, "ck_d")
    metrics_d = os.path.join(tmp, "d.jsonl")
    killed_run(ck_d, metrics_d, latest_is(6), "kill -9 after a save")
    rc, out, err = train(["--steps", "10", "--checkpoint-dir", ck_d,
                          "--save-every", "3", "--metrics", metrics_d,
                          "--resume"])
    check(rc == 0, "--resume after a kill after a save: exit 0", err)
    same_final(ck_d, "killed after a save + resume")
    check([np.float32(r["loss"]) for r in read_metrics(metrics_d)] ==
          ref_losses, "metrics after kill + resume equal the uninterrupted")

    # --- bad checkpoints: exit 2, nothing modified ---------------------------
    ck_e = os.path.join(tmp, "ck_e")
    rc, out, err = train(["--steps", "4", "--checkpoint-dir", ck_e])
    check(rc == 0, "a checkpoint to break", err)
    metrics_e = os.path.join(tmp, "e.jsonl")
    with open(metrics_e, "w") as f:
        f.write('{"step": 1, "loss": 1}\n')
    state_e = os.path.join(ck_e, "step-00000004", "state.safetensors")
    json_e = os.path.join(ck_e, "step-00000004", "checkpoint.json")
    good = open(state_e, "rb").read()
    resume_e = ["--steps", "10", "--checkpoint-dir", ck_e, "--resume",
                "--metrics", metrics_e]
    keep = (ck_e, metrics_e, bundle)

    flipped = bytearray(good)
    flipped[len(good) - 20] ^= 0x01
    with open(state_e, "wb") as f:
        f.write(flipped)
    expect_error("corrupted checkpoint (a flipped byte)", [weft, "train", bundle]
                 + data + resume_e,
                 [state_e + " is corrupted: its sha256 is"], keep)
    with open(state_e, "wb") as f:
        f.write(good[:len(good) // 2])
    expect_error("truncated state file", [weft, "train", bundle] + data +
                 resume_e,
                 [state_e + " is truncated: it has %d bytes" % (len(good) // 2),
                  "records %d" % len(good)], keep)
    with open(state_e, "wb") as f:
        f.write(good)
    manifest_text = open(json_e).read()
    with open(json_e, "w") as f:
        f.write(manifest_text[:30])
    expect_error("truncated checkpoint.json", [weft, "train", bundle] + data +
                 resume_e, [json_e + " is corrupted (invalid JSON"], keep)
    with open(json_e, "w") as f:
        f.write(manifest_text)
    expect_error("checkpoint from another model",
                 [weft, "train", other_bundle] + data + resume_e,
                 ["checkpoint " + os.path.join(ck_e, "step-00000004") +
                  " was written by another model"], keep)
    expect_error("--steps below the checkpoint's step",
                 [weft, "train", bundle] + data +
                 ["--steps", "3", "--checkpoint-dir", ck_e, "--resume"],
                 ["is at step 4, beyond --steps 3"], keep)
    expect_error("a fresh run into a directory with checkpoints",
                 [weft, "train", bundle] + data +
                 ["--steps", "3", "--checkpoint-dir", ck_e],
                 ["already holds a checkpoint", "--resume"], keep)
    empty_ck = os.path.join(tmp, "empty_ck")
    os.makedirs(empty_ck)
    expect_error("--resume without a checkpoint",
                 [weft, "train", bundle] + data +
                 ["--steps", "3", "--checkpoint-dir", empty_ck, "--resume"],
                 ["no checkpoint in " + empty_ck], (empty_ck,))
    rc, out, err = train(resume_e)
    check(rc == 0 and summary_of(out)["steps"] == 10,
          "the repaired checkpoint resumes", err)

    # --- bad data and usage: exit 2, nothing written -------------------------
    ck_f = os.path.join(tmp, "ck_f")
    metrics_f = os.path.join(tmp, "f.jsonl")
    with open(metrics_f, "w") as f:
        f.write("previous contents\n")
    tail = ["--steps", "3", "--checkpoint-dir", ck_f, "--metrics", metrics_f]
    keep = (metrics_f, bundle)

    def bad_data(name, arr):
        path = os.path.join(tmp, name)
        np.save(path, arr)
        return path

    wrong_shape = bad_data("x_shape.npy", np.zeros((20, 3), np.float32))
    expect_error("data of the wrong shape",
                 [weft, "train", bundle, "--data", "x=" + wrong_shape,
                  "--data", "y=" + y_npy] + tail,
                 ["--data for input 'x' (%s): expected f32[N,4], got "
                  "f32[20,3]" % wrong_shape], keep)
    wrong_dtype = bad_data("x_dtype.npy", x.astype(np.float64))
    expect_error("data of the wrong dtype",
                 [weft, "train", bundle, "--data", "x=" + wrong_dtype,
                  "--data", "y=" + y_npy] + tail,
                 ["--data for input 'x' (%s): expected f32[N,4], got "
                  "f64[20,4] (wrong dtype)" % wrong_dtype], keep)
    few_rows = bad_data("y_few.npy", y[:3])
    expect_error("data with too few rows",
                 [weft, "train", bundle, "--data", "x=" + x_npy,
                  "--data", "y=" + few_rows] + tail,
                 ["--data for input 'y' (%s): has 3 rows, the global batch "
                  "needs 8" % few_rows], keep)
    expect_error("missing --data",
                 [weft, "train", bundle, "--data", "x=" + x_npy] + tail,
                 ["missing --data for input 'y'", "f32[N,1]"], keep)
    expect_error("unknown --data",
                 [weft, "train", bundle, "--data", "z=" + x_npy] + data + tail,
                 ["--data: unknown input 'z'", "x, y"], keep)
    expect_error("--data given twice",
                 [weft, "train", bundle, "--data", "x=" + x_npy] + data + tail,
                 ["input 'x' is given twice"], keep)
    expect_error("--steps 0", [weft, "train", bundle] + data +
                 ["--steps", "0", "--metrics", metrics_f],
                 ["--steps expects a positive integer, got '0'"], keep)
    expect_error("no --steps", [weft, "train", bundle] + data +
                 ["--metrics", metrics_f], ["--steps is required"], keep)
    check(not os.path.exists(ck_f),
          "failed runs create no checkpoint directory")
    expect_error("--input on a training bundle",
                 [weft, "run", bundle, "--input", "x=" + x_npy,
                  "--output-dir", os.path.join(tmp, "out")],
                 ["this bundle was compiled for training", "weft train"])
    expect_error("--input with --train",
                 [exe, "--train", "--input", "x=" + x_npy, "--steps", "1"],
                 ["--input is for inference runs"])
    expect_error("weft train -n 2 on a 1-rank bundle",
                 [weft, "train", bundle, "-n", "2"] + data + ["--steps", "1"],
                 ["-n 2 does not match the bundle's world size 1"])
    expect_error("weft train without a bundle", [weft, "train"],
                 ["missing BUNDLE", "usage: weft train"])
    inference_bundle = os.path.join(tmp, "inference_bundle")
    os.makedirs(inference_bundle)
    shutil.copy2(args.inference_model, os.path.join(inference_bundle, "model"))
    with open(os.path.join(inference_bundle, "manifest.json"), "w") as f:
        json.dump({"format_version": 1, "world_size": 1,
                   "executable": "model"}, f)
    expect_error("weft train on an inference bundle",
                 [weft, "train", inference_bundle, "--data", "a=" + x_npy,
                  "--steps", "1"], ["compiled for inference"])

    # --- a non-finite loss: one warning, training goes on ----------------------
    x_nan = x.copy()
    x_nan[9, 2] = np.nan
    nan_npy = bad_data("x_nan.npy", x_nan)
    metrics_nan = os.path.join(tmp, "nan.jsonl")
    rc, out, err = run([weft, "train", bundle, "--data", "x=" + nan_npy,
                        "--data", "y=" + y_npy, "--steps", "4", "--metrics",
                        metrics_nan])
    records = read_metrics(metrics_nan) if rc == 0 else []
    check(rc == 0 and err.count("weft: warning: the loss is not finite") == 1
          and "at step 2" in err and len(records) == 4 and
          records[1]["loss"] is None,
          "a non-finite loss: one warning, metrics loss null, exit 0",
          err + repr(records))

    # --- the progress line, on a terminal ------------------------------------
    master, slave = pty.openpty()
    p = subprocess.Popen([weft, "train", bundle] + data + ["--steps", "10"],
                         stdout=subprocess.PIPE, stderr=slave,
                         env=clean_env())
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    out = p.communicate()[0].decode()
    os.close(master)
    text = shown.decode(errors="replace")
    check(p.returncode == 0 and "\rstep 10/10  loss " in text and
          " samples/s  ETA " in text and "\rstep 1/10  loss " in text,
          "on a terminal: an updating 'step N/10  loss ...  samples/s  ETA' "
          "line", repr(text))
    check(text.endswith("\r\x1b[K"), "the progress line is cleared at the end",
          repr(text[-40:]))
    check(summary_of(out) is not None and summary_of(out)["steps"] == 10,
          "the summary still goes to stdout", repr(out))


if __name__ == "__main__":
    sys.exit(main())
