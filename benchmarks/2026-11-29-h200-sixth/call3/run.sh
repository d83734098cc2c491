#!/usr/bin/env bash
# Call 3: the tensor-core matmul's store of C with subgroup barriers (bench-sb: each
# subgroup passes its fragments through its own scratch, so it waits only for itself)
# against workgroup barriers (bench, feab1c9), interleaved.
source .device/prelude.sh
CASES="matmul_f16_4096|matmul_f16_4096x4096x1024_NN|matmul_f16_4096x4096x1024_NT|matmul_f16_gpt_16384x1152x384_NT|matmul_f16_gpt_16384x1536x384_NT|matmul_f16_gpt_16384x1536x384_NN|matmul_f16_gpt_1152x384x16384_TN|matmul_f16_gpt_1536x384x16384_TN|matmul_f16_gpt2_8192x2304x768_NT|matmul_f16_gpt2_8192x3072x768_NT|matmul_f16_gpt_16384x384x1536_NN"
STEPS="gpt_char_6x384_T256_B64_step_amp|gpt2_124M_T1024_B8_step_amp"
for r in 1 2; do
  for b in bench bench-sb; do
    echo "== $b run $r"
    .device/bin/$b --only "$CASES" 2>&1 | grep -E "TFLOP|fail"
  done
done > $OUT/matmul.txt 2>&1
cat $OUT/matmul.txt
for r in 1 2; do
  for b in bench bench-sb; do
    echo "== $b run $r"
    .device/bin/$b --only "$STEPS" 2>&1 | grep -E "matmul_coop|total|^gpt|fail"
  done
done > $OUT/steps.txt 2>&1
grep -E "^==|^gpt_|^gpt2_124M_T1024_B8_step_amp " $OUT/steps.txt
