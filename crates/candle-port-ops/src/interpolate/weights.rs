//! Per-axis resampling as taps: `out[j] = sum_t weight[t][j] * x[index[t][j]]`, with the
//! indices and weights ATen's kernels use (linear, bicubic, antialiased, area).
//!
//! The taps depend only on sizes, scales and the precision, never on the tensor's values: they
//! become constant index and weight tensors, so the resize differentiates through
//! `index_select` / `matmul` alone.

use super::coords::{axis_scale, floorf, source_index, Precision};
use crate::taps::Taps;

/// Linear interpolation (ATen's `compute_source_index_and_lambda`): two taps,
///
/// ```text
/// src = max(source_index(j), 0);  i0 = min(floorf(src), in - 1);  i1 = min(i0 + 1, in - 1)
/// w1 = clamp(src - i0, 0, 1);     w0 = 1 - w1
/// ```
///
/// An unchanged size, whatever the scale, reads `x[j]` twice with weights 1 and 0 (ATen's copy
/// case): a copy for finite input, NaN from an inf (`0 * inf`) as in torch.
pub(crate) fn linear(
    input: usize,
    output: usize,
    align_corners: bool,
    scale_factor: Option<f64>,
    p: Precision,
) -> Taps {
    if input == output {
        let mut taps = Taps::new(input, output, 2);
        for j in 0..output {
            taps.set(0, j, j as i64, 1.0);
            taps.set(1, j, j as i64, 0.0);
        }
        return taps;
    }
    let scale = axis_scale(input, output, align_corners, scale_factor, p);
    let mut taps = Taps::new(input, output, 2);
    for j in 0..output {
        let src = source_index(scale, j, align_corners, false, p);
        let i0 = floorf(src).min(input as i64 - 1);
        let w1 = p.round(src - i0 as f64).clamp(0.0, 1.0);
        let i1 = if i0 < input as i64 - 1 { i0 + 1 } else { i0 };
        taps.set(0, j, i0, p.round(1.0 - w1));
        taps.set(1, j, i1, w1);
    }
    taps
}

/// ATen's bicubic constant (`upsample_bicubic2d`).
const CUBIC_A: f64 = -0.75;

/// Keys' cubic kernel for `|x| <= 1`: `((a + 2) x - (a + 3)) x^2 + 1`.
fn keys_near(x: f64, a: f64) -> f64 {
    ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
}

/// Keys' cubic kernel for `1 <= |x| <= 2`: `((a x - 5a) x + 8a) x - 4a`.
fn keys_far(x: f64, a: f64) -> f64 {
    ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
}

/// Bicubic interpolation (ATen's `upsample_bicubic2d`): four taps,
///
/// ```text
/// src = source_index(j) (no clamp at 0);  i = min(floorf(src), in - 1);  t = clamp(src - i, 0, 1)
/// w = [K(t + 1), K(t), K(1 - t), K(2 - t)]  at  clamp(i - 1 + k, 0, in - 1)
/// ```
///
/// with Keys' kernel `K` (`A = -0.75`): taps past a border pile up on the edge sample. An
/// unchanged size is resampled too (ATen does not special-case it for bicubic).
pub(crate) fn cubic(
    input: usize,
    output: usize,
    align_corners: bool,
    scale_factor: Option<f64>,
    p: Precision,
) -> Taps {
    let scale = axis_scale(input, output, align_corners, scale_factor, p);
    let mut taps = Taps::new(input, output, 4);
    for j in 0..output {
        let src = source_index(scale, j, align_corners, true, p);
        let i = floorf(src).min(input as i64 - 1);
        let t = p.round(src - i as f64).clamp(0.0, 1.0);
        let w = [
            keys_far(t + 1.0, CUBIC_A),
            keys_near(t, CUBIC_A),
            keys_near(1.0 - t, CUBIC_A),
            keys_far(2.0 - t, CUBIC_A),
        ];
        for (k, w) in w.into_iter().enumerate() {
            taps.set(k, j, i - 1 + k as i64, p.round(w));
        }
    }
    taps
}

