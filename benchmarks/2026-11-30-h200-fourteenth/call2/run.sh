#!/bin/bash
# bench = f9784d1 without the bit-rounded high part (hi = vec4<f16>(x), lo = x - f32(hi):
# the driver folded the round trip, lo = 0, results at f16 accuracy: the tests failed);
# bench-before = main (ed5464d). PyTorch's SDPA in the same call.
source .device/prelude.sh
cd tang-runtime
for t in dense_attention_split dense_attention dense_attention_dropout; do
  timeout 120 ../.device/bin/$t > $OUT/test-$t.txt 2>&1; echo "$t rc $? $(grep 'test result' $OUT/test-$t.txt)"
done
cd ..
A="attention_B8_H8_T1024_d64_fwd_bwd|attention_B8_H8_T1024_d64_fwd|attention_B8_H8_T1024_d64_dropout_fwd_bwd|attention_gpt2_B8_H12_T1024_d64_fwd_bwd|attention_gpt2_B8_H12_T1024_d64_dropout_fwd_bwd|attention_gpt_B64_H6_T256_d64_dropout_fwd_bwd|attention_gpt_B64_H6_T256_d64_fused_fwd_bwd"
ST="gpt_recipe_6x384_T256_B64"
T=$OUT/tang.txt
for r in 1 2; do
for b in bench-before bench; do
  echo "== $b round $r" >> $T; timeout 90 .device/bin/$b --only "$A|$ST" >> $T 2>&1
done
done
cd .device && timeout 100 python3 torch_attention_dropout.py > $OUT/torch.txt 2>&1
