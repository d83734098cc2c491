#!/usr/bin/env bash
# Call 2: tests of the new paths on the H200 (the residual on the tensor cores, pack/unpack
# of 16 words a thread, autocast's linear_residual bit-equal to the two-op form), then
# main (bench-base) against this build (bench-new: pack/unpack 16 words a thread, column
# sums four rows in flight, residuals in the products), alternated, then GPT-2's LM head at
# three vocabularies, then PyTorch's anchors.
source .device/prelude.sh
(cd tang-runtime && ../.device/bin/dense_matmul_residual 2>&1 | tail -3; ../.device/bin/ops_layout 2>&1 | tail -3) > $OUT/tests.txt 2>&1
(cd tang-nn && ../.device/bin/autocast --test-threads=1 2>&1 | tail -5) >> $OUT/tests.txt 2>&1
grep -E "test result|FAILED|panicked" $OUT/tests.txt
CASES="gpt_char_6x384_T256_B64_step|gpt_char_6x384_T256_B64_step_amp|gpt_recipe_6x384_T256_B64_amp|gpt2_124M_T1024_B8_step_amp|gpt2_124M_T1024_B8_step"
.device/bin/bench-base --only "gpt_char_6x384_T256_B64_step_amp" > /dev/null 2>&1  # warm-up
for r in 1 2; do for b in bench-base bench-new; do
  echo "== $b round $r" >> $OUT/steps.txt
  .device/bin/$b --only "$CASES" >> $OUT/steps.txt 2>&1
done; done
grep -E "^== |pack_|unpack_|reduce_cols_v4 \[|add \[6144|add \[3072|^gpt|total$" $OUT/steps.txt | head -120
M="matmul_f16_gpt2_8192x50257x768_NT|matmul_f16_gpt2_8192x50260x768_NT|matmul_f16_gpt2_8192x50304x768_NT|matmul_f16_gpt2_8192x768x50257_NN|matmul_f16_gpt2_8192x768x50260_NN|matmul_f16_gpt2_8192x768x50304_NN|matmul_f16_gpt2_50257x768x8192_TN|matmul_f16_gpt2_50260x768x8192_TN|matmul_f16_gpt2_50304x768x8192_TN"
.device/bin/bench-new --only "$M" > $OUT/lmhead.txt 2>&1; grep matmul_f16_gpt2 $OUT/lmhead.txt
python3 .device/torch_amp_anchors.py --no-compile > $OUT/torch_amp.txt 2>&1; tail -6 $OUT/torch_amp.txt
python3 examples/scripts/torch_gpt2_step.py > $OUT/torch_gpt2.txt 2>&1; tail -6 $OUT/torch_gpt2.txt
