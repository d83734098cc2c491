#!/bin/bash
source .device/prelude.sh
P=.device/bin/smem-probe
for e in f16 vec2 vec4 u32; do
  echo "== check+time $e" | tee -a $OUT/probe.txt
  PROBE_ONLY=" $e" timeout 120 $P 2>&1 | grep -v "^    \|^        " | tee -a $OUT/probe.txt
done
