//! The type of a node's value: a leaf, so that errors can name types without importing
//! the graph that reports them.

/// The type of a node's value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Ty {
    /// A 32-bit float (evaluated in f32 or f64 on the CPU).
    F32,
    /// A boolean: the result of a comparison or of `&& || !`. Only `select` turns it back
    /// into a float.
    Bool,
}
