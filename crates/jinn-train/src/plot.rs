//! Loss and metric curves from `metrics.jsonl` rendered to PNG: one panel per
//! `split/name` series, stacked vertically, drawn with a tiny line rasteriser and the 8×8
//! bitmap font of `jinn_data::font` (no font files, no plotting-crate dependency; the
//! `plotters` crate is not available offline here).

use crate::error::{Result, TrainError};
use crate::metrics_log::{read_metrics, MetricRecord};
use image::ImageEncoder as _;
use jinn_data::font::{draw_text, text_height};
use jinn_data::FrameShape;
use std::collections::BTreeMap;
use std::path::Path;

/// Pixel size of one panel.
pub const PANEL_WIDTH: usize = 640;
/// Pixel height of one panel.
pub const PANEL_HEIGHT: usize = 240;
const LEFT: usize = 90;
const RIGHT: usize = 12;
const TOP: usize = 22;
const BOTTOM: usize = 22;
const BACKGROUND: [u8; 3] = [255, 255, 255];
const AXIS: [u8; 3] = [80, 80, 80];
const LINE: [u8; 3] = [31, 119, 180];
const TEXT: [u8; 3] = [0, 0, 0];

/// Group records into `split/name` → (step, value) series, in step order.
pub fn series(records: &[MetricRecord]) -> BTreeMap<String, Vec<(u64, f64)>> {
    let mut out: BTreeMap<String, Vec<(u64, f64)>> = BTreeMap::new();
    for r in records {
        for (name, v) in &r.metrics {
            out.entry(format!("{}/{name}", r.split)).or_default().push((r.step, *v));
        }
    }
    for points in out.values_mut() {
        points.sort_by_key(|p| p.0);
    }
    out
}

/// An RGB canvas, `[H, W, 3]` u8.
struct Canvas {
    shape: FrameShape,
    pixels: Vec<u8>, // [H, W, 3] u8
}

impl Canvas {
    fn put(&mut self, x: i64, y: i64, c: [u8; 3]) {
        if x >= 0 && y >= 0 && (x as usize) < self.shape.width && (y as usize) < self.shape.height {
            let i = (y as usize * self.shape.width + x as usize) * 3;
            self.pixels[i..i + 3].copy_from_slice(&c);
        }
    }

    /// Straight line by uniform stepping along the longer axis.
    fn line(&mut self, (x0, y0): (f64, f64), (x1, y1): (f64, f64), c: [u8; 3]) {
        let n = (x1 - x0).abs().max((y1 - y0).abs()).ceil().max(1.0) as i64;
        for i in 0..=n {
            let t = i as f64 / n as f64;
            self.put((x0 + (x1 - x0) * t).round() as i64, (y0 + (y1 - y0) * t).round() as i64, c);
        }
    }

    fn text(&mut self, x: usize, y: usize, s: &str) {
        // Out-of-frame glyphs are clipped by draw_text; the shape always matches the buffer.
        let _ = draw_text(&mut self.pixels, self.shape, x, y, s, TEXT, 1);
    }
}

/// Compact number label.
fn label(v: f64) -> String {
    if v != 0.0 && (v.abs() < 1e-3 || v.abs() >= 1e5) {
        format!("{v:.3e}")
    } else {
        format!("{v:.4}")
    }
}

/// Render `series` (name → points) as stacked panels; returns the `[H, W, 3]` pixels and
/// the shape. Non-finite values break the line.
pub fn render(series: &BTreeMap<String, Vec<(u64, f64)>>) -> (Vec<u8>, FrameShape) {
    let shape = FrameShape::rgb(PANEL_HEIGHT * series.len().max(1), PANEL_WIDTH);
    let mut canvas = Canvas { shape, pixels: BACKGROUND.repeat(shape.height * shape.width) };
    for (panel, (name, points)) in series.iter().enumerate() {
        let y_off = panel * PANEL_HEIGHT;
        let (x_lo, x_hi) = (LEFT as f64, (PANEL_WIDTH - RIGHT) as f64);
        let (y_top, y_bot) = ((y_off + TOP) as f64, (y_off + PANEL_HEIGHT - BOTTOM) as f64);
        canvas.line((x_lo, y_top), (x_lo, y_bot), AXIS);
        canvas.line((x_lo, y_bot), (x_hi, y_bot), AXIS);
        canvas.text(4, y_off + 4, name);
        let finite: Vec<f64> = points.iter().map(|p| p.1).filter(|v| v.is_finite()).collect();
        let (Some(&s0), Some(&s1)) = (points.first().map(|p| &p.0), points.last().map(|p| &p.0)) else {
            continue;
        };
        let (mut lo, mut hi) =
            finite.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
        if !lo.is_finite() {
            continue;
        }
        if lo == hi {
            let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
            (lo, hi) = (lo - pad, hi + pad);
        }
        let span = (s1 - s0).max(1) as f64;
        let to_px = |(s, v): (u64, f64)| {
            (x_lo + (s - s0) as f64 / span * (x_hi - x_lo), y_bot - (v - lo) / (hi - lo) * (y_bot - y_top))
        };
        let mut prev: Option<(f64, f64)> = None;
        for &p in points {
            if !p.1.is_finite() {
                prev = None;
                continue;
            }
            let q = to_px(p);
            canvas.line(prev.unwrap_or(q), q, LINE);
            prev = Some(q);
        }
        let th = text_height(1);
        canvas.text(4, y_top as usize, &label(hi));
        canvas.text(4, y_bot as usize - th, &label(lo));
        canvas.text(LEFT, y_bot as usize + 6, &s0.to_string());
        let last = s1.to_string();
        canvas.text(PANEL_WIDTH - RIGHT - jinn_data::font::text_width(&last, 1), y_bot as usize + 6, &last);
    }
    (canvas.pixels, shape)
}

