#!/bin/bash
source .device/prelude.sh
M="matmul_f16_4096|matmul_f16_4096x4096x1024_NN|matmul_f16_4096x4096x1024_NT|matmul_f16_4096x4096x1024_TN|matmul_f16_gpt_16384x1152x384_NT|matmul_f16_gpt_16384x384x1152_NN|matmul_f16_gpt_1152x384x16384_TN|matmul_f16_gpt_16384x384x384_NT|matmul_f16_gpt_16384x384x384_NN|matmul_f16_gpt_384x384x16384_TN|matmul_f16_gpt_16384x1536x384_NT|matmul_f16_gpt_16384x384x1536_NN|matmul_f16_gpt_1536x384x16384_TN|matmul_f16_gpt_16384x384x1536_NT|matmul_f16_gpt_16384x1536x384_NN|matmul_f16_gpt_384x1536x16384_TN|matmul_f16_gpt2_8192x2304x768_NT|matmul_f16_gpt2_8192x768x3072_NT|matmul_f16_gpt2_8192x3072x768_NT"
T=$OUT/tang.txt
for r in 1 2; do
for m in f16 vec4 vec4s vec2; do
  echo "== $m $r" >> $T; TANG_COOP_STAGE=$m timeout 60 .device/bin/bench --only "$M" 2>&1 | grep -v "^\s*$" >> $T
done
done
grep -E "^==|matmul_f16_4096 |16384x1152x384_NT|gpt2_8192x3072" $T
