#!/usr/bin/env bash
# Builds the release `jinn` with a GPU feature (FEATURES, default `vulkan`: SPIR-V kernels on
# Vulkan; `wgpu`: WGSL), strips it and compresses it with xz, for copying to a machine that has a
# GPU but no Rust toolchain (docs/gpu.md).
#
#   scripts/pack-gpu-binary.sh [OUT]        # default OUT: target/jinn-wgpu-linux-x86_64.xz
#   # on the GPU machine:  xz -dc jinn-wgpu-linux-x86_64.xz > jinn && chmod +x jinn
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
out="${1:-$target/jinn-wgpu-linux-$(uname -m).xz}"
cargo build --release -p jinn --features "${FEATURES:-vulkan}"
stripped="$(mktemp)"
trap 'rm -f "$stripped" "$out.tmp"' EXIT
strip -o "$stripped" "$target/release/jinn"
xz -9e -T0 -c "$stripped" >"$out.tmp"
mv "$out.tmp" "$out"
echo "stripped: $(stat -c %s "$stripped") bytes; packed: $(stat -c %s "$out") bytes -> $out"
echo "unpack on the GPU machine: xz -dc $(basename "$out") > jinn && chmod +x jinn"
