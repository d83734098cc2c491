#!/bin/bash
# pack/unpack words per thread: 16 (bench-before, main), 4, 8; alternated twice.
source .device/prelude.sh
for r in 1 2; do
  for b in before w4 w8; do
    echo "== round $r bench-$b"
    .device/bin/bench-$b --only "gpt2_124M_T1024_B8_step_amp|gpt_char_6x384_T256_B64_step_amp" > $OUT/$b-$r.txt 2>&1
    grep -E "^(gpt2_124M|gpt_char)|pack" $OUT/$b-$r.txt | head -12
  done
done
