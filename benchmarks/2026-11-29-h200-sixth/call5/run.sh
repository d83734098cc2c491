#!/usr/bin/env bash
# Call 5: the cross-entropy gradient kept in f32 until the upstream gradient has scaled it
# (bench, ce-grad branch) against the build before (bench-old, feab1c9), interleaved; an
# AMP training run of the new build.
source .device/prelude.sh
STEPS="gpt_char_6x384_T256_B64_step_amp|gpt_recipe_6x384_T256_B64_amp|gpt2_124M_T1024_B8_step_amp"
for r in 1 2; do
  for b in bench-old bench; do
    echo "== $b run $r"
    .device/bin/$b --only "$STEPS" 2>&1 | grep -E "cross_entropy|to_dtype|mul |matmul_coop \[(2358|25152|384)|total|^gpt|fail|pool"
  done
done > $OUT/steps.txt 2>&1
grep -E "^==|^gpt_|^gpt2_124M_T1024_B8_step_amp " $OUT/steps.txt
.device/bin/train_char_gpt --steps 2000 --data examples/data/rust-book.txt --amp > $OUT/train-amp.txt 2>&1; grep -E "best val" $OUT/train-amp.txt
