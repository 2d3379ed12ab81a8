"""Helpers shared by weft's conformance, end-to-end and benchmark scripts.

Run these scripts with Debian's /usr/bin/python3 (numpy, onnx and torch live
there, not in the pyenv python3 on PATH). Import this module with

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
    import weft_tools

What is here:
  find_tool(name)                 locate weftc / weft (env, PATH, build dirs)
  sanitize_name(name)             output-file name rule of `weft run`
  pb_to_array(path)               serialized TensorProto (.pb) -> numpy array
  compile_bundle(model, bundle)   `weftc compile` -> ToolResult
  run_bundle(bundle, inputs, out) `weft run` -> ToolResult (+ timing JSON)
  read_outputs(out_dir, names)    load DIR/<sanitized name>.npy for each output
  compare_exact_or_close(...)     conformance comparison (NaN-aware)
  relative_l2(actual, ref)        ||y - ref|| / ||ref||
  weft_dropout_mask(shape, ...)   the mask weft.dropout draws (its Philox in numpy)
Only the standard library and numpy are needed at import time; onnx is
imported lazily by pb_to_array.
"""

import json
import os
import re
import shutil
import subprocess
import time

import numpy as np

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def find_tool(name):
    """Path of a weft tool (weftc, weft, weft-opt).

    Looks in $WEFT_BIN_DIR, then PATH (lit puts the build's bin/ first),
    then the usual build directories next to the sources."""
    candidates = []
    if os.environ.get("WEFT_BIN_DIR"):
        candidates.append(os.path.join(os.environ["WEFT_BIN_DIR"], name))
    found = shutil.which(name)
    if found:
        candidates.append(found)
    for build in (os.path.join(REPO_ROOT, "build"),
                  os.path.join(os.path.dirname(REPO_ROOT), "build")):
        candidates.append(os.path.join(build, "bin", name))
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.abspath(path)
    raise FileNotFoundError(
        "cannot find '%s': build it (ninja -C BUILD weftc weft) and put "
        "BUILD/bin on PATH or set WEFT_BIN_DIR" % name)


_BAD_CHARS = re.compile(r"[^A-Za-z0-9._-]")


def sanitize_name(name):
    """File name `weft run` uses for an output: chars outside [A-Za-z0-9._-] -> '_'."""
    return _BAD_CHARS.sub("_", name)


def pb_to_array(path):
    """Read one serialized onnx.TensorProto file into a numpy array."""
    import onnx
    from onnx import numpy_helper
    return numpy_helper.to_array(onnx.load_tensor(path))


def shape_arg(name, shape):
    """The --input-shape value for one input: NAME=D0xD1x... ('NAME=' for a scalar)."""
    return "%s=%s" % (name, "x".join(str(int(d)) for d in shape))


class ToolResult:
    """Outcome of one tool invocation."""

    def __init__(self, argv, returncode, stdout, stderr, seconds, timed_out=False):
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.seconds = seconds
        self.timed_out = timed_out

    @property
    def ok(self):
        return self.returncode == 0 and not self.timed_out

    def command_line(self):
        return " ".join(_quote(a) for a in self.argv)

    def message(self, limit=2000):
        """stderr (or stdout when stderr is empty), trimmed to `limit` chars."""
        text = (self.stderr or "").strip() or (self.stdout or "").strip()
        if self.timed_out:
            text = ("timed out; " + text).strip()
        if len(text) > limit:
            text = text[:limit] + " ...[truncated]"
        return text

    def timing(self):
        """The JSON line printed by `weft run --repeat` (dict), or None."""
        for line in reversed((self.stdout or "").splitlines()):
            line = line.strip()
            if line.startswith("{") and "iterations" in line:
                try:
                    return json.loads(line)
                except ValueError:
                    pass
        return None


def _quote(arg):
    return arg if re.fullmatch(r"[A-Za-z0-9_./=:,+-]+", arg or "x") else "'%s'" % arg


def run_tool(argv, timeout=None, env=None, cwd=None):
    """Run argv, capture output as text; never raises on failure or timeout."""
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout, env=env, cwd=cwd)
        return ToolResult(argv, proc.returncode,
                          proc.stdout.decode("utf-8", "replace"),
                          proc.stderr.decode("utf-8", "replace"),
                          time.monotonic() - start)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode("utf-8", "replace")
        err = (exc.stderr or b"").decode("utf-8", "replace")
        return ToolResult(argv, -9, out, err, time.monotonic() - start, timed_out=True)
    except OSError as exc:
        return ToolResult(argv, 127, "", str(exc), time.monotonic() - start)


