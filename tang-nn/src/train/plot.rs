//! The loss curve as a PNG: training loss (blue line) and validation loss (red line with
//! markers) against the step, with a grid, tick labels and a legend.
//!
//! Drawn with `plotters` into an RGB buffer (its bitmap backend only: plotters' text
//! needs system fonts through fontconfig, so labels use tang's built-in pixel font) and
//! encoded with `png`. The file is written next to its destination and renamed over it,
//! so an image viewer or a web page never sees half a PNG.

use std::fs;
use std::path::Path;

use plotters::prelude::*;

use super::TrainError;
use super::error::io_error;
use super::font::{GLYPH_HEIGHT, lit_pixels, text_width};
use super::metrics::MetricsRecord;

/// The image's size in pixels.
///
/// ```
/// use tang_nn::train::{PlotOptions, TrainerOptions};
/// let options = TrainerOptions { plot: PlotOptions { width: 1600, height: 900 }, ..TrainerOptions::new(100) };
/// assert_eq!(PlotOptions::default().width, 800);
/// # let _ = options;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlotOptions {
    /// Width (240 to 8192).
    pub width: u32,
    /// Height (160 to 8192).
    pub height: u32,
}

impl Default for PlotOptions {
    fn default() -> Self {
        PlotOptions {
            width: 800,
            height: 480,
        }
    }
}

/// Scale of the pixel font: 5x7 glyphs drawn as 10x14.
const TEXT_SCALE: u32 = 2;
const TRAIN_COLOR: RGBColor = RGBColor(31, 119, 180);
const VAL_COLOR: RGBColor = RGBColor(214, 39, 40);
const GRID_COLOR: RGBColor = RGBColor(225, 225, 225);
const TEXT_COLOR: RGBColor = RGBColor(40, 40, 40);

/// Draws the `loss` and `val_loss` of `records` against their steps into a PNG at
/// `path`, replacing it atomically. Records without a finite value are skipped.
///
/// ```
/// use tang_nn::train::{MetricsRecord, PlotOptions, plot_loss_curve};
/// # let dir = std::env::temp_dir().join(format!("tang-doc-plot-{}", std::process::id()));
/// let records: Vec<MetricsRecord> = (0..20)
///     .map(|s| MetricsRecord { step: s, loss: Some(3.0 / (1.0 + s as f64)), ..MetricsRecord::default() })
///     .collect();
/// std::fs::create_dir_all(&dir)?;
/// plot_loss_curve(dir.join("loss.png"), &records, PlotOptions::default())?; // plt.plot(steps, losses)
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`TrainError::InvalidOption`] for a size out of range; [`TrainError::NothingToPlot`]
/// when no record has a finite loss; [`TrainError::Plot`]; [`TrainError::Io`].
pub fn plot_loss_curve(
    path: impl AsRef<Path>,
    records: &[MetricsRecord],
    options: PlotOptions,
) -> Result<(), TrainError> {
    let PlotOptions { width, height } = options;
    if !(240..=8192).contains(&width) || !(160..=8192).contains(&height) {
        return Err(TrainError::InvalidOption {
            detail: format!(
                "plot size {width}x{height}; pass a width of 240 to 8192 and a height of 160 to 8192"
            ),
        });
    }
    let series = |value: fn(&MetricsRecord) -> Option<f64>| -> Vec<(f64, f64)> {
        records
            .iter()
            .filter_map(|r| {
                value(r)
                    .filter(|v| v.is_finite())
                    .map(|v| (r.step as f64, v))
            })
            .collect()
    };
    let train = series(|r| r.loss);
    let val = series(|r| r.val_loss);
    if train.is_empty() && val.is_empty() {
        return Err(TrainError::NothingToPlot);
    }
    let mut rgb = vec![255u8; width as usize * height as usize * 3];
    draw(&mut rgb, (width, height), &train, &val).map_err(TrainError::Plot)?;
    write_png(path.as_ref(), &rgb, width, height)
}

