#!/bin/bash
source .device/prelude.sh
echo "== smem probe"; .device/bin/smem-probe 2>&1 | tee $OUT/smem-probe.txt
echo "== bench matmul_f16_gpt2"; .device/bin/bench --only matmul_f16_gpt2 2>&1 | grep -v "^\s*$" | tee $OUT/bench-matmul-gpt2.txt | tail -30
