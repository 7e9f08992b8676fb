#!/usr/bin/env bash
# Regenerates .ci/lavapipe-autotune.db.xz: cubecl's autotune choices for the kernels the test
# suite runs on Mesa's lavapipe (`wgpu:cpu`). `.ci/run` installs it as a clean clone's cubecl
# cache, so CI does not benchmark every kernel's candidates again on each clone; a kernel the
# seed lacks, or one a newer Burn tunes among other candidates, is tuned as usual. Run it after a
# Burn upgrade, on a machine with lavapipe (Debian: mesa-vulkan-drivers libvulkan1):
#
#   scripts/lavapipe-autotune-seed.sh
#
# The suite runs in a cubecl environment of its own (`target/environment/<name>.db`), so the
# workspace's usual cache is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
name="lavapipe-seed-$$"
db="target/environment/$name.db"
trap 'rm -f "$db" "$db"-*' EXIT
CUBECL_ENVIRONMENT="$name" CUBECL_ENVIRONMENT_RECORDS=off JINN_REQUIRE_GPU=1 \
    cargo test --workspace --features jinn/wgpu
python3 scripts/lavapipe_autotune_seed.py export "$db" .ci/lavapipe-autotune.db.xz
