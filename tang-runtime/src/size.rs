//! Checked size arithmetic: every element count, byte size, axis length and offset that
//! tang computes from user-given shapes goes through [`Size`]. Broadcasting's shape logic
//! ([`broadcast_shapes`]) lives here too: the launches and the ops both need it.
//!
//! Why one type: shapes come from users and may hold any `usize`, so `a * b` or `a + b`
//! on them can wrap. In a debug build that panics; in a release build it silently gives a
//! small number that passes the later limit checks (a `[usize::MAX, 0]` concatenated with
//! a `[1, 0]` became a `[0, 0]` tensor). A [`Size`] never wraps: an overflow is kept and
//! becomes a typed error, with what was asked, where the value is finally used.

use std::fmt;
use std::ops::{Add, Mul};

use crate::error::Error;

/// Threads per workgroup of every row kernel (a multiple of 32, so whole warps): the
/// `const WG` the WGSL pieces in `wgsl.rs` declare, and the divisor of their grids.
pub(crate) const WG: u32 = 256;

/// A count computed from user input that remembers when it overflowed 64 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Size(Option<u64>);

impl Size {
    /// An exact count.
    pub(crate) fn of(n: usize) -> Size {
        Size(u64::try_from(n).ok())
    }

    /// The product of `dims` (a shape's element count). Zero when any dimension is zero,
    /// whatever the others are: `[2^40, 0, 2^40]` and `[2^40, 2^40, 0]` both hold no
    /// elements, so both are accepted alike.
    pub(crate) fn product(dims: &[usize]) -> Size {
        if dims.contains(&0) {
            return Size(Some(0));
        }
        dims.iter().fold(Size(Some(1)), |acc, &d| acc * Size::of(d))
    }

    /// The sum of `items` (axis lengths of pieces, offsets).
    pub(crate) fn sum(items: impl IntoIterator<Item = usize>) -> Size {
        items
            .into_iter()
            .fold(Size(Some(0)), |acc, d| acc + Size::of(d))
    }

    /// The value as a `usize`, or `None` when it overflowed.
    pub(crate) fn get(self) -> Option<usize> {
        self.0.and_then(|v| usize::try_from(v).ok())
    }

    /// The value, or [`Error::TooLarge`] naming `what` when it is above `limit` or
    /// overflowed. `what` says what was asked (the operation and the shape); it is only
    /// built on the error path.
    pub(crate) fn at_most(self, limit: u64, what: impl FnOnce() -> String) -> Result<usize, Error> {
        match self.get() {
            Some(v) if v as u64 <= limit => Ok(v),
            _ => Err(Error::TooLarge {
                what: what(),
                requested: self.0.unwrap_or(u64::MAX),
                limit,
            }),
        }
    }

    /// The value, or [`Error::TooLarge`] naming `what` when it does not fit in a `usize`
    /// (for counts with no device limit of their own, such as the rows of a shape).
    pub(crate) fn counted(self, what: impl FnOnce() -> String) -> Result<usize, Error> {
        self.at_most(usize::MAX as u64, what)
    }
}

impl Mul for Size {
    type Output = Size;
    fn mul(self, rhs: Size) -> Size {
        match (self.0, rhs.0) {
            // Zero times anything (an overflowed count included) is zero.
            (Some(0), _) | (_, Some(0)) => Size(Some(0)),
            (Some(a), Some(b)) => Size(a.checked_mul(b)),
            _ => Size(None),
        }
    }
}

impl Mul<usize> for Size {
    type Output = Size;
    fn mul(self, rhs: usize) -> Size {
        self * Size::of(rhs)
    }
}

impl Add for Size {
    type Output = Size;
    fn add(self, rhs: Size) -> Size {
        match (self.0, rhs.0) {
            (Some(a), Some(b)) => Size(a.checked_add(b)),
            _ => Size(None),
        }
    }
}

impl Add<usize> for Size {
    type Output = Size;
    fn add(self, rhs: usize) -> Size {
        self + Size::of(rhs)
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(v) => write!(f, "{v}"),
            None => f.write_str("more than 2^64 - 1"),
        }
    }
}

/// The element count of `shape`, or [`Error::TooLarge`] when it overflows.
pub(crate) fn numel(shape: &[usize]) -> Result<usize, Error> {
    Size::product(shape).counted(|| format!("elements of shape {shape:?}"))
}

/// `n` as a u32 kernel quantity, or [`Error::TooLarge`] naming `what`.
pub(crate) fn fits_u32(op: &str, what: &str, n: usize) -> Result<u32, Error> {
    u32::try_from(n).map_err(|_| Error::TooLarge {
        what: format!("{op}: {what}"),
        requested: n as u64,
        limit: u32::MAX.into(),
    })
}

/// Row-major strides of a contiguous tensor of `shape` (in elements).
pub(crate) fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// The shape all of `shapes` broadcast to (PyTorch's `torch.broadcast_shapes`).
///
/// # Errors
/// [`Error::ShapeMismatch`] naming the first dimension where two sizes differ and neither
/// is 1.
pub fn broadcast_shapes(shapes: &[&[usize]]) -> Result<Vec<usize>, Error> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; rank];
    for s in shapes {
        let lead = rank - s.len();
        for (d, &n) in s.iter().enumerate() {
            let o = &mut out[lead + d];
            if *o == n || n == 1 {
                continue;
            }
            if *o == 1 {
                *o = n;
                continue;
            }
            return Err(Error::ShapeMismatch {
                op: "broadcast_shapes".into(),
                detail: format!(
                    "shapes {shapes:?} do not broadcast: dimension {} (from the right) is {} in one and {n} in another; \
                     sizes must be equal or 1",
                    s.len() - d,
                    *o
                ),
            });
        }
    }
    Ok(out)
}

/// Whether `shape` broadcasts to exactly `target`.
pub(crate) fn broadcasts_to(shape: &[usize], target: &[usize]) -> bool {
    shape.len() <= target.len()
        && broadcast_shapes(&[shape, target]).ok().as_deref() == Some(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_are_zero_aware_and_never_wrap() {
        let big = 1usize << 40;
        assert_eq!(Size::product(&[big, 0, big]).get(), Some(0));
        assert_eq!(Size::product(&[big, big, 0]).get(), Some(0));
        assert_eq!(Size::product(&[big, big]).get(), None);
        assert_eq!(Size::product(&[]).get(), Some(1));
        assert_eq!(Size::product(&[3, 4]).get(), Some(12));
        let zero = Size::of(0);
        assert_eq!((Size::product(&[big, big]) * zero).get(), Some(0));
        assert_eq!((Size::of(usize::MAX) + 1).get(), None);
        assert_eq!(Size::sum([usize::MAX, 1]).get(), None);
        assert_eq!(Size::sum([2, 3]).get(), Some(5));
    }

    #[test]
    fn errors_say_what_and_the_limit() {
        let e = (Size::of(usize::MAX) * 4).at_most(1 << 30, || "bytes".into());
        let msg = e.unwrap_err().to_string();
        assert!(msg.contains("more than 2^64 - 1"), "{msg}");
        assert!(msg.contains("1073741824"), "{msg}");
        assert!(!msg.contains("18446744073709551615"), "{msg}");
        assert_eq!(Size::of(5).at_most(5, || "x".into()), Ok(5));
        assert!(Size::of(6).at_most(5, || "x".into()).is_err());
    }
}
