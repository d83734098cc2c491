//! The macro that turns the op table (`op/mod.rs`) into everything keyed by op: the
//! [`Op`](crate::Op) enum and [`ALL_OPS`](crate::ALL_OPS), names, types, flags, CPU
//! evaluation, local partials, WGSL, the kernel language's methods, the tracing methods
//! on [`Expr`](crate::Expr) and the [`StableExt`](crate::ext::StableExt) trait. One entry
//! per op; nothing else lists ops.
//!
//! An entry:
//!
//! ```text
//! /// doc (the op's meaning; also the doc of its tracing method and StableExt method)
//! Variant(field: type = example)? {
//!     name: "name",                   // errors, hashes, debug output
//!     sig: F1 | F2 | F3 | Cmp | B1 | B2 | Sel,
//!     flags: NONE | EXACT | COMMUTATIVE | CONSTANT (or-ed),
//!     method: none | std name | ext name | int name,
//!     eval: |x, y| expr,              // F: Float in scope; returns F
//!     d: |g, [a, b], out| [Partial; arity],
//!     wgsl: "template",               // {0} {1} {2}: arguments, {t}: float type
//!     helper: none | HELPER,          // from op/wgsl_helpers/
//!     accuracy: (abs, rel, (up_to lim)?, (arg_ulps u)?), // against the f64 reference
//! }
//! ```
//!
//! `std` methods are Rust's own `f32` methods (the CPU function compiles with std alone);
//! `ext` methods come from [`StableExt`](crate::ext::StableExt); `int` marks `powi`, whose
//! argument is a constant integer the lowering reads itself.

