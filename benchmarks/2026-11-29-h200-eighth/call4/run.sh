#!/usr/bin/env bash
# Call 4: the residual rounded with pack2x16float in the tensor-core store: autocast's
# bit-equality test on the H200, then main against this build on the two AMP steps.
source .device/prelude.sh
(cd tang-nn && ../.device/bin/autocast --test-threads=1 a_linear_with 2>&1 | tail -12) > $OUT/tests.txt 2>&1
grep -E "test result|FAILED|panicked|differs" $OUT/tests.txt | head
for b in bench-base bench-new bench-base bench-new; do
  echo "== $b" >> $OUT/steps.txt
  .device/bin/$b --only "gpt_char_6x384_T256_B64_step_amp|gpt2_124M_T1024_B8_step_amp" >> $OUT/steps.txt 2>&1
done
grep -E "^== |^gpt|total$" $OUT/steps.txt
