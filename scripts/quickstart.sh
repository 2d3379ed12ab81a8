#!/usr/bin/env bash
# Installs what is missing, builds weft, then compiles the example MLP into a
# bundle and runs it on CPU, checking the result against NumPy; then
# calibrates the cost model on this machine (weft calibrate --quick, 10 s),
# ranks the example transformer's 4-rank plans, trains it on 4 CPU ranks
# (dp=2 x pp=2, 1F1B), prints where the time went (from its trace) beside the
# cost model's prediction, and checks that its loss falls.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
build="${WEFT_BUILD_DIR:-$root/build}"
work="$build/quickstart"
rm -rf "$work" && mkdir -p "$work"

echo "== exporting the example model (examples/mlp)"
/usr/bin/python3 "$root/examples/mlp/make_model.py" "$work"
echo "== weftc compile"
"$build/bin/weftc" compile "$work/mlp.onnx" -o "$work/mlp.bundle"
cat "$work/mlp.bundle/plan.txt"
echo "== weft run"
"$build/bin/weft" run "$work/mlp.bundle" --input x="$work/x.npy" --output-dir "$work/out"
/usr/bin/python3 "$root/examples/mlp/check_output.py" "$work"

echo "== the example transformer (examples/transformer): weftc compile --train --dp 2 --pp 2"
/usr/bin/python3 "$root/examples/transformer/make_model.py" "$work"
echo "== weft calibrate -n 4 --quick: this machine's cores, memory and MPI for the cost model"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$build/bin/weft" calibrate -n 4 --quick -o "$work/cluster.json" | grep -E "peak:|node,|links|wrote"
echo "== weftc plan: the cost model's ranking of its 4-rank plans on this machine"
"$build/bin/weftc" plan "$work/transformer.onnx" --train --devices 4 \
  --cluster "$work/cluster.json" --top 5 | sed -n '1,10p'
"$build/bin/weftc" compile "$work/transformer.onnx" -o "$work/transformer.bundle" \
  --train --dp 2 --pp 2 --schedule 1f1b --cluster "$work/cluster.json"
sed -n '1,12p' "$work/transformer.bundle/plan.txt"
"$build/bin/weftc" plan "$work/transformer.onnx" --train --dp 2 --pp 2 --schedule 1f1b \
  --schedule-diagram "$work/transformer.schedule.svg"
echo "== weft train -n 4 (mpirun; 40 steps; the trace opens in https://ui.perfetto.dev)"
"$build/bin/weft" train "$work/transformer.bundle" -n 4 \
  --data tokens="$work/tokens.npy" --data targets="$work/targets.npy" \
  --steps 40 --metrics "$work/transformer.metrics.jsonl" \
  --trace "$work/transformer.trace.json"
/usr/bin/python3 - "$work/transformer.metrics.jsonl" <<'PY'
import json, sys
losses = [json.loads(line)["loss"] for line in open(sys.argv[1])]
print(f"loss: step 1 {losses[0]:.4f} -> step {len(losses)} {losses[-1]:.4f}")
sys.exit(0 if losses[-1] < 0.5 * losses[0] else "the loss did not fall")
PY
