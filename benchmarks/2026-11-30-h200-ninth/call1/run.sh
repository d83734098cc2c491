#!/bin/bash
source .device/prelude.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
echo "== smem probe"; .device/bin/smem-probe 2>&1 | tee $OUT/smem-probe.txt
echo "== bench matmul_f16_4096 and gpt2"; .device/bin/bench --only "matmul_f16_4096|matmul_f16_gpt2" 2>&1 | grep -v "^\s*$" | tee $OUT/bench-matmul.txt | tail -40
echo "== torch"; python3 examples/scripts/torch_matmul_f16.py 2>&1 | tee $OUT/torch-matmul.txt | tail -30
