#!/usr/bin/env bash
# The GPU checks, run on the lent GPU machine from the repository root with
# what scripts/device-prepare.sh put in CARRY (default build-carry/):
#
#   1. unpacks the carried OpenBLAS .debs (dpkg -x, or ar + tar)
#   2. configures and builds weft runtime-only with CUDA (no MLIR there):
#      libweft_runtime(+_cuda), the weft launcher and the GPU tests
#   3. ctest -L cuda --output-on-failure
#   3b. weft calibrate --target cuda: $OUT/cluster-gpu.json
#   4. per carried bundle: weft relink (its model.o with the runtime built
#      here), runs it, and compares with the cpu reference computed where it
#      was compiled (losses per step / outputs, to the case's rtol)
#
# $OUT (default build-device-out/) gets two files: summary.txt and
# device-check-logs.tar.gz (every log, the runs' metrics, traces and
# outputs). The build (build-device/, ignored by git) is kept for the next
# call. Exit code 0 when everything passed, 1 otherwise.
#
# usage: scripts/device-check.sh [CARRY]
#        (env: OUT, BUILD=build-device, JOBS=nproc, CUDA_ARCHS=90,
#        CTEST_REGEX: only the GPU tests it matches)
# (The functions below run through step(): shellcheck cannot see it.)
# shellcheck disable=SC2317
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
carry="$(cd "${1:-$root/build-carry}" && pwd)" || exit 1
result="${OUT:-$root/build-device-out}"
build="${BUILD:-$root/build-device}"
jobs="${JOBS:-$(nproc)}"
out="$build/check-logs"
rm -rf "$out"
mkdir -p "$out" "$result"
summary="$out/summary.txt"
: >"$summary"
finish() {
  cp "$summary" "$result/summary.txt"
  tar -czf "$result/device-check-logs.tar.gz" -C "$out" .
}
trap finish EXIT
failed=0
note() { echo "$*" | tee -a "$summary"; }
# step NAME LOG COMMAND...: runs COMMAND with its output in $out/LOG.
step() {
  local name="$1" log="$out/$2"
  shift 2
  local start=$SECONDS
  if "$@" >"$log" 2>&1; then
    note "PASS  $name ($((SECONDS - start)) s)"
    return 0
  fi
  note "FAIL  $name ($((SECONDS - start)) s; log: $(basename "$log"))"
  tail -n 30 "$log" | sed 's/^/      /' | tee -a "$summary"
  failed=1
  return 1
}

note "device-check $(date -u +%FT%TZ) on $(hostname)"
{
  nvidia-smi -L
  nvcc --version | tail -n 2
  cmake --version | head -n 1
} 2>&1 | tee -a "$summary"

