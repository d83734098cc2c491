#!/bin/bash
source .device/prelude.sh
export TANG_BENCH_COOP_TILES="2,2,4,4,16,1,1;2,4,4,2,32,1,1;4,2,2,4,32,1,1;2,2,4,2,32,1,1;2,2,2,4,32,1,1;4,4,2,2,32,1,1"
T=$OUT/tang.txt
for m in vec4 f16; do
  for c in matmul_f16_4096_coop matmul_f16_gpt_16384x1152x384_NT_coop matmul_f16_gpt2_8192x3072x768_NT_coop; do
    echo "== $m $c" >> $T; TANG_COOP_STAGE=$m timeout 80 .device/bin/bench --only "$c" 2>&1 | grep -v "^\s*$" >> $T
  done
done
grep -E "^==|TFLOP" $T | awk '{print $1, $2, $3, $4, $5}'
