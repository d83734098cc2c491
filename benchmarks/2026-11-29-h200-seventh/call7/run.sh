#!/usr/bin/env bash
# Call 7: the final build (f32 one element a thread, f16 runs of eight): GPT-2's fp32 and
# AMP steps and the character GPT's AMP step with their losses' kernels; the rows' f16
# release test.
source .device/prelude.sh
.device/bin/bench --only "gpt2_124M_T1024_B8_step_amp|gpt2_124M_T1024_B8_step|gpt_char_6x384_T256_B64_step_amp" 2>&1 | grep -E "cross_entropy|total|^gpt|fail|pool" > $OUT/steps.txt
cat $OUT/steps.txt
(cd tang-runtime && ../.device/bin/dense_rows_f16 --test-threads=1 > $OUT/test-dense_rows_f16.txt 2>&1; tail -3 $OUT/test-dense_rows_f16.txt)
