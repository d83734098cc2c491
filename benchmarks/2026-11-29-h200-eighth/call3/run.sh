#!/usr/bin/env bash
# Call 3: the residual's tests on the H200 (product rounded on the bits), then main
# (bench-base) against this build (bench-new: pack/unpack 16 words a thread, residuals in
# the products, the bench's char GPT adding them with forward_residual), alternated, then
# PyTorch's anchors.
source .device/prelude.sh
(cd tang-runtime && ../.device/bin/dense_matmul_residual 2>&1 | tail -30) > $OUT/tests.txt 2>&1
(cd tang-nn && ../.device/bin/autocast --test-threads=1 2>&1 | tail -30) >> $OUT/tests.txt 2>&1
grep -E "test result|FAILED|panicked|differs|element" $OUT/tests.txt | head -20
CASES="gpt_char_6x384_T256_B64_step_fp32|gpt_char_6x384_T256_B64_step_amp|gpt2_124M_T1024_B8_step_amp|gpt2_124M_T1024_B8_step"
.device/bin/bench-base --only "gpt_char_6x384_T256_B64_step_amp" > /dev/null 2>&1  # warm-up
for r in 1 2; do for b in bench-base bench-new; do
  echo "== $b round $r" >> $OUT/steps.txt
  .device/bin/$b --only "$CASES" >> $OUT/steps.txt 2>&1
done; done
grep -E "^== |pack_|unpack_|add \[6144|^gpt|total$" $OUT/steps.txt | head -120
python3 .device/torch_amp_anchors.py --no-compile > $OUT/torch_amp.txt 2>&1; tail -6 $OUT/torch_amp.txt
