#!/usr/bin/env bash
# Call 8: GPT-2's LM-head input gradient (8192 x 768 x k, k = 50,257 and 50,304) with
# every tensor-core preset forced, beside the automatic choice.
source .device/prelude.sh
.device/bin/bench --only matmul_f16_gpt2_8192x768x5 > $OUT/head-nn.txt 2>&1
grep -E "TFLOP|FAIL" $OUT/head-nn.txt
