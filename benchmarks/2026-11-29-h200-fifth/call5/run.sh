#!/usr/bin/env bash
# Call 5: the column-sum tree with four rows per step (bench-after, 0c1952e) against one
# (bench-before: the same build with a168bb9's reduce/mod.rs), PyTorch's g.sum(0); the AMP
# step's profile; eight-subgroup tensor-core tiles with two staging buffers.
source .device/prelude.sh
for b in bench-before bench-after bench-before bench-after; do
  echo "== $b"; .device/bin/$b --only bias_grad 2>&1 | grep -E "GB/s|fail"
done > $OUT/bias-grad.txt 2>&1
cat $OUT/bias-grad.txt
python3 examples/scripts/torch_ops_anchors.py > $OUT/torch-ops.txt 2>&1
grep bias_grad $OUT/torch-ops.txt
.device/bin/bench-after --only gpt_char_6x384_T256_B64_step_amp > $OUT/step.txt 2>&1
grep -E "reduce_cols|^gpt_|total" $OUT/step.txt
export TANG_BENCH_COOP_TILES="4,2,4,4,32,2,1;2,4,4,4,32,2,1;4,2,4,4,16,2,1;4,2,4,4,48,2,1"
.device/bin/bench-after --only matmul_f16_4096 > $OUT/tiles.txt 2>&1
.device/bin/bench-after --only matmul_f16_gpt_16384x384x1536_NN >> $OUT/tiles.txt 2>&1
.device/bin/bench-after --only matmul_f16_gpt_16384x1536x384_NT >> $OUT/tiles.txt 2>&1
grep -E "TFLOP|fail|left out" $OUT/tiles.txt
