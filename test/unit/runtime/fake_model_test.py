#!/usr/bin/env python3
"""End-to-end test of the bundle executable's main() and the `weft` launcher.

Drives `weft-fake-model` (FakeModel.cpp linked with weft_runtime_main):
y = a + b + bias with a, b f32[2,3] and bias f32[3]. Inputs are written with
numpy, the parameter file by hand (no safetensors package needed).

usage: fake_model_test.py --model PATH/weft-fake-model --weft PATH/weft
"""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

FAILURES = []


def check(cond, what, detail=""):
    if cond:
        print("ok    " + what)
    else:
        print("FAIL  " + what + ("\n      " + detail if detail else ""))
        FAILURES.append(what)


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, numpy array)."""
    names = {np.dtype("float32"): "F32", np.dtype("float16"): "F16",
             np.dtype("float64"): "F64", np.dtype("int64"): "I64",
             np.dtype("int32"): "I32", np.dtype("int8"): "I8",
             np.dtype("uint8"): "U8", np.dtype("bool"): "BOOL"}
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    blobs = []
    offset = 0
    for name, arr in tensors:
        arr = np.ascontiguousarray(arr)
        data = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": names[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def run(cmd, env=None):
    full_env = dict(os.environ)
    for var in ("OMPI_COMM_WORLD_RANK", "RANK", "SLURM_PROCID"):
        full_env.pop(var, None)
    if env:
        full_env.update(env)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=full_env, timeout=60)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def expect_error(what, cmd, needles, code=2, env=None):
    rc, out, err = run(cmd, env)
    check(rc == code, what + ": exit code %d" % code,
          "got %d; stderr: %s" % (rc, err.strip()))
    check(err.startswith("weft: error: "), what + ": 'weft: error:' prefix",
          "stderr: " + err.strip())
    for n in needles:
        check(n in err, what + ": message mentions %r" % n,
              "stderr: " + err.strip())
    return err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--weft", required=True)
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="weft-fake-model-")
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
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((2, 3)).astype(np.float32)
    bias = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    expected = a + b + bias

    # A bundle: the executable, its parameters and a manifest.
    bundle = os.path.join(tmp, "bundle")
    os.makedirs(bundle)
    exe = os.path.join(bundle, "model")
    shutil.copy2(args.model, exe)
    write_safetensors(os.path.join(bundle, "params.rank0.safetensors"),
                      [("bias", bias)], {"format": "weft"})
    bias1 = np.array([10.0, 20.0, 30.0], dtype=np.float32)
    write_safetensors(os.path.join(bundle, "params.rank1.safetensors"),
                      [("unused", np.zeros(2, np.int64)), ("bias", bias1)])
    manifest = {
        "format_version": 1, "weft_version": "0.1.0", "target": "cpu",
        "world_size": 1, "mesh": {"axes": [], "shape": []}, "plan": {},
        "executable": "model",
        "ranks": [{"rank": 0, "params_file": "params.rank0.safetensors"}],
        "inputs": [{"name": "a", "dtype": "f32", "shape": [2, 3]},
                   {"name": "b", "dtype": "f32", "shape": [2, 3]}],
        "outputs": [{"name": "y", "dtype": "f32", "shape": [2, 3]}],
        "predicted": {}}
    with open(os.path.join(bundle, "manifest.json"), "w") as f:
        json.dump(manifest, f)

    a_npy = os.path.join(tmp, "a.npy")
    b_npy = os.path.join(tmp, "b.npy")
    np.save(a_npy, a)
    np.save(b_npy, b)
    inputs = ["--input", "a=" + a_npy, "--input", "b=" + b_npy]

    def load_output(out_dir):
        path = os.path.join(out_dir, "y.npy")
        if not os.path.exists(path):
            return None
        return np.load(path)

    # --- success paths ------------------------------------------------------
    out = os.path.join(tmp, "out1")
    rc, so, se = run([exe] + inputs + ["--output-dir", out])
    check(rc == 0, "default bundle dir (/proc/self/exe): exit 0", se)
    check(so == "" and se == "", "prints nothing on success",
          "stdout=%r stderr=%r" % (so, se))
    y = load_output(out)
    check(y is not None and y.dtype == np.float32 and y.shape == (2, 3),
          "y.npy is f32[2,3]", repr(y))
    check(y is not None and np.array_equal(y, expected), "y = a + b + bias",
          "got %r want %r" % (y, expected))
    check(sorted(os.listdir(out)) == ["y.npy"], "no temporary files left",
          repr(os.listdir(out)))

    out = os.path.join(tmp, "out2", "nested", "dir")
    rc, so, se = run([args.model, "--bundle", bundle] + inputs +
                     ["--output-dir=" + out])
    check(rc == 0, "--bundle DIR and a nested --output-dir: exit 0", se)
    y = load_output(out)
    check(y is not None and np.array_equal(y, expected), "values with --bundle")

    out = os.path.join(tmp, "out3")
    rc, so, se = run([exe] + inputs + ["--output-dir", out], {"RANK": "1"})
    y = load_output(out)
    check(rc == 0 and y is not None and np.array_equal(y, a + b + bias1),
          "RANK=1 reads params.rank1.safetensors", se)
    rc, so, se = run([exe] + inputs + ["--output-dir", out],
                     {"OMPI_COMM_WORLD_RANK": "1", "RANK": "0"})
    y = load_output(out)
    check(rc == 0 and np.array_equal(y, a + b + bias1),
          "OMPI_COMM_WORLD_RANK takes precedence over RANK", se)

    out = os.path.join(tmp, "out4")
    rc, so, se = run([exe] + inputs + ["--output-dir", out, "--repeat", "5",
                                       "--warmup", "2"])
    check(rc == 0, "--repeat 5 --warmup 2: exit 0", se)
    lines = so.strip().splitlines()
    stats = None
    if len(lines) == 1:
        try:
            stats = json.loads(lines[0])
        except ValueError:
            stats = None
    check(stats is not None and stats.get("iterations") == 5 and
          all(isinstance(stats.get(k), (int, float)) and stats[k] >= 0
              for k in ("mean_s", "median_s", "min_s")) and
          stats["min_s"] <= stats["median_s"],
          "--repeat prints one JSON line with iterations/mean_s/median_s/min_s",
          repr(so))
    y = load_output(out)
    check(y is not None and np.array_equal(y, expected),
          "outputs written after --repeat")
    rc, so, se = run([exe] + inputs + ["--output-dir", out, "--repeat", "2",
                                       "--quiet"])
    check(rc == 0 and so == "", "--quiet silences the timing line", so)

    rc, so, se = run([exe, "--help"])
    check(rc == 0 and "usage:" in so, "--help prints usage", so + se)

    # --- bad input: exit 2 with a message naming input, file, types -------
    out = os.path.join(tmp, "bad")
    wrong_shape = os.path.join(tmp, "wrong_shape.npy")
    np.save(wrong_shape, np.zeros((3, 2), np.float32))
    expect_error("wrong shape",
                 [exe, "--input", "a=" + wrong_shape, "--input", "b=" + b_npy,
                  "--output-dir", out],
                 ["input 'a' (in %s): expected f32[2,3], got f32[3,2]"
                  % wrong_shape])
    wrong_dtype = os.path.join(tmp, "wrong_dtype.npy")
    np.save(wrong_dtype, b.astype(np.float64))
    expect_error("wrong dtype",
                 [exe, "--input", "a=" + a_npy, "--input", "b=" + wrong_dtype,
                  "--output-dir", out],
                 ["input 'b' (in %s): expected f32[2,3], got f64[2,3]"
                  % wrong_dtype])
    expect_error("missing input",
                 [exe, "--input", "a=" + a_npy, "--output-dir", out],
                 ["missing input 'b'", "f32[2,3]"])
    expect_error("unknown input",
                 [exe] + inputs + ["--input", "c=" + a_npy,
                                   "--output-dir", out],
                 ["unknown input 'c'", a_npy, "a, b"])
    expect_error("duplicate input",
                 [exe] + inputs + ["--input", "a=" + b_npy,
                                   "--output-dir", out],
                 ["input 'a' is given twice"])
    expect_error("nonexistent input file",
                 [exe, "--input", "a=" + a_npy, "--input",
                  "b=" + os.path.join(tmp, "nope.npy"), "--output-dir", out],
                 ["input 'b'", "nope.npy", "No such file"])

    truncated = os.path.join(tmp, "truncated.npy")
    with open(a_npy, "rb") as f:
        data = f.read()
    with open(truncated, "wb") as f:
        f.write(data[:-5])
    expect_error("corrupted npy (truncated)",
                 [exe, "--input", "a=" + truncated, "--input", "b=" + b_npy,
                  "--output-dir", out],
                 ["input 'a'", truncated, "truncated data"])
    garbage = os.path.join(tmp, "garbage.npy")
    with open(garbage, "wb") as f:
        f.write(b"this is not an npy file at all")
    expect_error("corrupted npy (bad magic)",
                 [exe, "--input", "a=" + garbage, "--input", "b=" + b_npy,
                  "--output-dir", out],
                 ["input 'a'", garbage, "bad magic"])
    fortran = os.path.join(tmp, "fortran.npy")
    np.save(fortran, np.asfortranarray(a))
    expect_error("fortran-order npy",
                 [exe, "--input", "a=" + fortran, "--input", "b=" + b_npy,
                  "--output-dir", out],
                 [fortran, "fortran_order"])
    big_endian = os.path.join(tmp, "big_endian.npy")
    np.save(big_endian, a.astype(">f4"))
    expect_error("big-endian npy",
                 [exe, "--input", "a=" + big_endian, "--input", "b=" + b_npy,
                  "--output-dir", out],
                 [big_endian, "big-endian"])
    check(not os.path.exists(out), "failed runs write no outputs")

    # --- parameters ------------------------------------------------------------
    empty_bundle = os.path.join(tmp, "empty_bundle")
    os.makedirs(empty_bundle)
    missing = os.path.join(empty_bundle, "params.rank0.safetensors")
    expect_error("missing params file",
                 [args.model, "--bundle", empty_bundle] + inputs +
                 ["--output-dir", out],
                 [missing, "'bias'", "No such file"])
    expect_error("params file of another rank missing",
                 [exe] + inputs + ["--output-dir", out],
                 ["params.rank7.safetensors", "'bias'"], env={"RANK": "7"})
    expect_error("invalid rank variable",
                 [exe] + inputs + ["--output-dir", out],
                 ["RANK='x'"], env={"RANK": "x"})

    bad_bundle = os.path.join(tmp, "bad_bundle")
    os.makedirs(bad_bundle)
    bad_params = os.path.join(bad_bundle, "params.rank0.safetensors")
    bad_cmd = [args.model, "--bundle", bad_bundle] + inputs + [
        "--output-dir", out]
    write_safetensors(bad_params, [("bias", np.zeros(4, np.float32))])
    expect_error("param with the wrong shape", bad_cmd,
                 [bad_params, "parameter 'bias': expected f32[3], got f32[4]"])
    write_safetensors(bad_params, [("bias", np.zeros(3, np.float64))])
    expect_error("param with the wrong dtype", bad_cmd,
                 [bad_params, "parameter 'bias': expected f32[3], got f64[3]"])
    write_safetensors(bad_params, [("weight", np.zeros(3, np.float32))])
    expect_error("param absent from the file", bad_cmd,
                 [bad_params, "parameter 'bias' is missing"])
    with open(bad_params, "wb") as f:
        broken = b'{"bias": {"dtype": "F32", "sh'
        f.write(struct.pack("<Q", len(broken)) + broken)
    expect_error("params file with a corrupted header", bad_cmd,
                 [bad_params, "invalid JSON header", "'bias'"])
    write_safetensors(bad_params, [("bias", bias)])
    with open(bad_params, "r+b") as f:
        f.truncate(os.path.getsize(bad_params) - 4)
    expect_error("truncated params file", bad_cmd,
                 [bad_params, "tensor 'bias'", "run past the end"])

    # --- usage errors -----------------------------------------------------------
    err = expect_error("no arguments", [exe], ["--output-dir is required"])
    check("usage:" in err, "usage line on a usage error", err)
    expect_error("unknown option", [exe, "--bogus", "--output-dir", out],
                 ["unknown option '--bogus'", "usage:"])
    expect_error("bad --repeat", [exe] + inputs + ["--repeat", "zero"],
                 ["--repeat expects a positive integer"])
    expect_error("bad --input", [exe, "--input", a_npy, "--output-dir", out],
                 ["--input expects NAME=FILE.npy"])
    expect_error("missing bundle dir",
                 [args.model, "--bundle", os.path.join(tmp, "nodir")] +
                 inputs + ["--output-dir", out], ["does not exist"])

    # --- the weft launcher --------------------------------------------------
    weft = args.weft
    out = os.path.join(tmp, "out_weft")
    rc, so, se = run([weft, "run", bundle] + inputs + ["--output-dir", out])
    y = load_output(out)
    check(rc == 0 and y is not None and np.array_equal(y, expected),
          "weft run BUNDLE: exit 0 and correct outputs", se)
    out = os.path.join(tmp, "out_weft_n1")
    rc, so, se = run([weft, "run", bundle, "-n", "1"] + inputs +
                     ["--output-dir", out, "--repeat", "2"])
    check(rc == 0 and json.loads(so).get("iterations") == 2 and
          load_output(out) is not None,
          "weft run -n 1 ... --repeat 2 forwards the arguments", so + se)
    rc, so, se = run([weft, "run", bundle, "--input", "a=" + wrong_shape,
                      "--input", "b=" + b_npy, "--output-dir", out])
    check(rc == 2 and "expected f32[2,3], got f32[3,2]" in se,
          "weft run passes the executable's exit code and message", se)
    expect_error("weft run -n 2 on a 1-rank bundle",
                 [weft, "run", bundle, "-n", "2"] + inputs +
                 ["--output-dir", out],
                 ["-n 2 does not match the bundle's world size 1"])
    expect_error("weft run without manifest",
                 [weft, "run", empty_bundle] + inputs + ["--output-dir", out],
                 ["not a weft bundle: " + empty_bundle, "manifest.json"])
    bad_manifest = os.path.join(tmp, "bad_manifest")
    os.makedirs(bad_manifest)
    with open(os.path.join(bad_manifest, "manifest.json"), "w") as f:
        f.write('{"world_size": 1, "executable": ')
    expect_error("weft run with an invalid manifest",
                 [weft, "run", bad_manifest, "--output-dir", out],
                 ["not a weft bundle", "not valid JSON", "byte"])
    with open(os.path.join(bad_manifest, "manifest.json"), "w") as f:
        json.dump({"format_version": 1, "world_size": 1,
                   "executable": "model"}, f)
    expect_error("weft run with a missing executable",
                 [weft, "run", bad_manifest, "--output-dir", out],
                 ["not a weft bundle", "'model'"])
    expect_error("weft run without a bundle", [weft, "run"],
                 ["missing BUNDLE", "usage: weft run"])
    expect_error("weft run with -n 0", [weft, "run", bundle, "-n", "0"],
                 ["-n expects a positive number of ranks"])
    rc, so, se = run([weft, "--version"])
    check(rc == 0 and so.strip() == "weft 0.1.0", "weft --version", so + se)
    rc, so, se = run([weft, "--help"])
    check(rc == 0 and "usage: weft" in so and "run BUNDLE" in so, "weft --help", so + se)
    expect_error("weft train on an inference bundle",
                 [weft, "train", bundle, "--data", "a=" + a_npy, "--steps",
                  "3"],
                 ["this bundle was compiled for inference"])
    expect_error("--train on an inference bundle",
                 [exe, "--train", "--data", "a=" + a_npy, "--steps", "3"],
                 ["this bundle was compiled for inference"])
    expect_error("weft export without --checkpoint", [weft, "export", bundle],
                 ["missing --checkpoint DIR", "usage: weft export"])
    rc, so, se = run([exe, "--print-signature"])
    check(rc == 0 and json.loads(so)["params"][0]["name"] == "bias"
          and so.endswith("}\n"), "model --print-signature", so + se)
    # Runtime-only builds of weft have no ONNX; full builds refuse a bundle
    # without source.onnx. Either way nothing is written.
    trained = os.path.join(tmp, "trained.onnx")
    rc, so, se = run([weft, "export", bundle, "--checkpoint", tmp, "-o",
                      trained])
    check(rc == 2 and se.startswith("weft: error: ") and
          ("weft was built without ONNX support" in se or
           "has no source model" in se) and not os.path.exists(trained),
          "weft export of a bundle without source.onnx", se)
    err = expect_error("weft with an unknown command", [weft, "frobnicate"],
                       ["unknown command 'frobnicate'"])
    check("usage: weft" in err, "unknown command prints usage", err)
    expect_error("weft without a command", [weft], ["missing command"])


if __name__ == "__main__":
    sys.exit(main())
