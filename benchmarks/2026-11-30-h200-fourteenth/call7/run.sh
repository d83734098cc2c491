#!/bin/bash
# bench = HEAD with the fp32 GPT-shape case without dropout added to the bench.
source .device/prelude.sh
# Every attention figure of the issue, twice, PyTorch's SDPA in the same call.
A="attention_B8_H8_T1024_d64_fwd_bwd|attention_B8_H8_T1024_d64_dropout_fwd_bwd|attention_gpt_B64_H6_T256_d64_fused_fwd_bwd|attention_gpt_B64_H6_T256_d64_dropout_fwd_bwd|attention_gpt2_B8_H12_T1024_d64_fwd_bwd|attention_gpt2_B8_H12_T1024_d64_dropout_fwd_bwd|attention_B8_H8_T1024_d64_fwd_bwd_f16|attention_B8_H8_T1024_d64_dropout_fwd_bwd_f16|attention_gpt_B64_H6_T256_d64_fused_fwd_bwd_f16|attention_gpt_B64_H6_T256_d64_dropout_fwd_bwd_f16|attention_gpt2_B8_H12_T1024_d64_fwd_bwd_f16|attention_gpt2_B8_H12_T1024_d64_dropout_fwd_bwd_f16"
for r in 1 2; do
  echo "== round $r" >> $OUT/tang.txt; timeout 150 .device/bin/bench --only "$A" >> $OUT/tang.txt 2>&1
done
grep -E "^==| ms " $OUT/tang.txt | awk '{print $1, $2, $3}'
cd .device && timeout 100 python3 torch_attention_dropout.py > $OUT/torch.txt 2>&1; grep -v "fwd_sdpa\|forward only" $OUT/torch.txt
