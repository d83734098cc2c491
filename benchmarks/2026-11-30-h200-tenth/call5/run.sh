#!/bin/bash
source .device/prelude.sh
M="matmul_f16_4096|matmul_f16_4096x4096x1024_NT|matmul_f16_gpt_16384x1152x384_NT|matmul_f16_gpt_16384x384x384_NN|matmul_f16_gpt_1152x384x16384_TN|matmul_f16_gpt2_8192x3072x768_NT"
T=$OUT/tang.txt
for m in f16 vec4 vec4sel vec4late f16late; do
  echo "== $m" >> $T; TANG_COOP_STAGE=$m timeout 60 .device/bin/bench --only "$M" 2>&1 | grep -v "^\s*$" >> $T
done
grep -E "^==|TFLOP" $T | awk '{print $1, $2, $3, $4, $5}'