/// Keep the series whose metric name (the part after `split/`) is in `names`, for every
/// split; all of them when `names` is empty. A name matching no series is an error listing
/// the available names.
pub fn select(
    all: BTreeMap<String, Vec<(u64, f64)>>,
    names: &[String],
    source: &Path,
) -> Result<BTreeMap<String, Vec<(u64, f64)>>> {
    if names.is_empty() {
        return Ok(all);
    }
    let metric = |key: &str| key.split_once('/').map_or(key.to_string(), |(_, m)| m.to_string());
    if let Some(missing) = names.iter().find(|n| !all.keys().any(|k| metric(k) == **n)) {
        let mut available: Vec<String> = all.keys().map(|k| metric(k)).collect();
        available.sort();
        available.dedup();
        return Err(TrainError::Format {
            path: source.to_path_buf(),
            offset: 0,
            reason: format!("no metric named `{missing}`; it has: {}", available.join(", ")),
        });
    }
    Ok(all.into_iter().filter(|(k, _)| names.contains(&metric(k))).collect())
}

/// Read `metrics_jsonl` and write the curves of the metrics in `names` (all when empty), one
/// panel per `split/name`, to `out_png` (atomically). Returns the panel names.
pub fn plot_metrics_file(metrics_jsonl: &Path, out_png: &Path, names: &[String]) -> Result<Vec<String>> {
    let all = series(&read_metrics(metrics_jsonl)?);
    if all.is_empty() {
        return Err(TrainError::Format {
            path: metrics_jsonl.to_path_buf(),
            offset: 0,
            reason: "no metric records to plot".into(),
        });
    }
    let chosen = select(all, names, metrics_jsonl)?;
    let (pixels, shape) = render(&chosen);
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new(&mut png)
        .write_image(&pixels, shape.width as u32, shape.height as u32, image::ExtendedColorType::Rgb8)
        .map_err(|e| TrainError::io(out_png, std::io::Error::other(e)))?;
    jinn_data::atomic_file::write_atomically(out_png, &png)?;
    Ok(chosen.into_keys().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn px(pixels: &[u8], shape: FrameShape, x: usize, y: usize) -> [u8; 3] {
        let i = (y * shape.width + x) * 3;
        [pixels[i], pixels[i + 1], pixels[i + 2]]
    }

    #[test]
    fn line_lands_where_the_values_map() {
        // A rising line from (0, 0) to (100, 1): the first point sits at the bottom-left of
        // the plot area, the last at the top-right, the middle one in the middle.
        let s = BTreeMap::from([("train/loss".to_string(), vec![(0, 0.0), (50, 0.5), (100, 1.0)])]);
        let (pixels, shape) = render(&s);
        assert_eq!((shape.width, shape.height), (PANEL_WIDTH, PANEL_HEIGHT));
        let (x0, x1) = (LEFT, PANEL_WIDTH - RIGHT);
        let (y0, y1) = (PANEL_HEIGHT - BOTTOM, TOP);
        assert_eq!(px(&pixels, shape, x1, y1), LINE);
        assert_eq!(px(&pixels, shape, (x0 + x1) / 2, (y0 + y1) / 2), LINE);
        assert_eq!(px(&pixels, shape, x0, y0), LINE); // drawn over the axes

        // Far from the line: background.
        assert_eq!(px(&pixels, shape, x1 - 5, y0 - 5), BACKGROUND);
    }

    #[test]
    fn writes_a_png_with_one_panel_per_series() {
        let dir = tempfile::tempdir().unwrap();
        let jsonl = dir.path().join("metrics.jsonl");
        let mut text = String::new();
        for step in 1..=20u64 {
            let r = MetricRecord {
                step,
                split: "train".into(),
                wall_time: 0.0,
                metrics: [("loss".to_string(), 1.0 / step as f64), ("lr".to_string(), 1e-4)].into(),
            };
            text += &serde_json::to_string(&r).unwrap();
            text += "\n";
        }
        std::fs::write(&jsonl, text).unwrap();
        let out = dir.path().join("curves.png");
        assert_eq!(plot_metrics_file(&jsonl, &out, &[]).unwrap(), ["train/loss", "train/lr"]);
        let img = image::open(&out).unwrap();
        assert_eq!((img.width() as usize, img.height() as usize), (PANEL_WIDTH, 2 * PANEL_HEIGHT));
        // Only the chosen metric: one panel.
        assert_eq!(plot_metrics_file(&jsonl, &out, &["loss".into()]).unwrap(), ["train/loss"]);
        assert_eq!(image::open(&out).unwrap().height() as usize, PANEL_HEIGHT);
        let err = plot_metrics_file(&jsonl, &out, &["psnr".into()]).unwrap_err().to_string();
        assert!(err.contains("`psnr`") && err.contains("loss, lr"), "{err}");
        std::fs::write(&jsonl, "").unwrap();
        assert!(plot_metrics_file(&jsonl, &out, &[]).unwrap_err().to_string().contains("no metric records"));
    }
}
