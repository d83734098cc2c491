// Flash-attention (causal or not) forward (online softmax, O(T) memory per head).
//
// Prepended by the Rust module: the tile constants DP (head dim padded to 16/32/64/128),
// DH (dims owned by one thread), SPLIT = DP / DH (threads per query row), ROWS (query rows
// per workgroup), RPT (query rows per thread), TILE (keys staged per barrier), CH (keys
// per softmax chunk).
//
// A workgroup handles ROWS query rows of one (batch, head). Thread (slice, rr) owns `DH`
// dims of rows rr, rr + ROWS / RPT, ... : their queries and output accumulators live in
// registers. Keys and values are staged TILE rows at a time in workgroup memory and read
// as vec4 broadcasts (all threads of a warp share a slice, so they read the same address);
// each value read serves RPT rows, which halves workgroup-memory traffic per FMA (the
// limit on NVIDIA, where a broadcast vec4 read costs two cycles of the shared-memory
// pipe). Partial q.k dot products of the SPLIT slices meet in `part`. Scores live in log2
// units: q is pre-scaled by scale * log2(e) so each probability is one exp2.

const RR: u32 = ROWS / RPT;
const NT: u32 = RR * SPLIT;
const NEG: f32 = -3.0e38;

var<workgroup> part: array<f32, SPLIT * CH * ROWS>;

@compute @workgroup_size(NT)
fn main(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let rr = tid % RR;
    let sl = tid / RR;
    // The last query blocks see the most keys: start them first to shorten the tail.
    let qb = nwg.x - 1u - wg.x;
    let h = wg.y;
    let b = wg.z;
    let g = h / (p.heads / p.kv_heads);
    let d = p.d;
    let head_row = (b * p.heads + h) * p.tq;
    let kvbase = (b * p.kv_heads + g) * p.tk_stride * d;

    var qr: array<vec4<f32>, RPT * DH4>;
    var acc: array<vec4<f32>, RPT * DH4>;
    var m: array<f32, RPT>;
    var l: array<f32, RPT>;
    for (var x = 0u; x < RPT; x++) {
        let i = qb * ROWS + rr + x * RR;
        let ok = i < p.tq;
        let qbase = (head_row + i) * d;
        for (var c4 = 0u; c4 < DH4; c4++) {
            let c = sl * DH + c4 * 4u;
            qr[x * DH4 + c4] = load4_q(qbase + c, c, d, ok) * p.scale_log2;
            acc[x * DH4 + c4] = vec4<f32>(0.0);
        }
        m[x] = -1.0e30;
        l[x] = 0.0;
    }
    // Keys this block can see at all (the causal mask skips every tile past it).
    let n_keys = select(p.tq, p.past + min(qb * ROWS + ROWS, p.tq), p.causal != 0u);

    for (var t0 = 0u; t0 < n_keys; t0 += TILE) {
        workgroupBarrier();
        stage(tid, t0, n_keys, kvbase, d);
        workgroupBarrier();
        for (var c0 = 0u; c0 < TILE; c0 += CH) {
            if t0 + c0 >= n_keys {
                break;
            }
            for (var jj = 0u; jj < CH; jj++) {
                let kk = (c0 + jj) * DP4 + sl * DH4;
                var dot4: array<vec4<f32>, RPT>;
                for (var c4 = 0u; c4 < DH4; c4++) {
                    let kv = ta[kk + c4];
                    for (var x = 0u; x < RPT; x++) {
                        dot4[x] = fma(qr[x * DH4 + c4], kv, dot4[x]);
                    }
                }
                for (var x = 0u; x < RPT; x++) {
                    let t = dot4[x];
                    part[(sl * CH + jj) * ROWS + rr + x * RR] = t.x + t.y + t.z + t.w;
                }
            }
            workgroupBarrier();
            var s: array<f32, RPT * CH>;
            var alpha: array<f32, RPT>;
            for (var x = 0u; x < RPT; x++) {
                let r = rr + x * RR;
                let limit = p.past + qb * ROWS + r;
                var mx = m[x];
                for (var jj = 0u; jj < CH; jj++) {
                    var sum = 0.0;
                    for (var sp = 0u; sp < SPLIT; sp++) {
                        sum += part[(sp * CH + jj) * ROWS + r];
                    }
                    let j = t0 + c0 + jj;
                    let sv = select(NEG, sum, (j <= limit || p.causal == 0u) && j < n_keys);
                    s[x * CH + jj] = sv;
                    mx = max(mx, sv);
                }
                alpha[x] = exp2(m[x] - mx);
                m[x] = mx;
                l[x] *= alpha[x];
            }
            workgroupBarrier();
            for (var x = 0u; x < RPT; x++) {
                for (var c4 = 0u; c4 < DH4; c4++) {
                    acc[x * DH4 + c4] *= alpha[x];
                }
            }
            for (var jj = 0u; jj < CH; jj++) {
                var pj: array<f32, RPT>;
                for (var x = 0u; x < RPT; x++) {
                    pj[x] = exp2(s[x * CH + jj] - m[x]);
                    l[x] += pj[x];
                    // Dropout scales what reaches O, not the softmax's row sum.
                    pj[x] *= drop1(head_row + qb * ROWS + rr + x * RR, t0 + c0 + jj);
                }
                let vv = (c0 + jj) * DP4 + sl * DH4;
                for (var c4 = 0u; c4 < DH4; c4++) {
                    let val = tb[vv + c4];
                    for (var x = 0u; x < RPT; x++) {
                        acc[x * DH4 + c4] = fma(vec4<f32>(pj[x]), val, acc[x * DH4 + c4]);
                    }
                }
            }
        }
    }

    for (var x = 0u; x < RPT; x++) {
        let i = qb * ROWS + rr + x * RR;
        if i < p.tq {
            let qbase = (head_row + i) * d;
            let inv = 1.0 / l[x];
            for (var c4 = 0u; c4 < DH4; c4++) {
                let c = sl * DH + c4 * 4u;
                store4_o(qbase + c, c, d, acc[x * DH4 + c4] * inv);
            }
            if sl == 0u {
                // natural-log logsumexp of the scaled scores (m and log2(l) are in log2 units)
                lse[head_row + i] = (m[x] + log2(l[x])) * 0.6931471805599453;
            }
        }
    }
}
