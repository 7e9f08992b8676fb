//! Animated GIFs of frame sequences, optionally several labelled panels side by side
//! (e.g. "ground truth | prediction"), written atomically.
//!
//! Panels are upscaled by an integer factor with nearest-neighbour sampling (crisp pixels) and
//! composed on a black canvas with a label strip of white text above them.
//!
//! Palette: each frame gets its own. If the frame's panels and label colours hold at most 256
//! distinct colours (typical for game frames) the palette is exact and the GIF lossless;
//! otherwise (model outputs, natural video) NeuQuant (`color_quant`, the quantiser the `gif`
//! crate itself uses) learns a 256-colour palette for the frame, which avoids the banding a
//! fixed 6×7×6 palette shows on smooth gradients. Quantisation runs on the panels' native
//! pixels, before upscaling (nearest-neighbour upscaling adds no colours), so it costs the same
//! at any scale: about 3 ms per frame of four 64×64 panels.

use crate::atomic_file::AtomicFile;
use crate::episode::FrameShape;
use crate::error::{DataError, Result};
use crate::font::{draw_text, text_height, text_width, GLYPH_SIZE};
use std::collections::HashMap;
use std::path::Path;

/// Whether the animation repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GifLoop {
    /// Loop forever (NETSCAPE2.0 loop count 0).
    Forever,
    /// Play once (no loop extension).
    Once,
}

/// How a GIF is written.
#[derive(Debug, Clone, PartialEq)]
pub struct GifOptions {
    /// Frames per second. GIF delays are whole centiseconds, so the delay is
    /// `round(100 / fps)`, at least 2 (browsers slow down shorter delays): at most 50 fps.
    pub fps: f64,
    /// Integer upscaling factor (nearest neighbour), at least 1.
    pub scale: usize,
    /// Looping behaviour.
    pub looping: GifLoop,
    /// Height in output pixels of the label strip above the panels (0: no labels; also none
    /// when every label is empty). Text is drawn at the largest integer scale whose 8-pixel
    /// glyphs plus a 1-pixel margin above and below fit (at least 1), centred over its panel
    /// and clipped at the panel's edges.
    pub label_height: usize,
    /// Black columns between panels, in output pixels.
    pub gap: usize,
    /// NeuQuant sampling factor, 1 (best, slowest) to 30 (fastest); 10 is the usual compromise.
    pub quantize_speed: i32,
}

impl Default for GifOptions {
    fn default() -> Self {
        GifOptions {
            fps: 10.0,
            scale: 4,
            looping: GifLoop::Forever,
            label_height: 20,
            gap: 4,
            quantize_speed: 10,
        }
    }
}

impl GifOptions {
    /// The frame delay in centiseconds.
    pub fn delay_cs(&self) -> u16 {
        (100.0 / self.fps).round().clamp(2.0, u16::MAX as f64) as u16
    }

    fn validate(&self) -> Result<()> {
        if !(self.fps.is_finite() && self.fps > 0.0) {
            return Err(DataError::invalid("GIF fps", format!("{}; expected a positive number", self.fps)));
        }
        if self.scale == 0 {
            return Err(DataError::invalid("GIF scale", "must be at least 1"));
        }
        if !(1..=30).contains(&self.quantize_speed) {
            return Err(DataError::invalid(
                "GIF quantize_speed",
                format!("{}; expected 1..=30", self.quantize_speed),
            ));
        }
        Ok(())
    }
}

/// One panel: a label and its frames, `[T, H, W, C]` u8 with `C` = 3 (RGB) or 1 (grey).
#[derive(Debug, Clone, Copy)]
pub struct Panel<'a> {
    /// Text above the panel (empty for none).
    pub label: &'a str,
    /// `[T, H, W, C]` u8.
    pub frames: &'a [u8],
}

const BACKGROUND: [u8; 3] = [0, 0, 0];
const LABEL_COLOR: [u8; 3] = [255, 255, 255];

/// Write `frames` (`[T, H, W, C]` u8, `C` = 3 or 1) as an animated GIF without a label.
pub fn write_gif(path: &Path, frames: &[u8], shape: FrameShape, options: &GifOptions) -> Result<()> {
    write_panels_gif(path, &[Panel { label: "", frames }], shape, options)
}

