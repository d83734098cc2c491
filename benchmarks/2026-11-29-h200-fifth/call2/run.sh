#!/usr/bin/env bash
# Call 2: the matmul's permuted k-contiguous staging (tests, sweep); f16 elementwise with
# native pack/unpack (bench-native) against the exact software conversions; the AMP step.
source .device/prelude.sh
(cd tang-runtime && timeout 200 ../.device/bin/dense_f16 --test-threads=2 > $OUT/test-dense-f16.txt 2>&1; echo "dense_f16 rc $?")
grep -E "^test |test result" $OUT/test-dense-f16.txt | tail -15
for b in bench bench-native bench bench-native; do
  echo "== $b"; .device/bin/$b --only gelu_tanh 2>&1 | grep -E "GB/s|fail"
done > $OUT/gelu.txt 2>&1
cat $OUT/gelu.txt
.device/bin/bench --only matmul_f16_ > $OUT/matmul-f16.txt 2>&1
grep -v "_coop" $OUT/matmul-f16.txt | grep TFLOP
for b in bench bench-native; do
  echo "== $b"; .device/bin/$b --only gpt_char_6x384_T256_B64_step_amp 2>&1
done > $OUT/steps.txt 2>&1
python3 .device/torch_amp_anchors.py --no-compile > $OUT/torch-amp.txt 2>&1
grep -E "^gpt_char|launches|gelu" $OUT/steps.txt
grep -E "gpt_step|matmul_4096" $OUT/torch-amp.txt
