#!/usr/bin/env bash
# Call 1: shared-memory store probes of the tensor-core matmul (line permutation, lane
# rotation, no stores after the first tile), PyTorch fp16 in the same call.
source .device/prelude.sh
CASES="matmul_f16_4096|matmul_f16_gpt_16384x384x1536_NN|matmul_f16_gpt_16384x1536x384_NT|matmul_f16_gpt_1152x384x16384_TN|matmul_f16_4096x4096x1024_NT|matmul_f16_4096x4096x1024_TN|matmul_f16_gpt_16384x384x384_NN"
for v in 0 1 2 3 4 0 3; do
  echo "== probe $v"
  TANG_PROBE_STORE=$v .device/bin/bench-probe --only "$CASES" 2>&1 | grep -E "TFLOP|fail|rror" | grep -v "_coop"
done > $OUT/probe.txt 2>&1
cat $OUT/probe.txt
python3 examples/scripts/torch_matmul_f16.py > $OUT/torch-matmul.txt 2>&1
grep -E "TFLOP" $OUT/torch-matmul.txt | head -30
