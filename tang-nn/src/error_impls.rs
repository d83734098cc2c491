//! The trait impls that every error type of tang-nn shares, written once.

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
/// converts: `wrap_errors!(TrainError { OptimError => Optim })`.
macro_rules! wrap_errors {
    ($error:ident { $($source:ty => $variant:ident),+ $(,)? }) => {$(
        impl From<$source> for $error {
            fn from(e: $source) -> Self {
                $error::$variant(e)
            }
        }
    )+};
}

pub(crate) use {debug_as_display, wrap_errors};
