#!/bin/bash
source .device/prelude.sh
M="matmul_f16_4096|matmul_f16_4096x4096x1024_NN|matmul_f16_4096x4096x1024_NT|matmul_f16_4096x4096x1024_TN|matmul_f16_gpt_16384x1152x384_NT|matmul_f16_gpt_16384x384x1152_NN|matmul_f16_gpt_1152x384x16384_TN|matmul_f16_gpt_16384x384x384_NT|matmul_f16_gpt_16384x384x384_NN|matmul_f16_gpt_384x384x16384_TN|matmul_f16_gpt_16384x1536x384_NT|matmul_f16_gpt_16384x384x1536_NN|matmul_f16_gpt_1536x384x16384_TN|matmul_f16_gpt_16384x384x1536_NT|matmul_f16_gpt_16384x1536x384_NN|matmul_f16_gpt_384x1536x16384_TN|matmul_f16_gpt2_8192x2304x768_NT|matmul_f16_gpt2_8192x768x3072_NT|matmul_f16_gpt2_8192x3072x768_NT"
A="attention_B8_H8_T1024_d64_fwd_bwd_f16|attention_B8_H8_T1024_d64_dropout_fwd_bwd_f16|attention_gpt_B64_H6_T256_d64_fused_fwd_bwd_f16|attention_gpt_B64_H6_T256_d64_dropout_fwd_bwd_f16|attention_gpt2_B8_H12_T1024_d64_fwd_bwd_f16|attention_gpt2_B8_H12_T1024_d64_dropout_fwd_bwd_f16|attention_B8_H8_T1024_d64_f16_fwd"
S="gpt_char_6x384_T256_B64_step_amp"
T=$OUT/tang.txt
for b in bench-before bench; do
  echo "== $b matmul" >> $T; timeout 90 .device/bin/$b --only "$M" 2>&1 | grep -v "^\s*$" >> $T
  echo "== $b attention" >> $T; timeout 60 .device/bin/$b --only "$A" 2>&1 | grep -v "^\s*$" >> $T
  echo "== $b step" >> $T; timeout 60 .device/bin/$b --only "$S" 2>&1 | grep -v "^\s*$" >> $T
done
echo "== bench sweep 4096" >> $T; timeout 40 .device/bin/bench --only matmul_f16_4096_coop 2>&1 | grep -v "^\s*$" >> $T
cd examples/scripts
timeout 60 python3 torch_matmul_f16.py > $OUT/torch.txt 2>&1
timeout 60 python3 torch_attention_dropout.py >> $OUT/torch.txt 2>&1
timeout 60 python3 ../../.device/torch_amp_anchors.py --no-compile >> $OUT/torch.txt 2>&1
cd ../..
mkdir -p /tmp/t && tar -xJf .device/tests.tar.xz -C /tmp/t
(cd tang-runtime && timeout 60 /tmp/t/tests/dense_attention_coop 2>&1 | tail -4; timeout 150 /tmp/t/tests/dense_f16 products tensor_cores weight_gradients backward_rounds 2>&1 | tail -12) > $OUT/tests.txt
grep -E "matmul_f16_4096 |fwd_bwd_f16|step_amp" $T | head -40
