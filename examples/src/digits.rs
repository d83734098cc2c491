//! The digits data set (`examples/data/digits.csv`): parsing, a seeded train/test split,
//! mini-batch assembly, and the upload of images and labels to the GPU.
//!
//! Each line holds 64 pixel values (integers 0..=16, an 8x8 image row by row) and the
//! label (0..=9). Pixels are scaled to `[0, 1]` when parsed, so every consumer sees the
//! same features.

use std::fmt;

use tang_nn::autograd::Tensor;
use tang_nn::rng::SplitMix64;
use tang_nn::tang_runtime::Device;

/// Pixels per image (8 x 8).
pub const FEATURES: usize = 64;
/// Digit classes.
pub const CLASSES: usize = 10;
/// The largest pixel value in the data set (a count of set pixels in a 4x4 block).
pub const MAX_PIXEL: f32 = 16.0;

/// The bundled data set (1,797 lines; licence and source in `examples/data/README.md`).
/// Embedded so that the example runs from any working directory.
pub const DIGITS_CSV: &str = include_str!("../data/digits.csv");

/// A line of the CSV that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong with it.
    pub detail: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "digits CSV, line {}: {} (expected {FEATURES} pixel values 0..=16 and a label 0..=9, comma-separated)",
            self.line, self.detail
        )
    }
}

impl std::error::Error for ParseError {}

/// Images and labels, row-major: image `i` is `features[i * FEATURES..(i + 1) * FEATURES]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Digits {
    /// Pixels scaled to `[0, 1]`.
    pub features: Vec<f32>,
    /// Class of each image, `0..CLASSES`.
    pub labels: Vec<u32>,
}

impl Digits {
    /// Number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// True when there are no images.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The pixels of image `i` (scaled), or `None` out of range.
    pub fn image(&self, i: usize) -> Option<&[f32]> {
        self.features.get(i * FEATURES..(i + 1) * FEATURES)
    }

    /// Parses the CSV text. Blank lines are skipped (a trailing newline is common);
    /// anything else that is not a valid record is an error naming its line.
    ///
    /// # Errors
    /// [`ParseError`] for the first bad line: wrong field count, a field that is not a
    /// number, a pixel outside 0..=16, a label that is not an integer 0..=9; or an input
    /// with no records at all.
    pub fn parse(text: &str) -> Result<Digits, ParseError> {
        let mut out = Digits::default();
        for (k, raw) in text.lines().enumerate() {
            let line = k + 1;
            let record = raw.trim();
            if record.is_empty() {
                continue;
            }
            let err = |detail: String| ParseError { line, detail };
            let fields: Vec<&str> = record.split(',').map(str::trim).collect();
            if fields.len() != FEATURES + 1 {
                return Err(err(format!("found {} fields", fields.len())));
            }
            for (col, field) in fields[..FEATURES].iter().enumerate() {
                let v: f32 = field
                    .parse()
                    .map_err(|_| err(format!("pixel {} is {field:?}, not a number", col + 1)))?;
                // `contains` is false for NaN, so NaN is rejected here too.
                if !(0.0..=MAX_PIXEL).contains(&v) {
                    return Err(err(format!("pixel {} is {v}, outside 0..=16", col + 1)));
                }
                out.features.push(v / MAX_PIXEL);
            }
            let label_text = fields[FEATURES];
            let label: u32 = label_text
                .parse()
                .map_err(|_| err(format!("label {label_text:?} is not an integer")))?;
            if label as usize >= CLASSES {
                return Err(err(format!("label {label} is outside 0..=9")));
            }
            out.labels.push(label);
        }
        if out.is_empty() {
            return Err(ParseError {
                line: 0,
                detail: "no records found".into(),
            });
        }
        Ok(out)
    }

    /// The bundled data set, parsed.
    ///
    /// # Errors
    /// [`ParseError`] if the bundled file was altered into something unreadable.
    pub fn bundled() -> Result<Digits, ParseError> {
        Digits::parse(DIGITS_CSV)
    }

