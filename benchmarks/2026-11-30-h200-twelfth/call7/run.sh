#!/bin/bash
source .device/prelude.sh
M="matmul_f16_4096|matmul_f16_4096x4096x1024_NT|matmul_f16_4096x4096x1024_NN|matmul_f16_4096x4096x1024_TN|matmul_f16_gpt_16384x384x1536_NN|matmul_f16_gpt_16384x1536x384_NT|matmul_f16_gpt_16384x384x384_NN|matmul_f16_gpt_16384x1152x384_NT|matmul_f16_gpt_1152x384x16384_TN|matmul_f16_gpt2_8192x3072x768_NT"
ST="gpt_char_6x384_T256_B64_step_amp|gpt_recipe_6x384_T256_B64_amp"
T=$OUT/tang.txt
for r in 1 2; do
for b in bench-before bench; do
  echo "== $b round $r" >> $T; timeout 70 .device/bin/$b --only "$M|$ST" 2>&1 | grep -E "TFLOP|_amp  " >> $T
done
done
grep -E "^==|TFLOP|_amp  " $T | awk '{print $1, $2, $3, $4, $5}'
