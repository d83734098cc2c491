// Safe code cannot make a kernel that runs without wgpu's runtime checks from a string:
// the trusted constructors are `unsafe`, and the descriptors' fields are private.
use tang_runtime::{KernelDesc, RawKernel};

const WGSL: &str = "@compute @workgroup_size(1) fn main() {}";

fn main() {
    let _raw = RawKernel::trusted("k", WGSL, "main");
    let _desc = KernelDesc::new_trusted("k", WGSL, &[], &[], &[], &["out"], 0);
    // What safe code can do: a kernel that runs checked.
    let _checked = RawKernel::checked("k", WGSL, "main");
}
