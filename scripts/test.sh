#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit tests and the
# lit suite: dialects, passes, frontend, ONNX conformance, real models).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
build="${WEFT_BUILD_DIR:-$root/build}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "$build" --output-on-failure
