#!/bin/bash
TB=/opt/torch/.venv/lib/python3.12/site-packages/triton/backends/nvidia/bin
for n in mm_main attn_fwd; do
  $TB/nvdisasm -b SM90 .device/$n.sass.bin > $OUT/$n.sass 2> $OUT/$n.err; echo "$n rc $? $(wc -l < $OUT/$n.sass)"; head -3 $OUT/$n.err
done
head -40 $OUT/mm_main.sass
