#!/bin/bash
source .device/prelude.sh
T=$OUT/tang.txt
export TANG_BENCH_COOP_TILES="2,2,4,4,32,2,1,1,4;2,2,4,4,32,2,1,1,2;2,2,4,4,16,2,1,1,4;2,2,4,4,32,2,1,1,1"
for b in matmul_f16_4096 matmul_f16_gpt_16384x384x1536_NN matmul_f16_gpt_16384x1536x384_NT matmul_f16_gpt_16384x384x384_NN matmul_f16_4096x4096x1024_NT; do
  timeout 100 .device/bin/bench --only "${b}_coop" >> $T 2>&1
done
grep -E "TFLOP|rror|FAIL" $T | awk '{print $1, $2, $3, $4, $5, $6}'