def compile_bundle(model, bundle, input_shapes=None, extra_args=(), timeout=300, weftc=None):
    """`weftc compile MODEL -o BUNDLE [--input-shape NAME=DIMS]...`.

    input_shapes: optional dict name -> shape tuple."""
    argv = [weftc or find_tool("weftc"), "compile", model, "-o", bundle]
    for name, shape in (input_shapes or {}).items():
        argv += ["--input-shape", shape_arg(name, shape)]
    argv += list(extra_args)
    return run_tool(argv, timeout=timeout)


def run_bundle(bundle, inputs, output_dir, repeat=None, warmup=None, timeout=300,
               env=None, weft=None):
    """`weft run BUNDLE --input NAME=FILE ... --output-dir DIR [--repeat N --warmup W]`.

    inputs: dict (or list of pairs) name -> .npy path."""
    argv = [weft or find_tool("weft"), "run", bundle]
    items = inputs.items() if isinstance(inputs, dict) else inputs
    for name, path in items:
        argv += ["--input", "%s=%s" % (name, path)]
    argv += ["--output-dir", output_dir]
    if repeat is not None:
        argv += ["--repeat", str(repeat)]
    if warmup is not None:
        argv += ["--warmup", str(warmup)]
    return run_tool(argv, timeout=timeout, env=env)


def read_outputs(output_dir, names):
    """Load output_dir/<sanitized name>.npy for each name.

    Returns (arrays, missing): arrays maps name -> ndarray for the files found."""
    arrays, missing = {}, []
    for name in names:
        path = os.path.join(output_dir, sanitize_name(name) + ".npy")
        if os.path.exists(path):
            arrays[name] = np.load(path, allow_pickle=False)
        else:
            missing.append(name)
    return arrays, missing


def default_tolerance(dtype):
    """(rtol, atol) for comparing a computed tensor of this dtype; (0, 0) = exact."""
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        return 1e-3, 1e-3
    if dtype.kind in "fc":
        return 1e-4, 1e-4
    return 0.0, 0.0


def compare_exact_or_close(actual, expected, rtol=None, atol=None):
    """Compare one output with its reference.

    Floats: |a - e| <= atol + rtol * |e| elementwise, NaN positions must match,
    infinities must match exactly. Ints/bools: exact. Shapes must be equal
    (dtype must be equal too). Returns (ok, message); the message names the
    worst element on a mismatch."""
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    if actual.dtype != expected.dtype:
        return False, "dtype %s, expected %s" % (actual.dtype, expected.dtype)
    if actual.shape != expected.shape:
        return False, "shape %s, expected %s" % (actual.shape, expected.shape)
    if actual.size == 0:
        return True, "empty"
    d_rtol, d_atol = default_tolerance(expected.dtype)
    rtol = d_rtol if rtol is None else rtol
    atol = d_atol if atol is None else atol
    if expected.dtype.kind not in "fc":
        bad = actual != expected
        if not bad.any():
            return True, "exact"
        idx = np.unravel_index(int(np.argmax(bad)), bad.shape)
        return False, "%d of %d elements differ; first at %s: got %r, expected %r" % (
            int(bad.sum()), bad.size, tuple(int(i) for i in idx), actual[idx].item(),
            expected[idx].item())
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    if (nan_a != nan_e).any():
        idx = np.unravel_index(int(np.argmax(nan_a != nan_e)), a.shape)
        return False, "NaN positions differ (%d vs %d NaNs); first at %s: got %r, expected %r" % (
            int(nan_a.sum()), int(nan_e.sum()), tuple(int(i) for i in idx), a[idx], e[idx])
    inf_e = np.isinf(e)
    inf_a = np.isinf(a)
    if ((inf_a | inf_e) & ~((a == e) | nan_e)).any():
        mask = (inf_a | inf_e) & ~((a == e) | nan_e)
        idx = np.unravel_index(int(np.argmax(mask)), a.shape)
        return False, "infinities differ; first at %s: got %r, expected %r" % (
            tuple(int(i) for i in idx), a[idx], e[idx])
    finite = ~(nan_e | inf_e)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.where(finite, np.abs(a - e), 0.0)
    err = np.where(np.isnan(err), np.inf, err)
    bound = atol + rtol * np.abs(np.where(finite, e, 0.0))
    bad = err > bound
    max_abs = float(err.max())
    if not bad.any():
        return True, "max abs err %.3g" % max_abs
    ratio = np.where(bad, err / np.maximum(bound, 1e-300), 0.0)
    idx = np.unravel_index(int(np.argmax(ratio)), a.shape)
    return False, ("%d of %d elements outside rtol=%g atol=%g; max abs err %.4g; "
                   "worst at %s: got %.8g, expected %.8g" % (
                       int(bad.sum()), bad.size, rtol, atol, max_abs,
                       tuple(int(i) for i in idx), a[idx], e[idx]))


