// Flash-attention (causal or not) backward, query side: dq, and delta_i = rowsum(dO_i * O_i).
//
// Prepended by the Rust module: DP, DH, SPLIT, ROWS, TILE, CH (see row_fwd.wgsl).
// A workgroup owns ROWS query rows of one (batch, head); thread (slice, row) keeps DH dims
// of q_i, dO_i and the dq accumulator in registers. K and V stream through workgroup
// memory; P is recomputed per tile from the saved logsumexp, so nothing T x T is stored.
// Each dq row is written by exactly one workgroup: deterministic, no atomics.

const NT: u32 = ROWS * SPLIT;
const LOG2E: f32 = 1.4426950408889634;

var<workgroup> part_s: array<f32, SPLIT * CH * ROWS>;
var<workgroup> part_dp: array<f32, SPLIT * CH * ROWS>;

@compute @workgroup_size(NT)
fn main(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let r = tid % ROWS;
    let sl = tid / ROWS;
    let qb = nwg.x - 1u - wg.x;
    let h = wg.y;
    let b = wg.z;
    let g = h / (p.heads / p.kv_heads);
    let d = p.d;
    let i = qb * ROWS + r;
    let row_ok = i < p.tq;
    let row = (b * p.heads + h) * p.tq + i;
    let qbase = row * d;
    let kvbase = (b * p.kv_heads + g) * p.tk_stride * d;

    var qr: array<vec4<f32>, DH4>;
    var gr: array<vec4<f32>, DH4>;
    var acc: array<vec4<f32>, DH4>;
    for (var c4 = 0u; c4 < DH4; c4++) {
        let c = sl * DH + c4 * 4u;
        qr[c4] = load4_q(qbase + c, c, d, row_ok);
        gr[c4] = load4_go(qbase + c, c, d, row_ok);
        acc[c4] = vec4<f32>(0.0);
    }
    // delta_i over the whole row (each slice computes it; it is read once per kernel)
    var dl = 0.0;
    var lse2 = 0.0;
    if row_ok {
        for (var c = 0u; c < d; c++) {
            dl = fma(go[qbase + c], o[qbase + c], dl);
        }
        lse2 = lse[row] * LOG2E;
    }
    let n_keys = select(p.tq, p.past + min(qb * ROWS + ROWS, p.tq), p.causal != 0u);
    let limit = p.past + i;

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
                var s4 = vec4<f32>(0.0);
                var p4 = vec4<f32>(0.0);
                for (var c4 = 0u; c4 < DH4; c4++) {
                    s4 = fma(qr[c4], ta[kk + c4], s4);
                    p4 = fma(gr[c4], tb[kk + c4], p4);
                }
                let at = (sl * CH + jj) * ROWS + r;
                part_s[at] = s4.x + s4.y + s4.z + s4.w;
                part_dp[at] = p4.x + p4.y + p4.z + p4.w;
            }
            workgroupBarrier();
            var ds: array<f32, CH>;
            for (var jj = 0u; jj < CH; jj++) {
                var s = 0.0;
                var dp = 0.0;
                for (var sp = 0u; sp < SPLIT; sp++) {
                    let at = (sp * CH + jj) * ROWS + r;
                    s += part_s[at];
                    dp += part_dp[at];
                }
                let j = t0 + c0 + jj;
                let seen = (j <= limit || p.causal == 0u) && j < n_keys;
                let pr = select(0.0, exp2(s * p.scale_log2 - lse2), seen);
                ds[jj] = pr * (dp * drop1(row, j) - dl);
            }
            workgroupBarrier();
            for (var jj = 0u; jj < CH; jj++) {
                let kk = (c0 + jj) * DP4 + sl * DH4;
                for (var c4 = 0u; c4 < DH4; c4++) {
                    acc[c4] = fma(vec4<f32>(ds[jj]), ta[kk + c4], acc[c4]);
                }
            }
        }
    }

    if row_ok {
        for (var c4 = 0u; c4 < DH4; c4++) {
            let c = sl * DH + c4 * 4u;
            store4_dq(qbase + c, c, d, acc[c4] * p.scale);
        }
        if sl == 0u {
            delta[row] = dl;
        }
    }
}
