#!/usr/bin/env bash
# Call 2: autocast's Linear input cast (bench) against main (bench-old), interleaved;
# GPT-2's LM-head products (every tensor-core preset forced) with PyTorch's.
source .device/prelude.sh
CASES="gpt_char_6x384_T256_B64_step_amp|gpt_recipe_6x384_T256_B64_amp|gpt2_124M_T1024_B8_step_amp"
for r in 1 2; do
  for b in bench-old bench; do
    echo "== $b run $r"
    .device/bin/$b --only "$CASES" 2>&1 | grep -E "matmul_coop|to_dtype|total|^gpt|fail|pool"
  done
done > $OUT/steps.txt 2>&1
grep -E "^==|^gpt|pool" $OUT/steps.txt
.device/bin/bench --only matmul_f16_gpt2_ > $OUT/head.txt 2>&1
python3 examples/scripts/torch_matmul_f16.py > $OUT/torch-matmul.txt 2>&1
grep -E "gpt2" $OUT/head.txt $OUT/torch-matmul.txt | grep -v bf16