/// Draws the chart into `rgb` (row-major RGB of `size`).
fn draw(
    rgb: &mut [u8],
    size: (u32, u32),
    train: &[(f64, f64)],
    val: &[(f64, f64)],
) -> Result<(), String> {
    let all = || train.iter().chain(val);
    let (x_range, x_ticks) = axis(all().map(|p| p.0), true);
    let (y_range, y_ticks) = axis(all().map(|p| p.1), false);
    let label_width = y_ticks
        .iter()
        .map(|(_, label)| text_width(label, TEXT_SCALE))
        .max()
        .unwrap_or(0);
    let text_height = (GLYPH_HEIGHT * TEXT_SCALE) as i32;

    let root = BitMapBackend::with_buffer(rgb, size).into_drawing_area();
    let err = |e: DrawingAreaErrorKind<_>| e.to_string();
    let mut chart = ChartBuilder::on(&root)
        .margin_top(text_height as u32 + 16)
        .margin_right(20)
        .margin_left(8)
        .x_label_area_size(2 * text_height as u32 + 18)
        .y_label_area_size(label_width + 12)
        .build_cartesian_2d(x_range.0..x_range.1, y_range.0..y_range.1)
        .map_err(err)?;

    let grid = GRID_COLOR.stroke_width(1);
    for &(x, _) in &x_ticks {
        chart
            .draw_series(LineSeries::new([(x, y_range.0), (x, y_range.1)], grid))
            .map_err(err)?;
    }
    for &(y, _) in &y_ticks {
        chart
            .draw_series(LineSeries::new([(x_range.0, y), (x_range.1, y)], grid))
            .map_err(err)?;
    }
    let corners = [(x_range.0, y_range.0), (x_range.1, y_range.1)];
    chart
        .draw_series([Rectangle::new(corners, TEXT_COLOR.stroke_width(1))])
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(
            train.iter().copied(),
            TRAIN_COLOR.stroke_width(2),
        ))
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(
            val.iter().copied(),
            VAL_COLOR.stroke_width(2),
        ))
        .map_err(err)?;
    chart
        .draw_series(val.iter().map(|&p| Circle::new(p, 4, VAL_COLOR.filled())))
        .map_err(err)?;

    // Tick labels: centred under the x ticks, right-aligned left of the y ticks.
    let mut text = Vec::new();
    for (x, label) in &x_ticks {
        let (px, py) = chart.backend_coord(&(*x, y_range.0));
        let width = text_width(label, TEXT_SCALE) as i32;
        // The last label may stick out past the chart: keep it inside the image.
        let left = (px - width / 2).min(size.0 as i32 - width - 2);
        text.push((label.clone(), left, py + 8));
    }
    for (y, label) in &y_ticks {
        let (px, py) = chart.backend_coord(&(x_range.0, *y));
        text.push((
            label.clone(),
            px - 8 - text_width(label, TEXT_SCALE) as i32,
            py - text_height / 2,
        ));
    }
    let (left, bottom) = chart.backend_coord(&(x_range.0, y_range.0));
    let (right, top) = chart.backend_coord(&(x_range.1, y_range.1));
    let step_label = "step".to_string();
    let centre = (left + right) / 2 - text_width(&step_label, TEXT_SCALE) as i32 / 2;
    text.push((step_label, centre, bottom + text_height + 16));
    text.push(("loss".into(), left, top - text_height - 8));
    for (label, x, y) in text {
        draw_text(&root, &label, (x, y), TEXT_COLOR)?;
    }

    // Legend, top right: a short line and the series' name.
    let mut x = right;
    for (name, color, present) in [
        ("val", VAL_COLOR, !val.is_empty()),
        ("train", TRAIN_COLOR, !train.is_empty()),
    ] {
        if !present {
            continue;
        }
        x -= text_width(name, TEXT_SCALE) as i32;
        let y = top - text_height - 8;
        draw_text(&root, name, (x, y), TEXT_COLOR)?;
        let line_y = y + text_height / 2;
        root.draw(&PathElement::new(
            [(x - 30, line_y), (x - 8, line_y)],
            color.stroke_width(3),
        ))
        .map_err(err)?;
        x -= 50;
    }
    root.present().map_err(err)
}

/// Draws `text` with the pixel font, its top-left corner at `at`.
fn draw_text<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    text: &str,
    at: (i32, i32),
    color: RGBColor,
) -> Result<(), String> {
    let s = TEXT_SCALE as i32;
    for (dx, dy) in lit_pixels(text, TEXT_SCALE) {
        let (x, y) = (at.0 + dx as i32, at.1 + dy as i32);
        // A filled rectangle covers its first corner up to, not including, the second.
        area.draw(&Rectangle::new([(x, y), (x + s, y + s)], color.filled()))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// An axis over `values`: its range (padded a little for values, exact for steps) and
/// about six ticks at round numbers with their labels.
fn axis(values: impl Iterator<Item = f64>, integers: bool) -> ((f64, f64), Vec<(f64, String)>) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let (lo, hi) = if hi > lo {
        let pad = if integers { 0.0 } else { (hi - lo) * 0.05 };
        (lo - pad, hi + pad)
    } else {
        // One distinct value: centre it in a small range.
        let half = if integers {
            1.0
        } else {
            (lo.abs() * 0.05).max(1e-3)
        };
        (lo - half, lo + half)
    };
    let raw = (hi - lo) / 6.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let nice = match raw / magnitude {
        r if r < 1.5 => 1.0,
        r if r < 3.0 => 2.0,
        r if r < 7.0 => 5.0,
        _ => 10.0,
    } * magnitude;
    let step = if integers { nice.max(1.0) } else { nice };
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10()).ceil() as usize
    };
    let first = (lo / step).ceil() as i64;
    let ticks = (first..)
        .map(|k| k as f64 * step)
        .take_while(|&t| t <= hi + step * 1e-9)
        .take(32)
        .map(|t| {
            (
                t,
                format!("{:.*}", decimals, if t == 0.0 { 0.0 } else { t }),
            )
        })
        .collect();
    ((lo, hi), ticks)
}

/// Encodes RGB pixels as a PNG and writes it next to `path`, then renames it over `path`.
fn write_png(path: &Path, rgb: &[u8], width: u32, height: u32) -> Result<(), TrainError> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder
        .write_header()
        .and_then(|mut writer| writer.write_image_data(rgb))
        .map_err(|e| TrainError::Plot(format!("PNG encoding failed: {e}")))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    fs::write(&temp, &bytes).map_err(io_error("write", &temp))?;
    fs::rename(&temp, path).map_err(|e| {
        let _ = fs::remove_file(&temp);
        io_error("replace", path)(e)
    })
}
