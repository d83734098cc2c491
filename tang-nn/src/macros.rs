//! The impls that many types of tang-nn share, written once: the error types' `Debug`,
//! `From` and I/O context, and the options structs' chained setters.

/// `Debug` for error types prints the [`Display`](std::fmt::Display) text, as `anyhow`
/// does: `?` out of `main` and `unwrap` show the message with its hint rather than the
/// variant's fields.
macro_rules! debug_as_display {
    ($($error:ty),+ $(,)?) => {$(
        impl std::fmt::Debug for $error {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(self, f)
            }
        }
    )+};
}

/// `From` each source error for the variant that wraps it as it is, so that `?`
/// converts: `wrap_errors!(SafetensorsError { tang_runtime::Error => Runtime })`. For the
/// error types with a hand-written `Display`; those that derive `thiserror::Error` mark
/// the variant `#[from]` instead.
macro_rules! wrap_errors {
    ($error:ident { $($source:ty => $variant:ident),+ $(,)? }) => {$(
        impl From<$source> for $error {
            fn from(e: $source) -> Self {
                $error::$variant(e)
            }
        }
    )+};
}

/// `io_error(action, path)` for an error type with an `Io { action, path, source }`
/// variant: the `map_err` closure that says what was being done, and to which path, when
/// the operating system refused (`fs::write(&p, b).map_err(io_error("write", &p))?`).
macro_rules! io_error {
    ($error:ident) => {
        /// Attaches what was being done, and to which path, to an I/O error.
        pub(crate) fn io_error(
            action: &'static str,
            path: impl Into<std::path::PathBuf>,
        ) -> impl FnOnce(std::io::Error) -> $error {
            let path = path.into();
            move |source| $error::Io {
                action,
                path,
                source,
            }
        }
    };
}

/// PyTorch's keyword arguments as chained setters on options structs (`Copy`, with
/// public fields, or fields reached through `DerefMut`): one
/// `pub fn field(self, value) -> Self` per listed field, the field assignment typed, so
/// that `SGD(params, lr=0.05, momentum=0.9)` is `SgdOptions::default().lr(0.05).momentum(0.9)`.
/// `setters!(AdamOptions, AdamWOptions in optim { lr: f64 })` gives each listed struct the
/// same setters; `optim` is the structs' public module below `tang_nn`, which the doc
/// examples use.
macro_rules! setters {
    (in $path:path { $($body:tt)* }) => {};
    ($ty:ident $(, $rest:ident)* in $path:path { $($field:ident: $t:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("These options with `", stringify!($field), "` set (the keyword argument of the same name).")]
                ///
                /// ```
                #[doc = concat!("let opts = tang_nn::", stringify!($path), "::", stringify!($ty), "::default();")]
                #[doc = concat!("let v = opts.", stringify!($field), ";")]
                #[doc = concat!("assert_eq!(opts.", stringify!($field), "(v), opts);")]
                /// ```
                #[must_use]
                pub fn $field(mut self, $field: $t) -> Self {
                    self.$field = $field;
                    self
                }
            )*
        }
        crate::macros::setters!($($rest),* in $path { $($field: $t),* });
    };
}

pub(crate) use {debug_as_display, io_error, setters, wrap_errors};
