#!/usr/bin/env bash
# The README's test command: makes sure a Vulkan driver is present (on a machine without a
# GPU or driver it installs Mesa's software Vulkan driver, lavapipe, as CI does), then runs
# the workspace's tests: with cargo-nextest where it is installed (and no arguments other
# than --locked are given), which runs the tests of every suite side by side, then the
# doc tests with cargo test; otherwise `cargo test --workspace` with any extra arguments
# passed through (a filter, `-- --nocapture`, ...).
#
# Why nextest: cargo test runs the suites one after another, and a suite's last long
# test leaves the other cores idle; on two cores, once built, the workspace's tests took
# 15.6 minutes that way and 9.8 with nextest and the doc tests (most of it compiling
# shaders on the software adapter).
#
# Why: without a Vulkan driver wgpu falls back to OpenGL on the llvmpipe rasteriser, where
# the GPU suites take hours (attention alone ran for over 40 minutes); on lavapipe the
# whole suite takes minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/apt-install.sh

have_vulkan_driver() {
  local f
  for f in /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json; do
    [ -e "$f" ] && return 0
  done
  return 1
}

if [ "$(uname -s)" = Linux ] && ! have_vulkan_driver; then
  echo "test: no Vulkan driver found; installing Mesa's software Vulkan driver (mesa-vulkan-drivers)"
  apt_install test "install a Vulkan driver for your GPU, or Mesa's lavapipe (package \
mesa-vulkan-drivers or vulkan-swrast)" mesa-vulkan-drivers libvulkan1
fi

# The software driver runs as many threads as the machine has cores; cargo runs test
# binaries in parallel too, so keep them from oversubscribing a small machine.
export LP_NUM_THREADS="${LP_NUM_THREADS:-2}"
# On Linux the suites pick Vulkan: the GL fallback is far too slow for them (macOS uses
# Metal, Windows DX12 or Vulkan, as wgpu chooses).
if [ "$(uname -s)" = Linux ]; then export TANG_BACKEND="${TANG_BACKEND:-vulkan}"; fi

only_locked=1
for arg in "$@"; do
  [ "$arg" = --locked ] || only_locked=0
done
if [ "$only_locked" = 1 ] && [ -z "${TANG_TEST_NO_NEXTEST:-}" ] &&
  cargo nextest --version >/dev/null 2>&1; then
  echo "test: cargo nextest run --workspace, then the doc tests (TANG_TEST_NO_NEXTEST=1: cargo test alone)"
  cargo nextest run --workspace --no-fail-fast "$@"
  exec cargo test --workspace --doc "$@"
fi
exec cargo test --workspace "$@"
