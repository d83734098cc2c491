#!/usr/bin/env bash
# Call 4: the SM clock and power while the GPU runs one product repeatedly and while it
# runs the AMP training steps (nvidia-smi sampled every 50 ms), to see whether the
# products' in-step slowdown is the clock.
source .device/prelude.sh
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 50 > $OUT/smi.txt 2>&1 &
SMI=$!
sleep 1
echo "phase product $(date +%s.%N)" > $OUT/phases.txt
.device/bin/bench --only "matmul_f16_gpt2_8192x768x3072_NT|matmul_f16_gpt_16384x384x1536_NN|matmul_f16_4096" > $OUT/products.txt 2>&1
echo "phase steps $(date +%s.%N)" >> $OUT/phases.txt
.device/bin/bench --only "gpt2_124M_T1024_B8_step_amp|gpt_char_6x384_T256_B64_step_amp" > $OUT/steps.txt 2>&1
echo "phase end $(date +%s.%N)" >> $OUT/phases.txt
sleep 1; kill $SMI
cat $OUT/phases.txt; grep -E "TFLOP|^gpt" $OUT/products.txt $OUT/steps.txt
python3 - <<'PY'
import os
out=os.environ["OUT"]
import datetime
ph=[l.split() for l in open(f"{out}/phases.txt")]
t=[(p[1],float(p[2])) for p in ph]
rows=[]
for l in open(f"{out}/smi.txt"):
    f=[x.strip() for x in l.split(",")]
    try:
        ts=datetime.datetime.strptime(f[0],"%Y/%m/%d %H:%M:%S.%f").timestamp()
        rows.append((ts,int(f[1].split()[0]),float(f[3].split()[0]),f[5]))
    except Exception: pass
for (name,a),(_,b) in zip(t,t[1:]):
    sel=[r for r in rows if a<=r[0]<b and r[2]>150]
    if not sel: print(name,"no busy samples"); continue
    cl=sorted(r[1] for r in sel); pw=sorted(r[2] for r in sel)
    print(f"{name}: {len(sel)} busy samples, SM clock median {cl[len(cl)//2]} MHz (min {cl[0]}, max {cl[-1]}), power median {pw[len(pw)//2]:.0f} W (max {pw[-1]:.0f})")
    from collections import Counter
    print("  throttle reasons:",Counter(r[3] for r in sel).most_common(4))
PY
