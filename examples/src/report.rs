//! [`Report`]: the error type of an example's `main`, printed as its message.

use std::fmt;

/// Any error, for `fn main() -> Result<(), Report>`: Rust prints a returned error's
/// `Debug` form after `Error: `, and a `Report`'s `Debug` is the error's message (its
/// `Display`, which in tang names the cause and what to do), not the variant's fields.
/// The process then exits with status 1.
///
/// ```
/// use tang_examples::report::Report;
/// fn parse(text: &str) -> Result<u32, Report> {
///     Ok(text.parse::<u32>()?) // any error converts with `?`
/// }
/// let e = parse("x").unwrap_err();
/// assert_eq!(format!("{e:?}"), "invalid digit found in string");
/// ```
pub struct Report(Box<dyn std::error::Error + Send + Sync>);

/// Every error converts, as with `Box<dyn Error>` (`Report` is not itself an `Error`, so
/// this does not overlap the identity conversion).
impl<E: Into<Box<dyn std::error::Error + Send + Sync>>> From<E> for Report {
    fn from(e: E) -> Self {
        Report(e.into())
    }
}

impl fmt::Debug for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}
