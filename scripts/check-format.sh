#!/usr/bin/env bash
# Fails when a C++/CUDA source is not clang-format (LLVM style) clean.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
files=$(find dialects passes frontends runtime tools test/unit test/cuda \
  \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)
clang-format-14 --dry-run -Werror $files
echo "format: $(echo "$files" | wc -l) files clean"