/// Write panels side by side, each with its label above it, as an animated GIF at `path`
/// (atomically). All panels have the same frame shape and number of frames.
pub fn write_panels_gif(
    path: &Path,
    panels: &[Panel<'_>],
    shape: FrameShape,
    options: &GifOptions,
) -> Result<()> {
    let layout = Layout::new(panels, shape, options)?;
    let strip = label_strip(panels, &layout)?;
    let (w, h) = (layout.out.width as u16, layout.out.height as u16);
    let mut file = AtomicFile::create(path)?;
    let gif_err = |e: gif::EncodingError| DataError::io(path, std::io::Error::other(e));
    {
        let mut encoder = gif::Encoder::new(&mut file, w, h, &[]).map_err(gif_err)?;
        if options.looping == GifLoop::Forever {
            encoder.set_repeat(gif::Repeat::Infinite).map_err(gif_err)?;
        }
        let frame_px = shape.height * shape.width;
        for t in 0..layout.steps {
            // Native pixels of every panel, then the two label colours: [panels·H·W + 2] RGB.
            let mut native: Vec<[u8; 3]> = Vec::with_capacity(panels.len() * frame_px + 2);
            for p in panels {
                native.extend((0..frame_px).map(|i| rgb_at(p.frames, shape, t * frame_px + i)));
            }
            native.extend([BACKGROUND, LABEL_COLOR]);
            let (palette, index) = quantize(&native, options.quantize_speed);
            let (bg, fg) = (index[native.len() - 2], index[native.len() - 1]);
            let strip_idx: Vec<u8> = strip.iter().map(|&p| if p == LABEL_COLOR { fg } else { bg }).collect();
            let pixels =
                layout.compose(&strip_idx, bg, |panel, y, x| index[panel * frame_px + y * shape.width + x]);
            let mut frame = gif::Frame::from_palette_pixels(w, h, pixels, palette, None);
            frame.delay = options.delay_cs();
            encoder.write_frame(&frame).map_err(gif_err)?;
        }
        encoder.into_inner().map_err(|e| DataError::io(path, e))?;
    }
    file.commit()
}

/// Compose the panels into RGB frames exactly as [`write_panels_gif`] lays them out (before
/// palette quantisation). Returns `[T, H', W', 3]` u8 and its frame shape.
pub fn render_panels(
    panels: &[Panel<'_>],
    shape: FrameShape,
    options: &GifOptions,
) -> Result<(Vec<u8>, FrameShape)> {
    let layout = Layout::new(panels, shape, options)?;
    let strip = label_strip(panels, &layout)?;
    let frame_px = shape.height * shape.width;
    let mut canvas = Vec::with_capacity(layout.steps * layout.out.frame_bytes()); // [T, H', W', 3]
    for t in 0..layout.steps {
        let frame = layout.compose(&strip, BACKGROUND, |panel, y, x| {
            rgb_at(panels[panel].frames, shape, t * frame_px + y * shape.width + x)
        });
        canvas.extend(frame.iter().flatten());
    }
    Ok((canvas, layout.out))
}

/// Pixel `i` (counting pixels, not bytes) of a `[.., C]` buffer as RGB (grey replicated).
fn rgb_at(frames: &[u8], shape: FrameShape, i: usize) -> [u8; 3] {
    match shape.channels {
        1 => [frames[i]; 3],
        _ => [frames[3 * i], frames[3 * i + 1], frames[3 * i + 2]],
    }
}

/// A palette (`[n ≤ 256, 3]`) and the palette index of every pixel: exact when the pixels
/// hold at most 256 colours, NeuQuant otherwise.
fn quantize(pixels: &[[u8; 3]], speed: i32) -> (Vec<u8>, Vec<u8>) {
    let mut colours: HashMap<[u8; 3], u8> = HashMap::new();
    for p in pixels {
        if !colours.contains_key(p) {
            if colours.len() == 256 {
                let rgba: Vec<u8> = pixels.iter().flat_map(|p| [p[0], p[1], p[2], 255]).collect();
                let nq = color_quant::NeuQuant::new(speed, 256, &rgba);
                let index = rgba.chunks_exact(4).map(|p| nq.index_of(p) as u8).collect();
                return (nq.color_map_rgb(), index);
            }
            colours.insert(*p, 0);
        }
    }
    // Sorted, so the palette does not depend on hash order.
    let mut sorted: Vec<[u8; 3]> = colours.keys().copied().collect();
    sorted.sort_unstable();
    for (i, c) in sorted.iter().enumerate() {
        colours.insert(*c, i as u8);
    }
    (sorted.concat(), pixels.iter().map(|p| colours[p]).collect())
}

/// Geometry of the composed frames.
struct Layout {
    /// Composed frame shape (RGB).
    out: FrameShape,
    /// Source frame shape.
    shape: FrameShape,
    /// Frames per panel.
    steps: usize,
    /// Number of panels.
    panels: usize,
    /// Rows of the label strip (0 when there are no labels).
    strip: usize,
    /// Upscaling factor.
    scale: usize,
    /// Columns between panels.
    gap: usize,
}

impl Layout {
    fn new(panels: &[Panel<'_>], shape: FrameShape, options: &GifOptions) -> Result<Self> {
        options.validate()?;
        let steps = check_panels(panels, shape)?;
        let n = panels.len();
        let labelled = options.label_height > 0 && panels.iter().any(|p| !p.label.is_empty());
        let strip = if labelled { options.label_height } else { 0 };
        let out = FrameShape::rgb(
            strip + shape.height * options.scale,
            n * shape.width * options.scale + (n - 1) * options.gap,
        );
        if out.width > u16::MAX as usize || out.height > u16::MAX as usize {
            return Err(DataError::invalid(
                "GIF size",
                format!(
                    "{}x{} output exceeds GIF's 65535-pixel limit; lower the scale",
                    out.width, out.height
                ),
            ));
        }
        Ok(Layout { out, shape, steps, panels: n, strip, scale: options.scale, gap: options.gap })
    }

    /// Output width of one panel.
    fn panel_width(&self) -> usize {
        self.shape.width * self.scale
    }

    /// First output column of panel `i`.
    fn panel_left(&self, i: usize) -> usize {
        i * (self.panel_width() + self.gap)
    }

    /// One composed frame `[H', W']` of `T` values: the label strip rows (`[strip, W']`),
    /// `fill` in the gaps, and panel `p`'s pixel (`y`, `x`) from `pixel(p, y, x)` as an
    /// `scale × scale` block.
    fn compose<T: Copy>(&self, strip: &[T], fill: T, pixel: impl Fn(usize, usize, usize) -> T) -> Vec<T> {
        let (w, s) = (self.out.width, self.scale);
        let mut frame = vec![fill; self.out.height * w];
        frame[..strip.len()].copy_from_slice(strip);
        for p in 0..self.panels {
            let left = self.panel_left(p);
            for y in 0..self.shape.height {
                let top = (self.strip + y * s) * w + left;
                for x in 0..self.shape.width {
                    let v = pixel(p, y, x);
                    frame[top + x * s..top + (x + 1) * s].fill(v);
                }
                for k in 1..s {
                    frame.copy_within(top..top + self.panel_width(), top + k * w);
                }
            }
        }
        frame
    }
}

/// The label strip `[strip, W']` as RGB: background with each label centred over its panel.
fn label_strip(panels: &[Panel<'_>], layout: &Layout) -> Result<Vec<[u8; 3]>> {
    let mut strip = vec![BACKGROUND; layout.strip * layout.out.width];
    if layout.strip == 0 {
        return Ok(strip);
    }
    let text_scale = (layout.strip.saturating_sub(2) / GLYPH_SIZE).max(1);
    let y = layout.strip.saturating_sub(text_height(text_scale)) / 2;
    let panel_w = layout.panel_width();
    let shape = FrameShape::rgb(layout.strip, panel_w);
    for (i, panel) in panels.iter().enumerate() {
        let mut px = vec![0u8; shape.frame_bytes()]; // [strip, panel_w, 3]
        let margin = panel_w.saturating_sub(text_width(panel.label, text_scale)) / 2;
        draw_text(&mut px, shape, margin, y, panel.label, LABEL_COLOR, text_scale)?;
        for row in 0..layout.strip {
            let dst = row * layout.out.width + layout.panel_left(i);
            for (d, s) in strip[dst..dst + panel_w].iter_mut().zip(px[row * panel_w * 3..].chunks_exact(3)) {
                *d = [s[0], s[1], s[2]];
            }
        }
    }
    Ok(strip)
}

/// Check the panels agree and return their frame count.
fn check_panels(panels: &[Panel<'_>], shape: FrameShape) -> Result<usize> {
    if panels.is_empty() {
        return Err(DataError::invalid("GIF panels", "none given; expected at least one"));
    }
    if shape.channels != 1 && shape.channels != 3 {
        return Err(DataError::invalid(
            "GIF frame channels",
            format!("{}; expected 3 (RGB) or 1 (grey)", shape.channels),
        ));
    }
    let frame = shape.frame_bytes();
    if frame == 0 {
        return Err(DataError::invalid("GIF frame shape", format!("{shape:?} has no pixels")));
    }
    let steps = panels[0].frames.len() / frame;
    for p in panels {
        if p.frames.len() != steps * frame || steps == 0 {
            return Err(DataError::invalid(
                format!("GIF panel \"{}\"", p.label),
                format!(
                    "{} bytes; expected {steps} frame(s) of {frame} bytes ([T, H, W, C] = [{steps}, {}, {}, {}]), \
                     the same number of frames in every panel and at least one",
                    p.frames.len(),
                    shape.height,
                    shape.width,
                    shape.channels
                ),
            ));
        }
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decoded GIF: (width, height, repeat, per-frame (delay, RGBA pixels)).
    type Decoded = (usize, usize, gif::Repeat, Vec<(u16, Vec<u8>)>);

    fn decode(path: &Path) -> Decoded {
        let mut opts = gif::DecodeOptions::new();
        opts.set_color_output(gif::ColorOutput::RGBA);
        let mut d = opts.read_info(std::fs::File::open(path).unwrap()).unwrap();
        let (w, h) = (d.width() as usize, d.height() as usize);
        let mut frames = Vec::new();
        while let Some(f) = d.read_next_frame().unwrap() {
            assert_eq!((f.width as usize, f.height as usize, f.left, f.top), (w, h, 0, 0));
            frames.push((f.delay, f.buffer.to_vec()));
        }
        (w, h, d.repeat(), frames)
    }

    fn px(rgba: &[u8], width: usize, x: usize, y: usize) -> [u8; 3] {
        let i = (y * width + x) * 4;
        [rgba[i], rgba[i + 1], rgba[i + 2]]
    }

    #[test]
    fn panels_round_trip_through_a_decoder() {
        let shape = FrameShape::rgb(16, 20);
        let t = 3;
        let solid: Vec<u8> = [200u8, 30, 90].repeat(t * 16 * 20);
        // A rich gradient (> 256 colours) forces NeuQuant rather than an exact palette.
        let rich: Vec<u8> = (0..t * shape.frame_bytes()).map(|i| ((i * 7 + i / 61) % 256) as u8).collect();
        let opts = GifOptions { fps: 8.0, scale: 3, label_height: 12, gap: 4, ..Default::default() };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("panels.gif");
        write_panels_gif(
            &path,
            &[Panel { label: "truth", frames: &solid }, Panel { label: "pred", frames: &rich }],
            shape,
            &opts,
        )
        .unwrap();
        let (w, h, repeat, frames) = decode(&path);
        assert_eq!((w, h), (2 * 20 * 3 + 4, 12 + 16 * 3));
        assert_eq!(repeat, gif::Repeat::Infinite);
        assert_eq!(frames.len(), t);
        for (delay, rgba) in &frames {
            assert_eq!(*delay, 13, "round(100 / 8)");
            // Every pixel of the solid panel decodes to (near) its colour.
            for y in 12..h {
                for x in 0..60 {
                    let p = px(rgba, w, x, y);
                    let err = (0..3).map(|k| (p[k] as i32 - [200, 30, 90][k]).abs()).max().unwrap();
                    assert!(err <= 12, "pixel ({x},{y}) = {p:?}");
                }
            }
            // The gap stays black.
            assert_eq!(px(rgba, w, 61, 30), [0, 0, 0]);
            // Each label draws white-ish pixels in its panel's strip; the strip is otherwise black.
            for panel in 0..2 {
                let lit = (0..12)
                    .flat_map(|y| (0..60).map(move |x| (x + panel * 64, y)))
                    .filter(|&(x, y)| px(rgba, w, x, y).iter().all(|&v| v > 200))
                    .count();
                assert!(lit > 20, "panel {panel}: {lit} label pixels");
            }
        }
        // No temporary file is left next to the GIF.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn few_colour_frames_decode_exactly_to_the_rendered_canvas() {
        let shape = FrameShape::rgb(6, 7);
        let a: Vec<u8> = (0..2 * shape.frame_bytes()).map(|i| (i % 5 * 50) as u8).collect();
        let b: Vec<u8> = (0..2 * shape.frame_bytes()).map(|i| (i % 3 * 90) as u8).collect();
        let panels = [Panel { label: "a", frames: &a }, Panel { label: "long label", frames: &b }];
        let opts = GifOptions { scale: 3, label_height: 20, gap: 1, ..Default::default() };
        let (canvas, out) = render_panels(&panels, shape, &opts).unwrap();
        assert_eq!(out, FrameShape::rgb(20 + 18, 2 * 21 + 1));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("exact.gif");
        write_panels_gif(&path, &panels, shape, &opts).unwrap();
        let (w, h, _, frames) = decode(&path);
        assert_eq!((w, h, frames.len()), (out.width, out.height, 2));
        for (t, (_, rgba)) in frames.iter().enumerate() {
            let rgb: Vec<u8> = rgba.chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect();
            assert_eq!(rgb, canvas[t * out.frame_bytes()..(t + 1) * out.frame_bytes()], "frame {t}");
        }
        // Upscaling: output pixel (20 + 3y + k, 3x + j) of panel 0 is source pixel (y, x).
        let src = |y: usize, x: usize| &a[(y * 7 + x) * 3..][..3];
        let at = |r: usize, c: usize| &canvas[(r * out.width + c) * 3..][..3];
        assert_eq!(at(20 + 3 * 4 + 2, 3 * 5 + 1), src(4, 5));
        // Text scale 2 (16-pixel glyphs fit in 20 rows): white pixels appear in the strip.
        assert!((0..20 * out.width).any(|i| canvas[3 * i..3 * i + 3] == [255, 255, 255]));
    }

    #[test]
    fn grey_frames_without_labels_are_exact() {
        // Few colours: the exact-palette path, so decoded pixels equal the input.
        let shape = FrameShape { height: 5, width: 4, channels: 1 };
        let frames: Vec<u8> = (0..2 * 20).map(|i| (i * 13 % 256) as u8).collect();
        let opts = GifOptions { scale: 2, looping: GifLoop::Once, fps: 1000.0, ..Default::default() };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("grey.gif");
        write_gif(&path, &frames, shape, &opts).unwrap();
        let (w, h, repeat, decoded) = decode(&path);
        assert_eq!((w, h), (8, 10), "no label strip without labels");
        assert_eq!(repeat, gif::Repeat::Finite(0));
        assert_eq!(decoded.len(), 2);
        for (t, (delay, rgba)) in decoded.iter().enumerate() {
            assert_eq!(*delay, 2, "delays are clamped to 2 cs");
            for y in 0..h {
                for x in 0..w {
                    let v = frames[t * 20 + (y / 2) * 4 + x / 2];
                    assert_eq!(px(rgba, w, x, y), [v, v, v]);
                }
            }
        }
    }

    #[test]
    fn refuses_mismatched_panels_and_options() {
        let shape = FrameShape::rgb(4, 4);
        let a = vec![0u8; 2 * 48];
        let b = vec![0u8; 48];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.gif");
        let opts = GifOptions::default();
        let e = write_panels_gif(
            &path,
            &[Panel { label: "a", frames: &a }, Panel { label: "b", frames: &b }],
            shape,
            &opts,
        )
        .unwrap_err();
        assert!(e.to_string().contains("panel \"b\""), "{e}");
        assert!(write_gif(&path, &a[..47], shape, &opts).is_err());
        assert!(write_gif(&path, &a, shape, &GifOptions { fps: 0.0, ..Default::default() }).is_err());
        assert!(write_gif(&path, &a, shape, &GifOptions { quantize_speed: 0, ..Default::default() }).is_err());
        assert!(write_gif(&path, &a, FrameShape { channels: 4, ..shape }, &opts).is_err());
        assert!(!path.exists());
    }
}
