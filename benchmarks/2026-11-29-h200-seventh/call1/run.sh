#!/usr/bin/env bash
# Call 1: the AMP steps' tensor-core products labelled by shape and flags (bench-exp:
# TANG_EXP_DETAIL), then each replayed alone (hot and after a 512 MB flush, step form and plain).
source .device/prelude.sh
TANG_EXP_DETAIL=1 .device/bin/bench-exp --only "gpt_char_6x384_T256_B64_step_amp|gpt2_124M_T1024_B8_step_amp" > $OUT/steps.txt 2>&1
grep -E "matmul_coop|total|^gpt" $OUT/steps.txt
python3 - <<'PY'
import os,re
out=os.environ["OUT"]
seen={}
for l in open(f"{out}/steps.txt"):
    m=re.search(r"matmul_coop \[\S+\] (\d+)x(\d+)x(\d+) b(\d+) ([NT])([NT]) h(\d)(\d)(\d)( bias)?",l)
    if not m: continue
    g=m.groups()
    key=(g[0],g[1],g[2],g[3],"1" if g[4]=="T" else "0","1" if g[5]=="T" else "0",g[6],g[7],g[8],"1" if g[9] else "0")
    seen[key]=1
open(f"{out}/replay.txt","w").write("".join(" ".join(k)+"\n" for k in seen))
print(len(seen),"shapes")
PY
TANG_EXP_REPLAY=$OUT/replay.txt .device/bin/bench-exp > $OUT/replay-out.txt 2>&1
cat $OUT/replay-out.txt
