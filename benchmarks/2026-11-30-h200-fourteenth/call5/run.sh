#!/bin/bash
# bench = f9784d1 (landed); bench-before = main (ed5464d); train_char_gpt from f9784d1.
source .device/prelude.sh
A="attention_B8_H8_T1024_d64_fwd_bwd_f16|attention_B8_H8_T1024_d64_dropout_fwd_bwd_f16|attention_gpt2_B8_H12_T1024_d64_fwd_bwd_f16|attention_gpt_B64_H6_T256_d64_fused_fwd_bwd_f16|attention_B8_H8_T1024_d64_fwd_bwd|attention_B8_H8_T1024_d64_dropout_fwd_bwd"
ST="gpt_recipe_6x384_T256_B64|gpt_char_6x384_T256_B64_step"
T=$OUT/tang.txt
for r in 1 2; do
for b in bench-before bench; do
  echo "== $b round $r" >> $T; timeout 100 .device/bin/$b --only "$A|$ST" >> $T 2>&1
done
done
grep -E "^==| ms |mismatch|error|Error" $T | grep -v "launches\|CPU\|recipe step" | awk '{print $1, $2, $3}'
(cd examples/scripts && timeout 100 python3 torch_gpt_recipe.py --only 6x384 > $OUT/torch_recipe.txt 2>&1; cat $OUT/torch_recipe.txt | grep -v "^\s*$" | tail -6)
(time timeout 200 .device/bin/train_char_gpt --steps 2000 --data examples/data/rust-book.txt --out /tmp/t) > $OUT/train.txt 2>&1
grep -iE "best|val|ms/step|real" $OUT/train.txt | tail -8