    /// A seeded random split: `(train, test)` with `round(len * test_fraction)` images
    /// in the test set (clamped to `0..=len`), both in shuffled order.
    pub fn split(&self, test_fraction: f64, rng: &mut SplitMix64) -> (Digits, Digits) {
        let mut order: Vec<usize> = (0..self.len()).collect();
        rng.shuffle(&mut order);
        let frac = if test_fraction.is_finite() {
            test_fraction.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let n_test = ((self.len() as f64) * frac).round() as usize;
        let (test, train) = order.split_at(n_test);
        (self.select(train), self.select(test))
    }

    /// The images at `indices`, in that order (indices out of range are skipped).
    pub fn select(&self, indices: &[usize]) -> Digits {
        let mut out = Digits {
            features: Vec::with_capacity(indices.len() * FEATURES),
            labels: Vec::with_capacity(indices.len()),
        };
        for &i in indices {
            if let Some(img) = self.image(i) {
                out.features.extend_from_slice(img);
                out.labels.push(self.labels[i]);
            }
        }
        out
    }

    /// The images as a `[len, FEATURES]` graph input and the labels as u32 `[len]` on
    /// `dev`: what `cross_entropy(&model.forward(&x)?, &y)` takes.
    ///
    /// ```
    /// use tang_examples::digits::{Digits, FEATURES};
    /// let dev = tang_nn::tang_runtime::Device::new()?;
    /// let (x, y) = Digits::bundled()?.select(&[0, 1]).to_device(&dev)?;
    /// assert_eq!((x.shape(), y.shape()), (&[2, FEATURES][..], &[2][..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::from_slice`] (no adapter memory left, a device lost).
    pub fn to_device(&self, dev: &Device) -> Result<(Tensor, Tensor), tang_nn::autograd::Error> {
        let x = Tensor::from_slice(dev, &self.features, &[self.len(), FEATURES])?;
        let y = Tensor::from_u32(dev, &self.labels, &[self.len()])?;
        Ok((x, y))
    }
}

/// Splits `order` (a permutation of example indices) into consecutive mini-batches of
/// `batch_size`; the last one holds the remainder. A `batch_size` of 0 is treated as 1.
pub fn batches(order: &[usize], batch_size: usize) -> std::slice::Chunks<'_, usize> {
    order.chunks(batch_size.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(pixel: &str, label: &str) -> String {
        let mut fields = vec![pixel.to_string(); FEATURES];
        fields.push(label.to_string());
        fields.join(",")
    }

    #[test]
    fn parses_and_scales_records() {
        let text = format!("{}\r\n\n{}\n", line("16", "3"), line("4", "9"));
        let d = Digits::parse(&text).unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d.labels, vec![3, 9]);
        assert!(d.image(0).unwrap().iter().all(|&v| v == 1.0));
        assert!(d.image(1).unwrap().iter().all(|&v| v == 0.25));
        assert!(d.image(2).is_none());
    }

    #[test]
    fn errors_name_the_line_and_the_problem() {
        let good = line("0", "1");
        let cases = [
            (line("x", "1"), "not a number"),
            (line("17", "1"), "outside 0..=16"),
            (line("-1", "1"), "outside 0..=16"),
            (line("NaN", "1"), "outside 0..=16"),
            (line("0", "10"), "outside 0..=9"),
            (line("0", "2.5"), "not an integer"),
            ("1,2,3".to_string(), "found 3 fields"),
        ];
        for (bad, want) in cases {
            let text = format!("{good}\n{bad}\n{good}\n");
            let e = Digits::parse(&text).unwrap_err();
            assert_eq!(e.line, 2, "{e}");
            assert!(e.to_string().contains(want), "{e} should mention {want:?}");
            assert!(e.to_string().contains("line 2"), "{e}");
        }
        assert!(
            Digits::parse("\n\n")
                .unwrap_err()
                .to_string()
                .contains("no records")
        );
    }

    #[test]
    fn the_bundled_file_is_the_full_data_set() {
        let d = Digits::bundled().unwrap();
        assert_eq!(d.len(), 1797);
        assert_eq!(d.features.len(), 1797 * FEATURES);
        for c in 0..CLASSES as u32 {
            let n = d.labels.iter().filter(|&&l| l == c).count();
            assert!((170..=190).contains(&n), "class {c}: {n} images");
        }
    }

    #[test]
    fn split_is_seeded_disjoint_and_complete() {
        let d = Digits::bundled().unwrap();
        let (train, test) = d.split(0.2, &mut SplitMix64::new(5));
        assert_eq!(test.len(), 359);
        assert_eq!(train.len() + test.len(), d.len());
        let (train2, test2) = d.split(0.2, &mut SplitMix64::new(5));
        assert_eq!((&train, &test), (&train2, &test2));
        // Every image lands in exactly one part: compare multisets of (pixels, label).
        let key = |s: &Digits, i: usize| {
            let mut k: Vec<u32> = s.image(i).unwrap().iter().map(|v| v.to_bits()).collect();
            k.push(s.labels[i]);
            k
        };
        let mut all: Vec<Vec<u32>> = (0..d.len()).map(|i| key(&d, i)).collect();
        let mut parts: Vec<Vec<u32>> = (0..train.len())
            .map(|i| key(&train, i))
            .chain((0..test.len()).map(|i| key(&test, i)))
            .collect();
        all.sort();
        parts.sort();
        assert_eq!(all, parts);
        assert_eq!(d.split(f64::NAN, &mut SplitMix64::new(1)).1.len(), 0);
    }

    #[test]
    fn to_device_uploads_images_and_labels_in_order() {
        let dev = Device::new().expect("a GPU adapter (install mesa-vulkan-drivers without a GPU)");
        let d = Digits::bundled().unwrap().select(&[5, 0, 7]);
        let (x, y) = d.to_device(&dev).unwrap();
        assert_eq!(x.shape(), [3, FEATURES]);
        assert_eq!(x.to_vec().unwrap(), d.features);
        assert_eq!(y.to_vec_u32().unwrap(), d.labels);
    }

    #[test]
    fn select_and_batches_assemble_in_order() {
        let text = (0..5)
            .map(|k| line(&k.to_string(), &k.to_string()))
            .collect::<Vec<_>>()
            .join("\n");
        let d = Digits::parse(&text).unwrap();
        let b = d.select(&[4, 0, 9, 2]);
        assert_eq!(b.labels, vec![4, 0, 2]);
        assert_eq!(b.image(0).unwrap()[0], 4.0 / 16.0);
        let order = [4, 3, 2, 1, 0];
        let sizes: Vec<usize> = batches(&order, 2).map(<[usize]>::len).collect();
        assert_eq!(sizes, vec![2, 2, 1]);
        assert_eq!(batches(&order, 0).count(), 5);
    }
}
