#!/bin/bash
source .device/prelude.sh
A="gelu_erf_fwd_f16_64M|gelu_erf_vjp_f16_64M|gelu_tanh_fwd_f16_64M|gelu_tanh_vjp_f16_64M|gelu_erf_fwd_64M"
ST="gpt_recipe_6x384_T256_B64_amp|gpt_char_6x384_T256_B64_step_amp"
T=$OUT/tang.txt
for r in 1 2; do
for b in bench-before bench; do
  echo "== $b round $r" >> $T; timeout 70 .device/bin/$b --only "$A|$ST" >> $T 2>&1
done
done
grep -E "^==|^(gelu|gpt)\S+ +[0-9.]+ ms" $T | grep -v _host | awk '{print $1, $2, $3, $4}'
cd tang-runtime && timeout 60 ../.device/bin/ops_f16_elementwise > $OUT/test-ops_f16_elementwise.txt 2>&1; echo "ops_f16_elementwise rc $? $(grep 'test result' $OUT/test-ops_f16_elementwise.txt)"
cd ../tang-nn && timeout 60 ../.device/bin/trainer_amp > $OUT/test-trainer_amp.txt 2>&1; echo "trainer_amp rc $? $(grep 'test result' $OUT/test-trainer_amp.txt)"
