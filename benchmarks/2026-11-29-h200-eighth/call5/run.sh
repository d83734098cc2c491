#!/usr/bin/env bash
# Call 5: the session's final build (82e9e9c: token-major / packed attention and pack of
# 16 words a thread on 7ed7c68) on the steps.
source .device/prelude.sh
.device/bin/bench --only "gpt_char_6x384_T256_B64_step_amp|gpt2_124M_T1024_B8_step_amp|gpt_char_6x384_T256_B64_step_fp32" > $OUT/steps.txt 2>&1
grep -E "^gpt|total$|pool" $OUT/steps.txt
