#!/usr/bin/env bash
# Installs what is missing, builds weft, then compiles the example MLP into a
# bundle and runs it on CPU, checking the result against NumPy.
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
