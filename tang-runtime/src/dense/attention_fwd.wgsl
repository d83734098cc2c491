// Causal flash-attention forward (online softmax, O(T) memory per head).
//
// Prepended by the Rust module: the tile constants DP (head dim padded to 16/32/64/128),
// DH (dims owned by one thread), SPLIT = DP / DH (threads per query row), ROWS (query rows
// per workgroup), TILE (keys staged per barrier), CH (keys per softmax chunk).
//
// A workgroup handles ROWS query rows of one (batch, head). Thread (slice, row) owns
// `DH` dims of its row's query and output accumulator in registers. Keys and values are
// staged TILE rows at a time in workgroup memory and read as vec4 broadcasts (all threads
// of a warp share a slice, so they read the same address). Partial q.k dot products of the
// SPLIT slices meet in `part`. Scores live in log2 units: q is pre-scaled by
// scale * log2(e) so each probability is one exp2.

const DP4: u32 = DP / 4u;
const DH4: u32 = DH / 4u;
const NT: u32 = ROWS * SPLIT;
const NEG: f32 = -3.0e38;

struct Params {
    batch: u32,
    heads: u32,
    kv_heads: u32,
    // query rows per head
    tq: u32,
    // rows per head in the k/v buffers (the cache capacity for decoding)
    tk_stride: u32,
    // cached positions before the first query row: row i sees keys 0..=past+i
    past: u32,
    d: u32,
    // softmax scale times log2(e)
    scale_log2: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;

var<workgroup> ks: array<vec4<f32>, TILE * DP4>;
var<workgroup> vs: array<vec4<f32>, TILE * DP4>;
var<workgroup> part: array<f32, SPLIT * CH * ROWS>;

fn load_q(idx: u32, ok: bool) -> f32 {
    if ok {
        return q[idx];
    }
    return 0.0;
}

fn load_k(idx: u32, ok: bool) -> f32 {
    if ok {
        return k[idx];
    }
    return 0.0;
}

fn load_v(idx: u32, ok: bool) -> f32 {
    if ok {
        return v[idx];
    }
    return 0.0;
}

@compute @workgroup_size(NT)
fn main(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let r = tid % ROWS;
    let sl = tid / ROWS;
    // The last query blocks see the most keys: start them first to shorten the tail.
    let qb = nwg.x - 1u - wg.x;
    let h = wg.y;
    let b = wg.z;
    let g = h / (p.heads / p.kv_heads);
    let d = p.d;
    let i = qb * ROWS + r;
    let row_ok = i < p.tq;
    let qbase = ((b * p.heads + h) * p.tq + i) * d;
    let kvbase = (b * p.kv_heads + g) * p.tk_stride * d;

    var qr: array<vec4<f32>, DH4>;
    var acc: array<vec4<f32>, DH4>;
    for (var c4 = 0u; c4 < DH4; c4++) {
        let c = sl * DH + c4 * 4u;
        qr[c4] = vec4<f32>(
            load_q(qbase + c, row_ok && c < d),
            load_q(qbase + c + 1u, row_ok && c + 1u < d),
            load_q(qbase + c + 2u, row_ok && c + 2u < d),
            load_q(qbase + c + 3u, row_ok && c + 3u < d),
        ) * p.scale_log2;
        acc[c4] = vec4<f32>(0.0);
    }
    var m = -1.0e30;
    var l = 0.0;
    let limit = p.past + i;
    // Keys this block can see at all (the causal mask skips every tile past it).
    let n_keys = p.past + min(qb * ROWS + ROWS, p.tq);

    for (var t0 = 0u; t0 < n_keys; t0 += TILE) {
        workgroupBarrier();
        for (var e = tid; e < TILE * DP4; e += NT) {
            let j = t0 + e / DP4;
            let c = (e % DP4) * 4u;
            let base = kvbase + j * d + c;
            let ok = j < n_keys;
            ks[e] = vec4<f32>(
                load_k(base, ok && c < d),
                load_k(base + 1u, ok && c + 1u < d),
                load_k(base + 2u, ok && c + 2u < d),
                load_k(base + 3u, ok && c + 3u < d),
            );
            vs[e] = vec4<f32>(
                load_v(base, ok && c < d),
                load_v(base + 1u, ok && c + 1u < d),
                load_v(base + 2u, ok && c + 2u < d),
                load_v(base + 3u, ok && c + 3u < d),
            );
        }
        workgroupBarrier();
        for (var c0 = 0u; c0 < TILE; c0 += CH) {
            if t0 + c0 >= n_keys {
                break;
            }
            for (var jj = 0u; jj < CH; jj++) {
                let kk = (c0 + jj) * DP4 + sl * DH4;
                var dot4 = vec4<f32>(0.0);
                for (var c4 = 0u; c4 < DH4; c4++) {
                    dot4 = fma(qr[c4], ks[kk + c4], dot4);
                }
                part[(sl * CH + jj) * ROWS + r] = dot4.x + dot4.y + dot4.z + dot4.w;
            }
            workgroupBarrier();
            var s: array<f32, CH>;
            var mx = m;
            for (var jj = 0u; jj < CH; jj++) {
                var sum = 0.0;
                for (var sp = 0u; sp < SPLIT; sp++) {
                    sum += part[(sp * CH + jj) * ROWS + r];
                }
                let j = t0 + c0 + jj;
                s[jj] = select(NEG, sum, j <= limit && j < n_keys);
                mx = max(mx, s[jj]);
            }
            workgroupBarrier();
            let alpha = exp2(m - mx);
            m = mx;
            l *= alpha;
            for (var c4 = 0u; c4 < DH4; c4++) {
                acc[c4] *= alpha;
            }
            for (var jj = 0u; jj < CH; jj++) {
                let pj = exp2(s[jj] - m);
                l += pj;
                let vv = (c0 + jj) * DP4 + sl * DH4;
                for (var c4 = 0u; c4 < DH4; c4++) {
                    acc[c4] = fma(vec4<f32>(pj), vs[vv + c4], acc[c4]);
                }
            }
        }
    }

    if row_ok {
        let inv = 1.0 / l;
        for (var c4 = 0u; c4 < DH4; c4++) {
            let c = sl * DH + c4 * 4u;
            let a = acc[c4] * inv;
            if c < d {
                o[qbase + c] = a.x;
            }
            if c + 1u < d {
                o[qbase + c + 1u] = a.y;
            }
            if c + 2u < d {
                o[qbase + c + 2u] = a.z;
            }
            if c + 3u < d {
                o[qbase + c + 3u] = a.w;
            }
        }
        if sl == 0u {
            // natural-log logsumexp of the scaled scores (m and log2(l) are in log2 units)
            lse[(b * p.heads + h) * p.tq + i] = (m + log2(l)) * 0.6931471805599453;
        }
    }
}
