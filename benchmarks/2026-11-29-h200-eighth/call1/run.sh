#!/usr/bin/env bash
# Call 1: attention-token-major's tensor-core tests (token-major and packed q/k/v against the
# head-major kernels), then the AMP steps on main, tm and ce builds alternated, PyTorch's AMP anchors.
source .device/prelude.sh
(cd tang-runtime && ../.device/bin/dense_attention --test-threads=1 2>&1 | tail -25) > $OUT/tests.txt 2>&1
(cd tang-runtime && ../.device/bin/dense_attention_coop --test-threads=1 2>&1 | tail -8) >> $OUT/tests.txt 2>&1
cat $OUT/tests.txt | grep -E "test result|FAILED|panicked|failed" | head -20
.device/bin/bench-main --only "gpt_char_6x384_T256_B64_step_amp" > /dev/null 2>&1  # warm-up
for r in 1 2; do for b in bench-main bench-tm bench-ce; do
  echo "== $b round $r" >> $OUT/steps.txt
  .device/bin/$b --only "gpt_char_6x384_T256_B64_step_amp|gpt2_124M_T1024_B8_step_amp|gpt2_124M_T1024_B8_step" >> $OUT/steps.txt 2>&1
done; done
grep -E "^== |strided_copy|split_qkv|merge_qkv|cross_entropy|attention_.*coop|^gpt|ms/step|total" $OUT/steps.txt | head -150
python3 .device/torch_amp_anchors.py --no-compile > $OUT/torch_amp.txt 2>&1; tail -12 $OUT/torch_amp.txt
