#!/usr/bin/env bash
# Call 3: the final build (Linear's input cast, 128 x 256 for A^T B with odd m): the AMP
# steps with their profiles, GPT-2's LM-head products, PyTorch in the same call, the AMP
# training run on the Rust book, and the AMP release tests.
source .device/prelude.sh
.device/bin/bench --only "gpt_char_6x384_T256_B64_step_amp|gpt_recipe_6x384_T256_B64_amp|gpt2_124M_T1024_B8_step_amp" > $OUT/steps.txt 2>&1
grep -E "^gpt|pool" $OUT/steps.txt
.device/bin/bench --only "matmul_f16_gpt2_8192x768x50257_NN|matmul_f16_gpt2_50257x768x8192_TN|matmul_f16_gpt2_8192x768x50304_NN" > $OUT/head.txt 2>&1
grep -E "TFLOP|FAIL" $OUT/head.txt
python3 .device/torch_amp_anchors.py --no-compile > $OUT/torch-amp.txt 2>&1; grep -iE "gpt|step" $OUT/torch-amp.txt | head -12
python3 examples/scripts/torch_gpt_recipe.py --only gpt_recipe_6x384 > $OUT/torch-recipe.txt 2>&1; tail -4 $OUT/torch-recipe.txt
python3 examples/scripts/torch_gpt2_step.py > $OUT/torch-gpt2.txt 2>&1; tail -4 $OUT/torch-gpt2.txt
.device/bin/train_char_gpt --steps 2000 --data examples/data/rust-book.txt --amp > $OUT/train-amp.txt 2>&1; tail -5 $OUT/train-amp.txt
cd tang-nn && ../.device/bin/trainer_amp --test-threads=1 > $OUT/test-trainer_amp.txt 2>&1; tail -3 $OUT/test-trainer_amp.txt
../.device/bin/autocast --test-threads=1 > $OUT/test-autocast.txt 2>&1; tail -3 $OUT/test-autocast.txt
