//! Errors of the expression IR.

use std::fmt;

use crate::ty::Ty;

/// What went wrong while building, differentiating or emitting an expression.
#[derive(Clone, PartialEq)]
pub enum ExprError {
    /// A node id that does not belong to the graph it was used with.
    UnknownNode(u32),
    /// An op applied to the wrong number of arguments.
    Arity {
        /// The op's name.
        op: &'static str,
        /// How many arguments it takes.
        expected: usize,
        /// How many it was given.
        got: usize,
    },
    /// An argument of the wrong type (a boolean where a float is needed, or the reverse).
    Type {
        /// The op's name.
        op: &'static str,
        /// Which argument (0-based).
        position: usize,
        /// The type the op needs there.
        expected: Ty,
        /// The type it was given.
        got: Ty,
    },
    /// An input, uniform or output index out of range for the kernel being built.
    Index {
        /// What was indexed ("input", "uniform", "output").
        what: &'static str,
        /// The index used.
        index: u32,
        /// How many there are.
        count: u32,
    },
    /// A name that is not a valid WGSL identifier or is used twice.
    BadName(String),
    /// The kernel has nothing to write (no outputs and no in-out values).
    NoOutputs,
    /// A traced expression ([`crate::Expr`]) used in a trace other than the one that made
    /// it, or outside any trace.
    ForeignExpr,
    /// naga rejected a shader. This is a bug in tang's code generator if the shader came
    /// from tang; the message says where.
    Invalid(ValidationError),
}

/// naga's verdict on a WGSL shader that failed to parse or validate.
#[derive(Clone, PartialEq)]
pub struct ValidationError {
    /// `"parse"` or `"validate"`.
    pub stage: &'static str,
    /// naga's message, with the source location where naga gives one.
    pub message: String,
}

/// Prints the [`Display`](std::fmt::Display) text, as `anyhow` does: `?` out of `main`
/// and `unwrap` show the message with its hint rather than the variant's fields.
impl std::fmt::Debug for ValidationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WGSL failed to {}: {}", self.stage, self.message)
    }
}

impl std::error::Error for ValidationError {}

/// Prints the [`Display`](std::fmt::Display) text, as `anyhow` does: `?` out of `main`
/// and `unwrap` show the message with its hint rather than the variant's fields.
impl std::fmt::Debug for ExprError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExprError::UnknownNode(id) => write!(
                f,
                "node v{id} does not belong to this graph: use ids from the graph that made them"
            ),
            ExprError::Arity { op, expected, got } => {
                write!(f, "`{op}` takes {expected} argument(s), got {got}")
            }
            ExprError::Type {
                op,
                position,
                expected,
                got,
            } => write!(
                f,
                "argument {position} of `{op}` must be {expected:?}, got {got:?} \
                 (use `select` to turn a condition into a number)"
            ),
            ExprError::Index { what, index, count } => write!(
                f,
                "{what} {index} is out of range: the kernel declares {count} {what}(s)"
            ),
            ExprError::BadName(name) => write!(
                f,
                "`{name}` cannot name a kernel value: use a unique identifier of letters, digits and `_`"
            ),
            ExprError::NoOutputs => {
                write!(
                    f,
                    "the kernel writes nothing: give it an output or an in-out value"
                )
            }
            ExprError::ForeignExpr => write!(
                f,
                "a traced value from another trace (or from no trace) was used: build each \
                 traced function only from its own arguments and constants"
            ),
            ExprError::Invalid(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ExprError {}

impl From<ValidationError> for ExprError {
    fn from(e: ValidationError) -> Self {
        ExprError::Invalid(e)
    }
}
