#!/usr/bin/env bash
# Prepares, on this machine, what scripts/device-check.sh needs on the lent
# GPU machine (which has no MLIR, no OpenBLAS and no network), in CARRY
# (default build-carry/, ignored by git: carry it with the run, e.g.
# carry=["build-carry"]):
#
#   CARRY/debs/       Debian's OpenBLAS (pthread) and its Fortran runtime,
#                     fetched with apt-get download
#   CARRY/bundles/N/  one test case each: bundle/ (weftc compile --target
#                     cuda; its model.o, parameters and manifest, not the
#                     executable: weft relink makes that there), data/ (the
#                     .npy inputs), args (the run's arguments, @DATA@ for the
#                     data folder), rtol, and the same model's run on cpu
#                     here: reference.jsonl (training) or reference/ (the
#                     outputs of an inference run)
#
# usage: scripts/device-prepare.sh [BUILD_DIR] [CARRY]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
carry="${2:-$root/build-carry}"
py=/usr/bin/python3 # Debian's, with torch and onnx
export PATH="$build/bin:$PATH"

rm -rf "$carry"
mkdir -p "$carry/debs" "$carry/bundles"
(cd "$carry/debs" &&
  apt-get download libopenblas0-pthread libopenblas-pthread-dev \
    libgfortran5 libquadmath0)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# add_case NAME MODEL.onnx RTOL "ARGS (@DATA@ = the data folder)" [weftc flags]
# compiles MODEL for cuda into CARRY/bundles/NAME and runs it on cpu here
# for the reference. The data files must already be in $work/NAME-data.
add_case() {
  local name="$1" model="$2" rtol="$3" args="$4"
  shift 4
  local dir="$carry/bundles/$name" data="$work/$name-data"
  mkdir -p "$dir"
  cp -r "$data" "$dir/data"
  weftc compile "$model" -o "$dir/bundle" --target cuda "$@"
  rm -f "$dir/bundle/model" # linked on the GPU machine (weft relink)
  # The reference fuses as --target cuda does (train-fused.test checks the
  # fused cpu program against the unfused one).
  weftc compile "$model" -o "$work/$name-cpu" --fuse elementwise "$@"
  echo "$args" >"$dir/args"
  echo "$rtol" >"$dir/rtol"
  local run_args="${args//@DATA@/$dir/data}"
  if grep -q '"mode": "train"' "$dir/bundle/manifest.json"; then
    # shellcheck disable=SC2086
    weft train "$work/$name-cpu" $run_args --metrics "$dir/reference.jsonl" \
      >/dev/null
  else
    # shellcheck disable=SC2086
    weft run "$work/$name-cpu" $run_args --output-dir "$dir/reference"
  fi
}

# The MLP of the training tests (MSE loss), 8 steps of AdamW.
mkdir -p "$work/mlp-train-data"
"$py" "$root/test/tools/make_mlp.py" "$work/mlp.onnx" --layers 3 --width 32 \
  --rows 16
"$py" -c "import numpy as np; r = np.random.default_rng(1)
for n in 'xy': np.save('$work/mlp-train-data/' + n + '.npy', r.standard_normal((64, 32)).astype(np.float32))"
add_case mlp-train "$work/mlp.onnx" 1e-4 \
  "--data x=@DATA@/x.npy --data y=@DATA@/y.npy --steps 8" --train

# The README's MLP, inference.
mkdir -p "$work/mlp-infer-data"
"$py" "$root/examples/mlp/make_model.py" "$work/mlp-infer-data"
add_case mlp-infer "$work/mlp-infer-data/mlp.onnx" 1e-4 \
  "--input x=@DATA@/x.npy"

