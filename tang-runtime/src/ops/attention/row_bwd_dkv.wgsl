// Flash-attention (causal or not) backward, key side: dk and dv.
//
// Prepended by the Rust module: DP, DH, SPLIT, ROWS, TILE, CH (see row_fwd.wgsl).
// A workgroup owns ROWS key rows of one (batch, kv head); thread (slice, row) keeps DH dims
// of k_j, v_j and both accumulators in registers. Q and dO of every query head sharing
// this kv head stream through workgroup memory in a fixed order, so the grouped-query sum
// is deterministic without atomics. P is recomputed from the saved logsumexp and
// dS = P * (dP - delta) with delta_i = rowsum(dO_i * O_i) from the dq pass (with dropout,
// `attention/dropout.rs`: dV from the dropped weights and dS = P * (M dP - delta)).

const NT: u32 = ROWS * SPLIT;
const LOG2E: f32 = 1.4426950408889634;

var<workgroup> part_s: array<f32, SPLIT * CH * ROWS>;
var<workgroup> part_dp: array<f32, SPLIT * CH * ROWS>;

fn load_row(buf: u32, idx: u32, ok: bool) -> f32 {
    if ok {
        if buf == 0u {
            return lse[idx];
        }
        return delta[idx];
    }
    return 0.0;
}

@compute @workgroup_size(NT)
fn main(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
) {
    let r = tid % ROWS;
    let sl = tid / ROWS;
    // Low key blocks see the most queries; workgroup 0 starts first.
    let kb = wg.x;
    let g = wg.y;
    let b = wg.z;
    let d = p.d;
    let n_keys = p.past + p.tq;
    let k0 = kb * ROWS;
    let j = k0 + r;
    let row_ok = j < n_keys;
    let kbase = ((b * p.kv_heads + g) * p.tk_stride + j) * d;

    var kr: array<vec4<f32>, DH4>;
    var vr: array<vec4<f32>, DH4>;
    var dka: array<vec4<f32>, DH4>;
    var dva: array<vec4<f32>, DH4>;
    for (var c4 = 0u; c4 < DH4; c4++) {
        let c = sl * DH + c4 * 4u;
        kr[c4] = load4_k(kbase + c, c, d, row_ok);
        vr[c4] = load4_v(kbase + c, c, d, row_ok);
        dka[c4] = vec4<f32>(0.0);
        dva[c4] = vec4<f32>(0.0);
    }
    // The first query that sees key k0 is k0 - past (every query without the causal mask).
    let first = select(0u, k0 - p.past, k0 > p.past && p.causal != 0u);
    let t_start = (first / TILE) * TILE;
    let group = p.heads / p.kv_heads;

    for (var hh = g * group; hh < (g + 1u) * group; hh++) {
        let head_row = (b * p.heads + hh) * p.tq;
        for (var t0 = t_start; t0 < p.tq; t0 += TILE) {
            workgroupBarrier();
            stage(tid, t0, p.tq, head_row * d, d);
            workgroupBarrier();
            for (var c0 = 0u; c0 < TILE; c0 += CH) {
                if t0 + c0 >= p.tq {
                    break;
                }
                for (var ii = 0u; ii < CH; ii++) {
                    let qq = (c0 + ii) * DP4 + sl * DH4;
                    var s4 = vec4<f32>(0.0);
                    var p4 = vec4<f32>(0.0);
                    for (var c4 = 0u; c4 < DH4; c4++) {
                        s4 = fma(kr[c4], ta[qq + c4], s4);
                        p4 = fma(vr[c4], tb[qq + c4], p4);
                    }
                    let at = (sl * CH + ii) * ROWS + r;
                    part_s[at] = s4.x + s4.y + s4.z + s4.w;
                    part_dp[at] = p4.x + p4.y + p4.z + p4.w;
                }
                workgroupBarrier();
                var pr: array<f32, CH>;
                var ds: array<f32, CH>;
                for (var ii = 0u; ii < CH; ii++) {
                    var s = 0.0;
                    var dp = 0.0;
                    for (var sp = 0u; sp < SPLIT; sp++) {
                        let at = (sp * CH + ii) * ROWS + r;
                        s += part_s[at];
                        dp += part_dp[at];
                    }
                    let i = t0 + c0 + ii;
                    let vis = i < p.tq && (p.past + i >= j || p.causal == 0u);
                    let lse2 = load_row(0u, head_row + i, i < p.tq) * LOG2E;
                    let dl = load_row(1u, head_row + i, i < p.tq);
                    let pij = select(0.0, exp2(s * p.scale_log2 - lse2), vis);
                    let f = drop1(head_row + i, j);
                    pr[ii] = pij * f;
                    ds[ii] = pij * (dp * f - dl);
                }
                workgroupBarrier();
                for (var ii = 0u; ii < CH; ii++) {
                    let qq = (c0 + ii) * DP4 + sl * DH4;
                    for (var c4 = 0u; c4 < DH4; c4++) {
                        dva[c4] = fma(vec4<f32>(pr[ii]), tb[qq + c4], dva[c4]);
                        dka[c4] = fma(vec4<f32>(ds[ii]), ta[qq + c4], dka[c4]);
                    }
                }
            }
        }
    }

    if row_ok {
        for (var c4 = 0u; c4 < DH4; c4++) {
            let c = sl * DH + c4 * 4u;
            store4_dk(kbase + c, c, d, dka[c4] * p.scale);
            store4_dv(kbase + c, c, d, dva[c4]);
        }
    }
}
