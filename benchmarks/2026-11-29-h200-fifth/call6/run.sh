#!/usr/bin/env bash
# Call 6: where GPT-2 small's step spends its GPU time (fp32 and AMP), per kernel.
source .device/prelude.sh
.device/bin/bench --only gpt2_124M_T1024_B8_step > $OUT/gpt2-profile.txt 2>&1
grep -E "^gpt2|GPU time|total|^ +[0-9]" $OUT/gpt2-profile.txt | head -120