# The example causal transformer LM (embedding, attention, GELU MLP,
# cross-entropy), fp32 and bf16 mixed precision, 8 steps each.
mkdir -p "$work/lm-data"
"$py" "$root/examples/transformer/make_model.py" "$work/lm-data"
cp -r "$work/lm-data" "$work/lm-train-data"
cp -r "$work/lm-data" "$work/lm-train-bf16-data"
lm_args="--data tokens=@DATA@/tokens.npy --data targets=@DATA@/targets.npy --steps 8"
add_case lm-train "$work/lm-data/transformer.onnx" 1e-4 "$lm_args" --train
add_case lm-train-bf16 "$work/lm-data/transformer.onnx" 2e-2 "$lm_args" \
  --train --dtype bf16

# A small GPT (q, k, v split into heads from a packed projection) with
# fused attention reading them seq-major ([B, S, H, D], no transposes):
# fp32 (the SIMT kernels) and bf16 (tensor cores, and the layer norms
# writing the products' bf16: --fold-norm-casts), 6 steps each.
"$py" "$root/examples/gpt/make_gpt.py" --layers 2 --hidden 64 --heads 4 \
  --seq 32 --vocab 97 --batch 4 -o "$work/gpt.onnx"
for name in gpt-seqmajor gpt-seqmajor-bf16; do
  mkdir -p "$work/$name-data"
  "$py" -c "import numpy as np; r = np.random.default_rng(2)
for n in ('tokens', 'targets'): np.save('$work/$name-data/' + n + '.npy', r.integers(0, 97, (8, 32)).astype(np.int64))"
done
gpt_args="--data tokens=@DATA@/tokens.npy --data targets=@DATA@/targets.npy --steps 6"
add_case gpt-seqmajor "$work/gpt.onnx" 1e-4 "$gpt_args" --train \
  --fuse-attention on --attention-seq-major on
add_case gpt-seqmajor-bf16 "$work/gpt.onnx" 2e-2 "$gpt_args" --train \
  --dtype bf16 --fuse-attention on --attention-seq-major on \
  --fold-norm-casts on

# Models built from the importer's composed ops (test/train/check_training.py's,
# exported with its weights and rows): a U-Net (GroupNorm as a layer norm,
# ConvTranspose as conv_grad_input and its gradients, Resize and reflect
# padding as gathers and scatter_adds along spatial axes) and a LLaMA-style
# LM (RMSNorm, rotary tables, weft.sin / weft.cos folded), 6 steps each; and
# a recurrent LM (a bidirectional LSTM and a GRU unrolled at import: many small
# products, splits and concats, a split's gradient as a concat; each recurrent
# weight's gradient as one merged product), and the same over unsorted packed
# sequences (weft.topk's GPU kernel sorts the lengths; flattened gathers and
# scatter_adds reorder the rows).
for name in unet llama rnn_lm unsorted_lm; do
  mkdir -p "$work/$name-train-data"
  "$py" - "$root/test/train" "$name" "$work/$name-train-data" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import check_training as ct
ct.export_model(sys.argv[2], sys.argv[3])
PY
done
add_case unet-train "$work/unet-train-data/unet.onnx" 1e-4 \
  "--data x=@DATA@/x.npy --data target=@DATA@/target.npy --steps 6" --train
add_case llama-train "$work/llama-train-data/llama.onnx" 1e-4 \
  "--data tokens=@DATA@/tokens.npy --data targets=@DATA@/targets.npy --steps 6" \
  --train
add_case rnn_lm-train "$work/rnn_lm-train-data/rnn_lm.onnx" 1e-4 \
  "--data tokens=@DATA@/tokens.npy --data targets=@DATA@/targets.npy --steps 6" \
  --train
add_case unsorted_lm-train "$work/unsorted_lm-train-data/unsorted_lm.onnx" 1e-4 \
  "--data tokens=@DATA@/tokens.npy --data lengths=@DATA@/lengths.npy --data targets=@DATA@/targets.npy --steps 6" \
  --train

echo "device-prepare: $(du -sh "$carry" | cut -f1) in $carry; carry it to the GPU" \
  "machine and run scripts/device-check.sh there"