# 1. OpenBLAS (the CPU kernels; the kernel tests compare with them).
blas="$build/openblas"
unpack() {
  rm -rf "$blas" && mkdir -p "$blas" || return 1
  local deb
  for deb in "$carry"/debs/*.deb; do
    [ -e "$deb" ] || continue
    if command -v dpkg >/dev/null; then
      dpkg -x "$deb" "$blas" || return 1
    else
      local member
      member="$(ar t "$deb" | grep '^data\.tar')" || return 1
      case "$member" in
      *.xz) ar p "$deb" "$member" | tar -xJ -C "$blas" ;;
      *.zst) ar p "$deb" "$member" | zstd -dc | tar -x -C "$blas" ;;
      *) ar p "$deb" "$member" | tar -xz -C "$blas" ;;
      esac || return 1
    fi
  done
  ls "$blas"/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so
}
cmake_blas=()
if step "unpack OpenBLAS" unpack.log unpack; then
  cmake_blas=(-DWEFT_OPENBLAS_ROOT="$blas")
  # libopenblas needs libgfortran (carried too) when linked and run.
  export LD_LIBRARY_PATH="$blas/usr/lib/x86_64-linux-gnu/openblas-pthread:$blas/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# 2. Runtime-only build with CUDA.
step "configure (runtime-only, CUDA)" configure.log \
  cmake -G Ninja -S "$root" -B "$build" -DWEFT_RUNTIME_ONLY=ON \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" \
  "${cmake_blas[@]}"
grep -q "CUDA backend enabled" "$out/configure.log" ||
  note "      WARNING: the CUDA backend is not enabled (configure.log says why)"
step "build" build.log cmake --build "$build" -j "$jobs"
export PATH="$build/bin:$PATH"

# 3. The GPU tests.
ctest_only=()
[ -n "${CTEST_REGEX:-}" ] && ctest_only=(-R "$CTEST_REGEX")
step "ctest -L cuda ${CTEST_REGEX:-}" ctest.log \
  ctest --test-dir "$build" -L cuda "${ctest_only[@]}" --output-on-failure \
  --timeout 900
grep -E "tests passed|\((Skipped|Failed|Timeout)\)" "$out/ctest.log" |
  sed 's/^/      /' | tee -a "$summary"
# Why a test skipped (ctest prints a passing or skipped test's output only
# when asked): its SKIP line.
grep -E "^[[:space:]]*[0-9]+ - .* \(Skipped\)" "$out/ctest.log" |
  sed -E 's/^[[:space:]]*[0-9]+ - (.*) \(Skipped\)/\1/' |
  while read -r name; do
    ctest --test-dir "$build" -R "^${name//./\\.}\$" -V 2>&1 |
      grep -m 3 -i "skip" | sed "s/^/      $name: /" | tee -a "$summary"
  done

# The GPU's figures for the cost model ($OUT/cluster-gpu.json; weftc plan
# --cluster reads it where weftc is).
step "weft calibrate --target cuda" calibrate.log \
  weft calibrate --target cuda -o "$result/cluster-gpu.json"
cat "$out/calibrate.log" >>"$summary"

# 4. The carried bundles.
compare_outputs() { # REFERENCE_DIR OUTPUT_DIR RTOL
  python3 - "$@" <<'PY'
import glob, os, sys
import numpy as np
ref_dir, out_dir, rtol = sys.argv[1], sys.argv[2], float(sys.argv[3])
ok = True
for ref_path in sorted(glob.glob(os.path.join(ref_dir, "*.npy"))):
    ref = np.load(ref_path)
    got = np.load(os.path.join(out_dir, os.path.basename(ref_path)))
    err = np.abs(got.astype(np.float64) - ref) / (np.abs(ref) + 1e-6)
    worst = float(err.max()) if err.size else 0.0
    good = got.shape == ref.shape and np.allclose(got, ref, rtol=rtol, atol=1e-6)
    print(f"{os.path.basename(ref_path)}: worst relative {worst:.2e} {'ok' if good else 'MISMATCH'}")
    ok &= bool(good)
sys.exit(0 if ok else 1)
PY
}
run_case() { # DIR
  local dir="$1" name rtol args
  name="$(basename "$dir")"
  rtol="$(cat "$dir/rtol")"
  read -r -a args <<<"$(sed "s|@DATA@|$dir/data|g" "$dir/args")"
  local logs="$out/$name"
  rm -rf "$logs" && mkdir -p "$logs"
  weft relink "$dir/bundle" || return 1
  if [ -f "$dir/reference.jsonl" ]; then
    weft train "$dir/bundle" "${args[@]}" --metrics "$logs/metrics.jsonl" \
      >"$logs/summary.json" || return 1
    python3 "$root/test/tools/compare_metrics.py" "$dir/reference.jsonl" \
      "$logs/metrics.jsonl" --rtol "$rtol" || return 1
    # The measured memory is the GPU's: at least the planned arena and the
    # parameters.
    python3 - "$logs/summary.json" "$dir/bundle/manifest.json" <<'PY' || return 1
import json, sys
summary = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
manifest = json.load(open(sys.argv[2]))
planned = manifest.get("predicted", {}).get("memory_breakdown_bytes", {})
arena = planned.get("intermediates_arena", 0) + planned.get("parameters", 0)
peak = summary.get("peak_memory_bytes", 0)
ok = summary.get("memory_measured") == "device" and peak >= arena and peak > 0
print(f"memory: {summary.get('memory_measured')} peak {peak} bytes, arena and "
      f"parameters {arena} "
      f"({'ok' if ok else 'WRONG'})")
sys.exit(0 if ok else 1)
PY
    # The same steps traced (the GPU waited for after every launch).
    weft train "$dir/bundle" "${args[@]}" --trace "$logs/trace.json"
  else
    weft run "$dir/bundle" "${args[@]}" --output-dir "$logs/outputs" ||
      return 1
    compare_outputs "$dir/reference" "$logs/outputs" "$rtol" || return 1
    weft run "$dir/bundle" "${args[@]}" --repeat 20 --warmup 3
  fi
}
for dir in "$carry"/bundles/*/; do
  [ -f "$dir/bundle/manifest.json" ] || continue
  dir="${dir%/}"
  step "bundle $(basename "$dir")" "bundle-$(basename "$dir").log" \
    run_case "$dir"
done

# The bundles' runs record their steps as CUDA graphs (CudaDevice.cpp);
# say when one could not.
grep -h "without a CUDA graph" "$out"/bundle-*.log 2>/dev/null |
  sed 's/^/      NOTE: /' | tee -a "$summary"
note "device-check: $([ "$failed" = 0 ] && echo "all passed" || echo "FAILURES")"
exit "$failed"
