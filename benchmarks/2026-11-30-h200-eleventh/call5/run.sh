#!/bin/bash
source .device/prelude.sh
mkdir -p /tmp/t && tar -xJf .device/tests.tar.xz -C /tmp/t
R=$OUT/tests.txt
(cd tang-runtime && echo "== dense_f16 (rounding, products)" && timeout 200 /tmp/t/tests/dense_f16 --skip every_coop_tile_preset 2>&1 | grep -E "^test |test result|FAILED|panicked|failed";
 for t in dense_attention dense_attention_coop dense_attention_dropout; do echo "== $t"; timeout 120 /tmp/t/tests/$t 2>&1 | grep -E "test result|FAILED|panicked|failed" ; done) > $R 2>&1
(cd tang-nn && for t in autocast trainer_amp attention_layers; do echo "== $t"; timeout 120 /tmp/t/tests/$t 2>&1 | grep -E "test result|FAILED|panicked|failed" ; done) >> $R 2>&1
cat $R
S="gpt_char_6x384_T256_B64_step_amp|gpt_recipe_6x384_T256_B64_amp"
T=$OUT/tang.txt
for r in 1 2; do
for b in bench-before bench; do
  echo "== $b steps $r" >> $T; timeout 80 .device/bin/$b --only "$S" 2>&1 | grep -v "^\s*$" >> $T
done
done
for b in bench-before bench; do
  echo "== $b gpt2" >> $T; timeout 80 .device/bin/$b --only "gpt2_124M_T1024_B8_step_amp" 2>&1 | grep -v "^\s*$" >> $T
done
grep -E "^==|step_amp |_amp |merge_qkv|attention_bwd" $T | awk '{print $1, $2, $3, $4}'
cd examples/scripts
timeout 80 python3 ../../.device/torch_amp_anchors.py --no-compile > $OUT/torch.txt 2>&1
timeout 60 python3 torch_gpt_recipe.py --only gpt_recipe_6x384 >> $OUT/torch.txt 2>&1
grep -E "fp16|amp|bf16" $OUT/torch.txt
