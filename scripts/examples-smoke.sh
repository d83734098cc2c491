#!/usr/bin/env bash
# Runs once each example the README names, with small settings, so that CI notices when a
# README command stops working: quickstart, train_digits (as the README runs it),
# train_char_gpt (a tiny model that writes a checkpoint, then the same command with
# --resume), finetune_gpt2 (a tiny random GPT-2, then the Hugging Face test checkpoint
# in ../shared/fixtures/hf). Debug profile, so it reuses the test build; on the software
# Vulkan driver (lavapipe) where there is no GPU, as scripts/test.sh sets it up. Every
# run writes into a scratch directory, removed at the end. Extra arguments go to each
# `cargo run` (CI passes --locked).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

export LP_NUM_THREADS="${LP_NUM_THREADS:-2}"
if [ "$(uname -s)" = Linux ]; then export TANG_BACKEND="${TANG_BACKEND:-vulkan}"; fi

fixture="$root/../shared/fixtures/hf/gpt2-lmhead"
if [ ! -f "$fixture/config.json" ]; then
  echo "examples-smoke: the Hugging Face test checkpoint $fixture is missing" >&2
  echo "    (shared/fixtures/hf beside the checkout; make_hf_fixtures.py there writes it)" >&2
  exit 1
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# Builds the examples first, so that each line below times the run, not the build.
cargo build -q "$@" -p tang-examples --examples

# run LABEL EXAMPLE [ARGS...]: runs the example in the scratch directory (train_digits
# writes runs/digits where it is started) and prints its time; its output goes to a log
# that is printed when it fails.
run() {
  local label="$1" example="$2"
  shift 2
  local log="$scratch/$label.log" start
  start=$(date +%s)
  if ! (cd "$scratch" && cargo run -q "${cargo_args[@]}" --manifest-path "$root/Cargo.toml" \
    -p tang-examples --example "$example" -- "$@") >"$log" 2>&1; then
    cat "$log" >&2
    echo "examples-smoke: $label FAILED: cargo run -p tang-examples --example $example -- $*" >&2
    exit 1
  fi
  echo "examples-smoke: $label ok in $(($(date +%s) - start)) s"
}
cargo_args=("$@")

total_start=$(date +%s)
run quickstart quickstart
run train_digits train_digits
char=(--batch 4 --block 32 --layers 2 --heads 2 --width 64 --eval-interval 10
  --eval-iters 2 --sample-tokens 20 --out "$scratch/char-gpt")
run train_char_gpt train_char_gpt --steps 20 "${char[@]}"
# Continues from the checkpoint of step 20 (the optimizer state included) to step 30.
run train_char_gpt-resume train_char_gpt --steps 30 "${char[@]}" --resume
# Without a checkpoint --resume starts from step 0 and succeeds: make sure it resumed.
if ! grep -q "resumed from the checkpoint of step 20" "$scratch/train_char_gpt-resume.log"; then
  cat "$scratch/train_char_gpt-resume.log" >&2
  echo "examples-smoke: train_char_gpt --resume did not continue from step 20" >&2
  exit 1
fi
tiny=(--gradient-accumulation-steps 2 --max-iters 4 --eval-interval 2 --eval-iters 2
  --max-new-tokens 20)
run finetune_gpt2-tiny finetune_gpt2 --n-layer 2 --n-head 2 --n-embd 64 --block-size 64 \
  "${tiny[@]}" --out "$scratch/finetune-tiny"
run finetune_gpt2-fixture finetune_gpt2 --init "$fixture" "${tiny[@]}" \
  --out "$scratch/finetune-fixture"
echo "examples-smoke: all examples ran in $(($(date +%s) - total_start)) s"