/// Antialiased linear (`cubic = false`, `_upsample_bilinear2d_aa`) or bicubic (`cubic = true`,
/// `_upsample_bicubic2d_aa`) resizing: PIL's separable filter, with ATen's roundings.
///
/// ```text
/// support = h * max(scale, 1)  (h = 1 linear, 2 cubic);  inv = 1 / max(scale, 1)
/// center  = scale * (j + 0.5)
/// xmin    = max(trunc(center - support + 0.5), 0);  xmax = min(trunc(center + support + 0.5), in)
/// w[k]    = f((xmin + k - center + 0.5) * inv)  for xmin + k < xmax, normalised to sum 1
/// ```
///
/// with `f` the triangle `max(0, 1 - |t|)` or Keys' cubic with `a = -0.5` (PIL's, not the
/// `-0.75` of plain bicubic). `None` when the size does not change (ATen copies the axis).
pub(crate) fn antialias(
    input: usize,
    output: usize,
    align_corners: bool,
    scale_factor: Option<f64>,
    cubic: bool,
    p: Precision,
) -> Option<Taps> {
    if input == output {
        return None;
    }
    let scale = axis_scale(input, output, align_corners, scale_factor, p);
    let half = if cubic { 2.0 } else { 1.0 };
    let wide = scale >= 1.0;
    let support = if wide { p.round(scale * half) } else { half };
    let inv = if wide { p.round(1.0 / scale) } else { 1.0 };
    let count = support.ceil() as usize * 2 + 1;
    let filter = |t: f64| -> f64 {
        let t = t.abs();
        if cubic {
            if t < 1.0 {
                keys_near(t, -0.5)
            } else if t < 2.0 {
                keys_far(t, -0.5)
            } else {
                0.0
            }
        } else if t < 1.0 {
            1.0 - t
        } else {
            0.0
        }
    };
    let mut taps = Taps::new(input, output, count);
    let mut w = vec![0.0; count];
    for j in 0..output {
        let center = p.round(scale * (j as f64 + 0.5));
        let xmin = ((p.round(center - support) + 0.5).trunc() as i64).max(0);
        let xmax = ((p.round(center + support) + 0.5).trunc() as i64).min(input as i64);
        let size = (xmax - xmin).clamp(0, count as i64) as usize;
        let mut total = 0.0;
        for (k, wk) in w.iter_mut().enumerate() {
            *wk = if k < size {
                let t = p.round((p.round((xmin + k as i64) as f64 - center) + 0.5) * inv);
                p.round(filter(t))
            } else {
                0.0
            };
            total = p.round(total + *wk);
        }
        // Taps from `size` on are not read by ATen: they stay on the zero slab.
        for (k, &wk) in w.iter().enumerate().take(size) {
            let wk = if total != 0.0 {
                p.round(wk / total)
            } else {
                wk
            };
            taps.set(k, j, xmin + k as i64, wk);
        }
    }
    Some(taps)
}

/// Area resizing = adaptive average pooling: output `j` averages inputs
/// `floor(j * in / out) .. ceil((j + 1) * in / out)`. `None` when the size does not change.
pub(crate) fn area(input: usize, output: usize) -> Option<Taps> {
    if input == output {
        return None;
    }
    let start = |j: usize| j * input / output;
    let end = |j: usize| ((j + 1) * input).div_ceil(output);
    let count = (0..output).map(|j| end(j) - start(j)).max().unwrap_or(1);
    let mut taps = Taps::new(input, output, count);
    for j in 0..output {
        let (s, e) = (start(j), end(j));
        let w = 1.0 / (e - s) as f64;
        // A window shorter than `count` leaves its last taps on the zero slab.
        for (k, q) in (s..e).enumerate() {
            taps.set(k, j, q as i64, w);
        }
    }
    Some(taps)
}
