#!/usr/bin/env bash
# Call 2: the FEW_BLOCKS choice (bench) against the previous automatic choice
# (bench-exp with TANG_EXP_TILE forcing the default block), interleaved; PyTorch's
# AMP steps and products in the same call; an AMP training run; the preset test.
source .device/prelude.sh
CASES="matmul_f16_gpt_16384x384x1536_NN|matmul_f16_gpt_16384x384x1536_NT|matmul_f16_gpt_16384x384x1152_NN|matmul_f16_gpt_16384x384x384_NT|matmul_f16_gpt_16384x384x384_NN|matmul_f16_gpt_16384x1152x384_NT|matmul_f16_gpt_16384x1536x384_NT|matmul_f16_gpt2_8192x768x3072_NT|matmul_f16_gpt2_8192x2304x768_NT|matmul_f16_gpt2_8192x3072x768_NT|matmul_f16_4096"
.device/bin/bench --only "$CASES" > $OUT/auto-matmul.txt 2>&1; grep TFLOP $OUT/auto-matmul.txt
STEPS="gpt_char_6x384_T256_B64_step_amp|gpt_recipe_6x384_T256_B64_amp|gpt2_124M_T1024_B8_step_amp"
for r in 1 2; do
  echo "== before (default block forced), run $r"
  TANG_EXP_TILE=2,2,4,4,32,1,1,1 .device/bin/bench-exp --only "$STEPS" 2>&1 | grep -E "matmul_coop|total|^gpt|fail"
  echo "== after (FEW_BLOCKS automatic), run $r"
  .device/bin/bench --only "$STEPS" 2>&1 | grep -E "matmul_coop|total|^gpt|fail"
done > $OUT/steps.txt 2>&1
grep -E "^==|^gpt" $OUT/steps.txt
python3 .device/torch_amp_anchors.py --no-compile > $OUT/torch-amp.txt 2>&1; grep gpt_step $OUT/torch-amp.txt
python3 examples/scripts/torch_gpt_recipe.py --only gpt_recipe_6x384 > $OUT/torch-recipe.txt 2>&1; tail -4 $OUT/torch-recipe.txt
python3 examples/scripts/torch_gpt2_step.py > $OUT/torch-gpt2.txt 2>&1; tail -4 $OUT/torch-gpt2.txt
python3 examples/scripts/torch_matmul_f16.py > $OUT/torch-matmul.txt 2>&1; grep -E "f16_gpt|f16_4096 " $OUT/torch-matmul.txt
.device/bin/train_char_gpt --steps 2000 --data examples/data/rust-book.txt --amp > $OUT/train-amp.txt 2>&1; tail -5 $OUT/train-amp.txt
cd tang-runtime && timeout 280 ../.device/bin/dense_f16 --test-threads=1 > $OUT/test-dense_f16.txt 2>&1; tail -15 $OUT/test-dense_f16.txt
