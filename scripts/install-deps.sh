#!/usr/bin/env bash
# Installs the Debian 12 packages weft needs that are missing. Safe to rerun.
set -euo pipefail

packages=(
  cmake ninja-build g++ git
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  zlib1g-dev libzstd-dev libedit-dev libxml2-dev libcurl4-openssl-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libopenblas-dev libopenmpi-dev openmpi-bin coinor-libcbc-dev
  libgtest-dev clang-format-14
  python3-numpy python3-onnx python3-torch python3-torchvision libonnx-testdata
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "weft: all ${#packages[@]} packages present"
  exit 0
fi
echo "weft: installing ${#missing[@]} missing packages: ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
