#!/usr/bin/env bash
# Prepares the GPU training-step benchmark for the lent GPU machine
# (bench/gpu/run.sh runs it there): a GPT-2-small-shaped model from
# examples/gpt/make_gpt.py compiled here with --train --dtype bf16 --target
# cuda. Its 1.9 GB of parameters and AdamW state stay here: CARRY/gpt2/
# gets the bundle without them (model.o, manifest, plan) and the parameter
# file's header, from which bench/gpu/fill_params.py writes the file there.
#
# CARRY/gpt2/variants/NAME/ is the same model compiled with more flags, an
# A/B against weft's defaults, for each NAME=FLAGS of VARIANTS (separated by
# ";"; default "no-recompute=--fuse-recompute off;seq-major=--attention-
# seq-major on"; empty: none). The
# flags must leave the parameters as they are: one parameter file serves
# every variant.
#
# usage: bench/gpu/prepare.sh [BUILD_DIR] [CARRY]  (env: LAYERS HIDDEN HEADS
#        SEQ VOCAB BATCH; default GPT-2 small at batch 8 x 1024; VARIANTS)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
carry="${2:-$root/build-carry}"
shape=(--layers "${LAYERS:-12}" --hidden "${HIDDEN:-768}" --heads "${HEADS:-12}"
  --seq "${SEQ:-1024}" --vocab "${VOCAB:-50257}" --batch "${BATCH:-8}")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
dest="$carry/gpt2"
rm -rf "$dest" && mkdir -p "$dest"
/usr/bin/python3 "$root/examples/gpt/make_gpt.py" "${shape[@]}" -o "$work/gpt2.onnx"
"$build/bin/weftc" compile "$work/gpt2.onnx" -o "$work/bundle" --train \
  --dtype bf16 --target cuda --devices 1 --dp 1
mkdir -p "$dest/bundle"
cp "$work/bundle/model.o" "$work/bundle/manifest.json" "$work/bundle/plan.txt" \
  "$dest/bundle/"
IFS=";" read -r -a variants <<<"${VARIANTS-no-recompute=--fuse-recompute off;seq-major=--attention-seq-major on;norm-bf16=--fold-norm-casts on;pending=--attention-seq-major on --fold-norm-casts on}"
for variant in "${variants[@]}"; do
  [ -n "$variant" ] || continue
  name="${variant%%=*}"
  read -r -a flags <<<"${variant#*=}"
  "$build/bin/weftc" compile "$work/gpt2.onnx" -o "$work/$name" --train \
    --dtype bf16 --target cuda --devices 1 --dp 1 "${flags[@]}"
  mkdir -p "$dest/variants/$name"
  cp "$work/$name/model.o" "$work/$name/manifest.json" \
    "$work/$name/plan.txt" "$dest/variants/$name/"
done
/usr/bin/python3 - "$work/bundle/params.rank0.safetensors" "$dest/params-header.json" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
json.dump(header, open(sys.argv[2], "w"))
PY
echo "${shape[*]}" >"$dest/shape"
echo "bench/gpu/prepare: $(du -sh "$dest" | cut -f1) in $dest"
