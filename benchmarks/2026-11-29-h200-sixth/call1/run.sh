#!/usr/bin/env bash
# Call 1: tensor-core tiles with two k groups (8 subgroups, 64x64 per subgroup, each
# group multiplying half of every staged k tile) against the presets; then the AMP
# steps with the k-group tile as the automatic choice (bench-exp reads TANG_EXP_TILE).
source .device/prelude.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv > $OUT/gpu.txt 2>&1
export TANG_BENCH_COOP_TILES="2,2,4,4,32,1,1,2;2,2,4,4,32,2,1,2;2,2,4,4,64,1,1,2"
.device/bin/bench --only matmul_f16_4096 > $OUT/kg-4096.txt 2>&1
grep -E "TFLOP|fail|left" $OUT/kg-4096.txt
.device/bin/bench --only matmul_f16_gpt > $OUT/kg-gpt.txt 2>&1
grep -E "TFLOP|fail|left" $OUT/kg-gpt.txt | grep -E "4096|_kg2|coop128x128x32_sg2x2_f4x4_s1_st1 "
unset TANG_BENCH_COOP_TILES
for t in none "2,2,4,4,32,1,1,2" "2,2,4,4,32,2,1,2" none; do
  echo "== TANG_EXP_TILE=$t"
  if [ "$t" = none ]; then unset TANG_EXP_TILE; else export TANG_EXP_TILE=$t; fi
  .device/bin/bench-exp --only "gpt_char_6x384_T256_B64_step_amp|gpt2_124M_T1024_B8_step_amp" 2>&1 | grep -E "matmul_coop|total|^gpt|fail"
done > $OUT/steps.txt 2>&1
cat $OUT/steps.txt
python3 .device/torch_amp_anchors.py --no-compile > $OUT/torch-amp.txt 2>&1; tail -12 $OUT/torch-amp.txt
