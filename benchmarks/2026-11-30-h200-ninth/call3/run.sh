#!/bin/bash
source .device/prelude.sh
echo "== before"; timeout 150 .device/bin/bench-before --only matmul_f16_ 2>&1 | grep -v "^\s*$" > $OUT/before-1.txt
echo "== after"; timeout 150 .device/bin/bench --only matmul_f16_ 2>&1 | grep -v "^\s*$" > $OUT/after-1.txt
paste <(awk '{print $1, $(NF-1)}' $OUT/before-1.txt) <(awk '{print $(NF-1)}' $OUT/after-1.txt) | column -t | head -120
echo "== tests"; (cd tang-runtime && timeout 240 ../.device/bin/dense_f16 every_coop_tile_preset 2>&1 | tail -5) 
