//! The WGSL pieces of the row-per-thread attention kernels (`row_*.wgsl`): each kernel's
//! masked loads and stores of four consecutive dims, written once here as macros that
//! expand to string literals (a WGSL function cannot take a storage buffer as argument),
//! and the staging shared by the three passes (`row_common.wgsl`, through `staged!`).

/// `fn load4_<name>(idx: u32, c: u32, d: u32, ok: bool) -> vec4<f32>`: elements
/// `idx .. idx + 4` of buffer `buf`, which are dims `c .. c + 4` of a row of `d` dims;
/// a lane past the row or with `ok` false is 0 and is never read.
macro_rules! load4 {
    ($name:ident = $buf:ident) => {
        concat!(
            "fn load_",
            stringify!($name),
            "(idx: u32, ok: bool) -> f32 {\n",
            "    if ok {\n        return ",
            stringify!($buf),
            "[idx];\n    }\n    return 0.0;\n}\n",
            "fn load4_",
            stringify!($name),
            "(idx: u32, c: u32, d: u32, ok: bool) -> vec4<f32> {\n",
            "    return vec4<f32>(\n",
            "        load_",
            stringify!($name),
            "(idx, ok && c < d),\n",
            "        load_",
            stringify!($name),
            "(idx + 1u, ok && c + 1u < d),\n",
            "        load_",
            stringify!($name),
            "(idx + 2u, ok && c + 2u < d),\n",
            "        load_",
            stringify!($name),
            "(idx + 3u, ok && c + 3u < d),\n",
            "    );\n}\n",
        )
    };
}
pub(super) use load4;

/// `fn store4_<buf>(idx: u32, c: u32, d: u32, a: vec4<f32>)`: writes the lanes of `a`
/// that are inside a row of `d` dims (dims `c .. c + 4`) to `buf[idx ..]`.
macro_rules! store4 {
    ($buf:ident) => {
        concat!(
            "fn store4_",
            stringify!($buf),
            "(idx: u32, c: u32, d: u32, a: vec4<f32>) {\n",
            "    if c < d { ",
            stringify!($buf),
            "[idx] = a.x; }\n",
            "    if c + 1u < d { ",
            stringify!($buf),
            "[idx + 1u] = a.y; }\n",
            "    if c + 2u < d { ",
            stringify!($buf),
            "[idx + 2u] = a.z; }\n",
            "    if c + 3u < d { ",
            stringify!($buf),
            "[idx + 3u] = a.w; }\n}\n",
        )
    };
}
pub(super) use store4;

/// The staging and tile declarations every row kernel shares (`row_common.wgsl`) with the
/// loads of what its two tiles hold: `staged!(a = k, b = v)` stages keys in `ta` and
/// values in `tb`.
macro_rules! staged {
    (a = $a:ident, b = $b:ident) => {
        concat!(
            include_str!("row_common.wgsl"),
            $crate::ops::attention::rows::load4!(a = $a),
            $crate::ops::attention::rows::load4!(b = $b),
        )
    };
}
pub(super) use staged;