def relative_l2(actual, reference):
    """||actual - reference||_2 / ||reference||_2 (absolute norm if the reference is 0)."""
    a = np.asarray(actual, dtype=np.float64).ravel()
    r = np.asarray(reference, dtype=np.float64).ravel()
    if a.shape != r.shape:
        return float("inf")
    denom = float(np.linalg.norm(r))
    num = float(np.linalg.norm(a - r))
    if np.isnan(num):
        return float("inf")
    return num / denom if denom > 0 else num


def philox4x32(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 on uint64 numpy arrays holding 32-bit words (weft's
    runtime/kernels/cpu/DropoutDraw.h), for every element at once."""
    m32 = np.uint64(0xFFFFFFFF)
    c = [np.asarray(v, np.uint64) & m32 for v in (c0, c1, c2, c3)]
    k0, k1 = np.uint64(k0) & m32, np.uint64(k1) & m32
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c[0]
        p1 = np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & m32,
             (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & m32]
        k0 = (k0 + np.uint64(0x9E3779B9)) & m32
        k1 = (k1 + np.uint64(0xBB67AE85)) & m32
    return c


def weft_random(shape, distribution, a, b, step, stream, seed=0):
    """The numbers weft.random draws (runtime/kernels/cpu/RandomDraw.h), in
    float64: 'uniform' in [a, b) from the top 24 bits of word p % 4 of
    Philox((p / 4, step, stream), seed); 'normal' of mean a and deviation b
    by Box-Muller from words 2 (p % 2) and 2 (p % 2) + 1 of Philox((p / 2,
    step, stream), seed)."""
    position = np.arange(int(np.prod(shape)), dtype=np.uint64)
    if distribution == "uniform":
        group = position >> np.uint64(2)
        words = philox4x32(group, group >> np.uint64(32), np.uint64(step),
                           np.uint64(stream), seed & 0xFFFFFFFF, seed >> 32)
        word = np.choose((position & np.uint64(3)).astype(np.int64), words)
        u = (word >> np.uint64(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)
        return (a + (b - a) * u.astype(np.float64)).reshape(shape)
    group = position >> np.uint64(1)
    words = philox4x32(group, group >> np.uint64(32), np.uint64(step),
                       np.uint64(stream), seed & 0xFFFFFFFF, seed >> 32)
    odd = (position & np.uint64(1)).astype(bool)
    w1 = np.where(odd, words[2], words[0]).astype(np.float64)
    w2 = np.where(odd, words[3], words[1]).astype(np.float64)
    u1 = (w1 + 1.0) * (1.0 / 4294967296.0)
    u2 = w2 * (1.0 / 4294967296.0)
    z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
    return (a + b * z).reshape(shape)


def weft_dropout_mask(shape, ratio, step, stream, seed=0):
    """The mask weft.dropout draws for a tensor of `shape` at `step` (the
    count of steps before it) and `stream` (the dropout's place among the
    model's dropouts): element at row-major position p keeps when the top 24
    bits of word p % 4 of Philox((p / 4, step, stream), seed), as a float in
    [0, 1), are >= ratio."""
    position = np.arange(int(np.prod(shape)), dtype=np.uint64)
    group = position >> np.uint64(2)
    words = philox4x32(group, group >> np.uint64(32), np.uint64(step),
                       np.uint64(stream), seed & 0xFFFFFFFF, seed >> 32)
    word = np.choose((position & np.uint64(3)).astype(np.int64), words)
    uniform = (word >> np.uint64(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)
    return (uniform >= np.float32(ratio)).reshape(shape)


_MASK64 = (1 << 64) - 1


def _splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def shuffled_row(seed, row, rows):
    """The file row that absolute row `row` reads under `weft train --shuffle
    SEED` (runtime/executor/DataLoader.cpp's shuffledRow, written again):
    epoch row // rows permutes the rows with a 4-round Feistel network on
    the next even power of two, keyed by splitmix64 of the seed and the
    epoch, walked until it lands below `rows`."""
    epoch, index = divmod(row, rows)
    if rows <= 1:
        return 0
    bits = max(1, (rows - 1).bit_length())
    half = (bits + 1) // 2
    mask = (1 << half) - 1
    key = _splitmix64((seed ^ _splitmix64(epoch)) & _MASK64)
    x = index
    while True:
        left, right = x >> half, x & mask
        for r in range(4):
            f = _splitmix64(right ^ ((key + r * 0x9E3779B97F4A7C15) & _MASK64)) & mask
            left, right = right, left ^ f
        x = (left << half) | right
        if x < rows:
            return x
