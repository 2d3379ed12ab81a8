#!/usr/bin/env bash
# The GPU training-step benchmark, on the lent GPU machine after
# scripts/device-check.sh has built the runtime (BUILD): the GPT-2-small
# bundle bench/gpu/prepare.sh carried (parameters written here by
# fill_params.py, relinked with `weft relink`), trained for STEPS steps,
# then the same model in PyTorch eager and torch.compile on the same GPU
# (torch_gpt_step.py). Writes $OUT/gpu-bench.jsonl: one line per system
# with step seconds, tokens/s and MFU (6 x parameters x tokens/s over the
# bf16 dense peak, 989 TFLOP/s for H100/H200 SXM). Each variant prepare.sh
# carried (the model compiled with other flags) trains too, right after
# weft's own bundle: mode "weft-NAME"; so does the bundle with its fused
# kernels interpreted (WEFT_CUDA_FUSED=interpret): "weft-interpreted", and
# without CUDA graphs (WEFT_CUDA_GRAPHS=0): "weft-no-graphs". The
# first step, which compiles the fused kernels, is reported apart
# (first_step_s).
#
# usage: bench/gpu/run.sh [CARRY] (env: OUT, BUILD=build-device, STEPS=8,
#        MODES=eager,compile)
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
carry="${1:-$root/build-carry}/gpt2"
build="${BUILD:-$root/build-device}"
out="${OUT:-$root/build-device-out}"
steps="${STEPS:-8}"
mkdir -p "$out"
read -r -a shape <"$carry/shape"
work="$(mktemp -d)"
cp -r "$carry/bundle" "$work/bundle"
python3 "$root/bench/gpu/fill_params.py" "$carry/params-header.json" \
  "$work/bundle/params.rank0.safetensors" || exit 1
"$build/bin/weft" relink "$work/bundle" || exit 1
python3 - "$work" "${shape[@]}" <<'PY'
import sys
import numpy as np
work, args = sys.argv[1], sys.argv[2:]
a = dict(zip(args[::2], map(int, args[1::2])))
r = np.random.default_rng(1)
for name in ("tokens", "targets"):
    np.save(f"{work}/{name}.npy",
            r.integers(0, a["--vocab"], (4 * a["--batch"], a["--seq"])).astype(np.int64))
PY
# One weft bundle trained for STEPS steps: a line of gpu-bench.jsonl.
train_weft() { # BUNDLE MODE
  rm -f "$work/weft.jsonl"
  "$build/bin/weft" train "$1" --data tokens="$work/tokens.npy" \
    --data targets="$work/targets.npy" --steps "$steps" \
    --metrics "$work/weft.jsonl" 2>&1 | tail -n 15 >&2
  python3 - "$work/weft.jsonl" "$2" "${shape[@]}" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
a = dict(zip(sys.argv[3::2], map(int, sys.argv[4::2])))
h, L, V, S = a["--hidden"], a["--layers"], a["--vocab"], a["--seq"]
params = 2 * V * h + S * h + L * (12 * h * h + 13 * h) + 2 * h
step = statistics.median(r["step_time_s"] for r in rows[2:] or rows)
tps = a["--batch"] * S / step
print(json.dumps({"mode": sys.argv[2], "params": params, "step_s": step,
                  "first_step_s": rows[0]["step_time_s"],
                  "tokens_per_s": tps, "mfu": 6 * params * tps / 989e12,
                  "losses": [r["loss"] for r in rows]}))
PY
}
train_weft "$work/bundle" weft >"$out/gpu-bench.jsonl"
# The same bundle with its fused kernels interpreted instead of compiled at
# run time (FusedJit.h).
WEFT_CUDA_FUSED=interpret train_weft "$work/bundle" weft-interpreted \
  >>"$out/gpu-bench.jsonl"
# And without CUDA graphs (every step's kernels launched one by one).
WEFT_CUDA_GRAPHS=0 train_weft "$work/bundle" weft-no-graphs \
  >>"$out/gpu-bench.jsonl"
for variant in "$carry"/variants/*/; do
  [ -d "$variant" ] || continue
  name="$(basename "$variant")"
  cp -r "$variant" "$work/variant-$name"
  ln -sf "$work/bundle/params.rank0.safetensors" "$work/variant-$name/"
  "$build/bin/weft" relink "$work/variant-$name" &&
    train_weft "$work/variant-$name" "weft-$name" >>"$out/gpu-bench.jsonl"
done
# Where a step goes: the same bundle traced (the GPU waited for after every
# launch, so each kernel's time is its own, launch latency included).
"$build/bin/weft" train "$work/bundle" --data tokens="$work/tokens.npy" \
  --data targets="$work/targets.npy" --steps 2 --trace "$work/trace.json" \
  >/dev/null 2>&1
python3 - "$work/trace.json" >"$out/gpu-trace-summary.txt" <<'PY'
import collections, json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"]
          if e.get("ph") == "X" and e.get("tid") == 0]
# The second step: launches restart at 0 each step.
starts = [i for i, e in enumerate(events) if e["args"].get("launch") == 0]
step = events[starts[-1]:] if starts else events
total = sum(e["dur"] for e in step)
by = collections.defaultdict(lambda: [0, 0.0])
for e in step:
    by[e["name"]][0] += 1
    by[e["name"]][1] += e["dur"]
print(f"one traced step: {total / 1e3:.1f} ms in {len(step)} launches")
for name, (count, dur) in sorted(by.items(), key=lambda kv: -kv[1][1]):
    print(f"{name:20s} {count:5d} launches {dur / 1e3:9.2f} ms {100 * dur / total:5.1f}%")
# The longest launches, by their index in the step (weftc's launch order).
print("longest launches (index, kernel, us):")
for e in sorted(step, key=lambda e: -e["dur"])[:40]:
    print(f"  {e['args'].get('launch')} {e['name']} {e['dur']:.0f}")
PY
cat "$out/gpu-trace-summary.txt"
python3 "$root/bench/gpu/torch_gpt_step.py" "${shape[@]}" \
  --modes "${MODES:-eager,compile}" >>"$out/gpu-bench.jsonl"
cat "$out/gpu-bench.jsonl"
