//! Nearest and nearest-exact source indices along one axis, as ATen's CPU kernels pick them.

use super::coords::{axis_scale, floorf, source_index, Precision};

/// Which of ATen's two index rules a nearest resize uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NearestRule {
    /// The generic kernel (3-D and 5-D input, nearest-exact, and 4-D nearest with
    /// `out_h + out_w > 128`): scale and product in the input's precision, then `floorf`.
    Generic,
    /// `nearest_idx` of `UpSample.h` (4-D nearest with `out_h + out_w <= 128`, measured on
    /// torch 2.14): copy when `out == in`, `j / 2` when `out == 2 * in`, else f32 arithmetic.
    NearestIdx,
}

/// Source index of every output sample (`None`: the axis is copied unchanged).
///
/// ```text
/// nearest:        src = min(floorf(j * scale), in - 1)
/// nearest-exact:  src = min(floorf(max(scale * (j + 0.5) - 0.5, 0) + 0.5), in - 1)
/// scale = 1 / scale_factor when a scale factor reaches the kernel, else in / out
/// ```
pub(crate) fn nearest_index(
    input: usize,
    output: usize,
    scale_factor: Option<f64>,
    exact: bool,
    rule: NearestRule,
    p: Precision,
) -> Option<Vec<u32>> {
    let last = input as i64 - 1;
    let index: Vec<u32> = if rule == NearestRule::NearestIdx && !exact {
        if output == input {
            return None;
        }
        if output == 2 * input {
            (0..output as u32).map(|j| j >> 1).collect()
        } else {
            let scale = axis_scale(input, output, false, scale_factor, Precision::F32);
            (0..output)
                .map(|j| floorf(Precision::F32.mul(j as f64, scale)).min(last) as u32)
                .collect()
        }
    } else {
        let scale = axis_scale(input, output, false, scale_factor, p);
        (0..output)
            .map(|j| {
                let src = if exact {
                    source_index(scale, j, false, false, p) + 0.5
                } else {
                    p.mul(scale, j as f64)
                };
                floorf(src).min(last) as u32
            })
            .collect()
    };
    let identity = input == output && index.iter().enumerate().all(|(j, &i)| i as usize == j);
    (!identity).then_some(index)
}
