
enable f16;
enable wgpu_cooperative_matrix;
@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@compute @workgroup_size(32)
fn main(@builtin(workgroup_id) wg: vec3<u32>) {
    let ma = coopLoadT<coop_mat16x16<f16, A>>(&a[0], 16u);
    let mb = coopLoadT<coop_mat16x16<f16, B>>(&b[0], 16u);
    var c0 = coopLoadT<coop_mat16x16<f32, C>>(&c[0], 16u);
    var c1 = c0; var c2 = c0; var c3 = c0;
    var c4 = c0; var c5 = c0; var c6 = c0; var c7 = c0;
    for (var i = 0u; i < 4096u; i++) {
        c0 = coopMultiplyAdd(ma, mb, c0);
        c1 = coopMultiplyAdd(ma, mb, c1);
        c2 = coopMultiplyAdd(ma, mb, c2);
        c3 = coopMultiplyAdd(ma, mb, c3);
        c4 = coopMultiplyAdd(ma, mb, c4);
        c5 = coopMultiplyAdd(ma, mb, c5);
        c6 = coopMultiplyAdd(ma, mb, c6);
        c7 = coopMultiplyAdd(ma, mb, c7);
    }
    if (wg.x == 0xffffffffu) {
        coopStoreT(c0, &c[0], 16u); coopStoreT(c1, &c[0], 16u); coopStoreT(c2, &c[0], 16u); coopStoreT(c3, &c[0], 16u);
        coopStoreT(c4, &c[0], 16u); coopStoreT(c5, &c[0], 16u); coopStoreT(c6, &c[0], 16u); coopStoreT(c7, &c[0], 16u);
    }
    if (wg.x == 0u) { coopStoreT(c0, &c[256], 16u); }
}
