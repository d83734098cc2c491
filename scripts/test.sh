#!/usr/bin/env bash
# The README's test command: makes sure a Vulkan driver is present (on a machine without a
# GPU or driver it installs Mesa's software Vulkan driver, lavapipe, as CI does), then runs
# `cargo test --workspace` with any extra arguments passed through.
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

exec cargo test --workspace "$@"
