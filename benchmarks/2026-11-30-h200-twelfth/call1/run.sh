#!/bin/bash
source .device/prelude.sh
S=$OUT/stats.txt
.device/bin/shader-stats .device/wgsl/*.wgsl > $S 2>&1
cat $S | head -40
M="matmul_f16_4096|matmul_f16_4096x4096x1024_NT|matmul_f16_gpt_16384x384x1536_NN|matmul_f16_gpt_16384x1536x384_NT|matmul_f16_gpt_16384x384x384_NN"
T=$OUT/tang.txt
TANG_BENCH_COOP_TILES="2,2,4,4,32,2,1,1,4;2,2,4,4,32,2,1,1,2;2,2,4,4,16,2,1,1,4;2,2,4,4,32,2,1,1,1" timeout 200 .device/bin/bench --only "$M" > $T 2>&1
grep -E "TFLOP|error|rror" $T | awk '{print $1, $2, $3, $4, $5}'
timeout 100 python3 examples/scripts/torch_matmul_f16.py > $OUT/torch.txt 2>&1
grep -E "4096|16384x384x1536|16384x1536x384|16384x384x384" $OUT/torch.txt | head -20
