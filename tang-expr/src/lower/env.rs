//! Values and variable scopes of the lowering.

use crate::graph::NodeId;

/// What a Rust expression lowers to.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Val {
    /// A graph node (a float or a condition).
    Node(NodeId),
    /// A compile-time integer: an integer literal or an unrolled loop counter.
    Int(i64),
    /// A tuple (a returned tuple, or a helper's result before destructuring).
    Tuple(Vec<Val>),
    /// `()`: statements, assignments, `if` without `else`.
    Unit,
    /// A local declared without a value (`let y;`), not yet assigned on every path.
    Uninit,
    /// The result of an expression that already reported an error. Every consumer passes
    /// it on silently, so one mistake gives one error, not a cascade.
    Poison,
}

/// What a name is bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A `let` binding (or a helper's parameter).
    Local,
    /// A by-value `f32` parameter of the kernel.
    Input,
    /// A `#[uniform] f32` parameter.
    Uniform,
    /// A `&mut f32` parameter; its value is the current `*p`.
    InOut,
    /// The counter of an unrolled `for` loop.
    LoopVar,
}

/// One name in scope.
#[derive(Clone, Debug)]
pub(crate) struct Binding {
    pub name: String,
    pub kind: Kind,
    pub mutable: bool,
    pub val: Val,
}

/// Nested scopes, innermost last. Cloned around `if` branches: the branches see the same
/// outer bindings at the same positions, which is how their updates are merged.
#[derive(Clone, Debug, Default)]
pub(crate) struct Env {
    pub scopes: Vec<Vec<Binding>>,
}

impl Env {
    /// An environment with one (outermost) scope.
    pub(crate) fn new() -> Self {
        Env {
            scopes: vec![Vec::new()],
        }
    }

    /// Opens a block scope.
    pub(crate) fn push(&mut self) {
        self.scopes.push(Vec::new());
    }

    /// Closes the innermost block scope.
    pub(crate) fn pop(&mut self) {
        self.scopes.pop();
    }

    /// Adds a binding to the innermost scope (shadowing any earlier one of that name).
    pub(crate) fn bind(&mut self, b: Binding) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.push(b);
        }
    }

    /// The binding `name` refers to: the innermost, latest one.
    pub(crate) fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|b| b.name == name)
    }

    /// Mutable access to the binding `name` refers to.
    pub(crate) fn lookup_mut(&mut self, name: &str) -> Option<&mut Binding> {
        self.scopes
            .iter_mut()
            .rev()
            .flat_map(|s| s.iter_mut().rev())
            .find(|b| b.name == name)
    }
}
