#!/bin/bash
source .device/prelude.sh
A="attention_B8_H8_T1024_d64_fwd_bwd_f16|attention_B8_H8_T1024_d64_dropout_fwd_bwd_f16|attention_gpt_B64_H6_T256_d64_fused_fwd_bwd_f16|attention_gpt_B64_H6_T256_d64_dropout_fwd_bwd_f16|attention_gpt2_B8_H12_T1024_d64_fwd_bwd_f16|attention_gpt2_B8_H12_T1024_d64_dropout_fwd_bwd_f16|attention_B8_H8_T1024_d64_f16_fwd|attention_gpt_B64_H6_T256_d64_fused_fwd_bwd_autocast"
S="gpt_char_6x384_T256_B64_step_amp|gpt_recipe_6x384_T256_B64_amp"
T=$OUT/tang.txt
for r in 1 2; do
for b in bench-before bench; do
  echo "== $b attention $r" >> $T; timeout 60 .device/bin/$b --only "$A" 2>&1 | grep -v "^\s*$" >> $T
done
done
for b in bench-before bench; do
  echo "== $b steps" >> $T; timeout 90 .device/bin/$b --only "$S" 2>&1 | grep -v "^\s*$" >> $T
done
(cd examples/scripts && timeout 90 python3 torch_attention_dropout.py > $OUT/torch.txt 2>&1)
mkdir -p /tmp/t && tar -xJf .device/tests.tar.xz -C /tmp/t
(cd tang-runtime && for t in dense_attention_coop dense_attention_f16 dense_attention_dropout dense_attention; do echo "== $t"; timeout 100 /tmp/t/tests/$t 2>&1 | grep -E "test result|FAILED|panicked" ; done; echo "== dense_f16 attention"; timeout 60 /tmp/t/tests/dense_f16 attention 2>&1 | grep -E "test result|FAILED|panicked") > $OUT/tests.txt 2>&1
(cd tang-nn && for t in autocast trainer_amp; do echo "== $t"; timeout 120 /tmp/t/tests/$t 2>&1 | grep -E "test result|FAILED|panicked"; done) >> $OUT/tests.txt 2>&1
cat $OUT/tests.txt
grep -E "^==|fwd_bwd|_fwd |step_amp |_amp " $T | awk '{print $1, $2, $3}'