/// Generates the op table's items; see the module docs.
macro_rules! op_table {
    ($(
        $(#[doc = $doc:literal])+
        $variant:ident $(($field:ident: $fty:ty = $example:expr))? {
            name: $name:literal,
            sig: $sig:ident,
            flags: $flags:expr,
            method: $mkind:ident $($method:ident)?,
            eval: |$($x:ident),+| $eval:expr,
            d: |$g:ident, [$($a:ident),+], $out:ident| $d:expr,
            wgsl: $wgsl:expr,
            helper: $helper:ident,
            accuracy: ($abs:expr, $rel:expr $(, up_to $lim:expr)? $(, arg_ulps $ulps:expr)?),
        }
    )+) => {
        /// An operation of the IR (one entry of the op table in `op/mod.rs`).
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
        pub enum Op {
            $( $(#[doc = $doc])+ $variant $(($fty))?, )+
        }

        /// Every operation, for generators and exhaustive tests (an op with a parameter
        /// appears once, with an example value: `PowI(3)`).
        pub const ALL_OPS: &[Op] = &[ $( Op::$variant $(($example))?, )+ ];

        impl Op {
            /// The op's name (used in errors, hashes and debugging output).
            pub fn name(self) -> &'static str {
                match self { $( Op::$variant { .. } => $name, )+ }
            }

            /// The op's signature (argument and result types).
            pub fn sig(self) -> Sig {
                match self { $( Op::$variant { .. } => Sig::$sig, )+ }
            }

            fn flags(self) -> u8 {
                match self { $( Op::$variant { .. } => $flags, )+ }
            }

            /// The kernel language's method for this op, and where the CPU function gets
            /// it from, if the language has one.
            pub fn method(self) -> Option<Method> {
                match self { $( Op::$variant { .. } => method!($mkind $($method)?), )+ }
            }

            /// How far from the f64 reference ([`Op::eval`] in f64 of the same f32
            /// arguments) the GPU and the f32 CPU evaluation may be (see [`Accuracy`]).
            pub fn accuracy(self) -> Accuracy {
                match self {
                    $( Op::$variant { .. } => Accuracy {
                        abs: $abs,
                        rel: $rel,
                        arg_ulps: or_zero!($($ulps)?),
                        args_up_to: or_infinity!($($lim)?),
                    }, )+
                }
            }

            /// Evaluates the op on the CPU in the precision of `F`. Booleans are 0 or 1.
            /// Pass [`Op::arity`] values; a missing argument reads as NaN (so a wrong call
            /// gives a NaN result rather than a panic).
            pub fn eval<F: Float>(self, args: &[F]) -> F {
                let nan = F::from_f64(f64::NAN);
                let mut it = args.iter().copied();
                match self {
                    $( Op::$variant $(($field))? => {
                        $( let $x = it.next().unwrap_or(nan); )+
                        $eval
                    } )+
                }
            }

            /// The local derivatives of `out = op(args)` with respect to each argument,
            /// built in `g` from the same op set (so derivatives can be differentiated
            /// again, simplified and emitted as WGSL like any other expression).
            #[allow(unused_variables)]
            pub fn partials(self, g: &mut Graph, args: &[NodeId], out: NodeId) -> [Partial; 3] {
                let mut it = args.iter().copied();
                match self {
                    $( Op::$variant $(($field))? => {
                        let $g = &mut *g;
                        let $out = out;
                        $( let $a = it.next().unwrap_or(NodeId::NONE); )+
                        pad($d)
                    } )+
                }
            }

            /// The WGSL expression of the op applied to already-printed arguments whose
            /// float type is `t` (`"f32"` or `"vec4<f32>"`). Ops that need more than one
            /// WGSL builtin call a helper function (see [`Op::wgsl_helpers`]).
            pub fn wgsl(self, a: &[String], t: &str) -> String {
                let template: String = match self {
                    $( Op::$variant $(($field))? => String::from($wgsl), )+
                };
                fill_wgsl(&template, a, t)
            }

            pub(crate) fn helper(self) -> Option<&'static Helper> {
                match self { $( Op::$variant { .. } => helper!($helper), )+ }
            }
        }

        impl crate::trace::Expr {
            $( expr_method!($sig $mkind $($method)? $variant $(($example))?; $(#[doc = $doc])+); )+
        }

        /// Numerically stable and special functions of the kernel language as `f32`
        /// methods, for the CPU build of kernels (Rust's `f32` lacks them). Each is the
        /// op's own CPU evaluation ([`Op::eval`]), so a function's CPU result and its
        /// kernel's CPU twin agree bit for bit, and each has a hand-written derivative in
        /// the IR ([`Op::partials`]).
        pub trait StableExt: Copy {
            $( stable_decl!($mkind $($method)? $sig; $(#[doc = $doc])+); )+
        }

        impl StableExt for f32 {
            $( stable_impl!($mkind $($method)? $sig $variant); )+
        }

        /// The kernel language's methods as a string literal for documentation,
        /// space-separated in table order: `kernel_methods_doc!(std)` for Rust's own `f32`
        /// methods, `kernel_methods_doc!(ext)` for `StableExt`'s. tang-macros' crate docs
        /// are built from it, so they list what the table holds.
        #[macro_export]
        #[doc(hidden)]
        macro_rules! kernel_methods_doc {
            (std) => {
                concat!($($crate::__method_doc_word!(std; $mkind $($method)?)),+)
            };
            (ext) => {
                concat!($($crate::__method_doc_word!(ext; $mkind $($method)?)),+)
            };
        }

        /// What `kernel_methods_doc!` gives, for `(std, ext)`, as the crate sees it (the
        /// lowering's tests compare it with the method lookup).
        #[cfg(all(test, feature = "lower"))]
        pub(crate) const KERNEL_METHODS_DOC: (&str, &str) =
            (kernel_methods_doc!(std), kernel_methods_doc!(ext));
    };
}

/// One word of [`kernel_methods_doc`]: the method's name and a space where its provider is
/// the one asked for (`int` methods are Rust's own), nothing otherwise.
#[macro_export]
#[doc(hidden)]
macro_rules! __method_doc_word {
    (std; std $m:ident) => {
        concat!(stringify!($m), " ")
    };
    (std; int $m:ident) => {
        concat!(stringify!($m), " ")
    };
    (ext; ext $m:ident) => {
        concat!(stringify!($m), " ")
    };
    ($want:ident; $($rest:tt)*) => {
        ""
    };
}

macro_rules! method {
    (none) => {
        None
    };
    (std $m:ident) => {
        Some(Method {
            name: stringify!($m),
            provider: Provider::Std,
        })
    };
    (int $m:ident) => {
        Some(Method {
            name: stringify!($m),
            provider: Provider::Std,
        })
    };
    (ext $m:ident) => {
        Some(Method {
            name: stringify!($m),
            provider: Provider::StableExt,
        })
    };
}

macro_rules! or_infinity {
    () => {
        f32::INFINITY
    };
    ($e:expr) => {
        $e
    };
}

macro_rules! or_zero {
    () => {
        0.0
    };
    ($e:expr) => {
        $e
    };
}

macro_rules! helper {
    (none) => {
        None
    };
    ($h:ident) => {
        Some(&crate::op::wgsl_helpers::$h)
    };
}

/// A tracing method on `Expr` for each float op with a method (`int` ones are written by
/// hand: their argument is an integer).
macro_rules! expr_method {
    (F1 $k:ident $m:ident $v:ident; $(#[$d:meta])+) => {
        $(#[$d])+
        pub fn $m(self) -> crate::trace::Expr {
            crate::trace::float(Op::$v, &[crate::trace::Arg::F(self.0)])
        }
    };
    (F2 $k:ident $m:ident $v:ident; $(#[$d:meta])+) => {
        $(#[$d])+
        pub fn $m(self, other: impl Into<crate::trace::Expr>) -> crate::trace::Expr {
            crate::trace::float(Op::$v, &[crate::trace::Arg::F(self.0), crate::trace::arg(other)])
        }
    };
    (F3 $k:ident $m:ident $v:ident; $(#[$d:meta])+) => {
        $(#[$d])+
        pub fn $m(
            self,
            a: impl Into<crate::trace::Expr>,
            b: impl Into<crate::trace::Expr>,
        ) -> crate::trace::Expr {
            crate::trace::float(
                Op::$v,
                &[crate::trace::Arg::F(self.0), crate::trace::arg(a), crate::trace::arg(b)],
            )
        }
    };
    ($($rest:tt)*) => {};
}

macro_rules! stable_decl {
    (ext $m:ident F1; $(#[$d:meta])+) => {
        $(#[$d])+
        fn $m(self) -> Self;
    };
    (ext $m:ident F2; $(#[$d:meta])+) => {
        $(#[$d])+
        fn $m(self, other: Self) -> Self;
    };
    ($($rest:tt)*) => {};
}

macro_rules! stable_impl {
    (ext $m:ident F1 $v:ident) => {
        fn $m(self) -> f32 {
            Op::$v.eval(&[self])
        }
    };
    (ext $m:ident F2 $v:ident) => {
        fn $m(self, other: f32) -> f32 {
            Op::$v.eval(&[self, other])
        }
    };
    ($($rest:tt)*) => {};
}
