//! Resizing: every `F.interpolate` mode (torch 2.14), equal to torch in forward and backward.
//!
//! Every mode is separable: each spatial axis whose size changes is resampled in turn, with
//! constant indices and weights computed on the host exactly as ATen's CPU kernels compute them
//! (`coords`, `weights`, `nearest`), and applied with `index_select` or a `matmul` (`apply`).
//! Those ops differentiate in candle, so the result trains; candle's own `upsample_*` do not
//! (`upsample_bilinear2d` has no backward at all).

mod apply;
mod coords;
mod nearest;
mod options;
mod weights;

pub use options::{Interpolate, Mode, Target};

use candle_core::{bail, DType, Result, Tensor};

use crate::kernels;
use crate::taps::{all_finite, Taps};
use coords::Precision;
use nearest::{nearest_index, NearestRule};

/// `F.interpolate(x, size | scale_factor, mode, align_corners, recompute_scale_factor,
/// antialias)` for an `(N, C, L)`, `(N, C, H, W)` or `(N, C, D, H, W)` tensor of f32 or f64
/// (other dtypes are refused: cast first).
///
/// Per spatial axis, with `scale = (in - 1) / (out - 1)` (align_corners), else
/// `1 / scale_factor` (a scale factor given and not recomputed), else `in / out`:
///
/// ```text
/// nearest        y[j] = x[min(floor(j * scale), in - 1)]
/// nearest-exact  y[j] = x[min(floor((j + 0.5) * scale), in - 1)]
/// linear         s = max(scale * (j + 0.5) - 0.5, 0) (or scale * j);  i = floor(s)
///                y[j] = (1 - (s - i)) x[i] + (s - i) x[min(i + 1, in - 1)]
/// bicubic        s as linear without the clamp; Keys' kernel (A = -0.75) on x[i-1 ..= i+2],
///                indices clamped to the border
/// antialias      PIL's triangle / cubic (a = -0.5) filter, widened by scale when downscaling
/// area           y[j] = mean(x[floor(j * in / out) .. ceil((j + 1) * in / out)])
/// ```
///
/// rounded as ATen rounds them, so indices match torch exactly. On the CPU (f32, f64) each axis
/// is one kernel pass over torch's taps, whose backward is the adjoint pass; elsewhere a
/// composition whose backward is candle's (`index_add` of the gradient, or the transposed
/// matmul). Both equal torch's ([`crate::kernels`]).
///
/// Errors, like torch: `align_corners` with nearest / nearest-exact / area, a rank the mode
/// does not take, `antialias` other than for 4-D bilinear / bicubic, `recompute_scale_factor`
/// with a size, a `size`/`scale_factor` entry count that is neither 1 nor the spatial rank,
/// a zero output size, and a non-positive scale.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::{interpolate, Interpolate, Mode};
/// # fn main() -> candle_core::Result<()> {
/// let x = Tensor::new(&[[[1f64, 3.]]], &Device::Cpu)?; // (1, 1, 2)
/// let y = interpolate(&x, &Interpolate::scale(&[2.0], Mode::Linear))?;
/// assert_eq!(y.flatten_all()?.to_vec1::<f64>()?, [1.0, 1.5, 2.5, 3.0]);
/// let n = interpolate(&x, &Interpolate::size(&[3], Mode::Nearest))?;
/// assert_eq!(n.flatten_all()?.to_vec1::<f64>()?, [1.0, 1.0, 3.0]);
/// # Ok(()) }
/// ```
pub fn interpolate(x: &Tensor, opts: &Interpolate) -> Result<Tensor> {
    let p = match x.dtype() {
        DType::F32 => Precision::F32,
        DType::F64 => Precision::F64,
        other => bail!("interpolate: only f32 and f64 tensors are supported, got {other:?} (cast with to_dtype first)"),
    };
    let plan = options::plan(x.dims(), opts)?;
    let spatial = plan.inputs.len();
    let rule = if opts.mode == Mode::Nearest
        && spatial == 2
        && plan.outputs.iter().sum::<usize>() <= 128
    {
        NearestRule::NearestIdx
    } else {
        NearestRule::Generic
    };
    if matches!(opts.mode, Mode::Nearest | Mode::NearestExact) {
        return nearest_resize(x, &plan, opts.mode == Mode::NearestExact, rule, p);
    }
    let kernel = kernels::apply_to(x);
    // The kernels read torch's taps in torch's order; they need finiteness only to know whether
    // an unchanged axis may be copied (an inf on it gives NaN in torch, `0 * inf`).
    let unchanged = plan.inputs.iter().zip(&plan.outputs).any(|(i, o)| i == o);
    let finite = if kernel && !unchanged {
        true
    } else {
        all_finite(x)?
    };
    let taps: Vec<Option<Taps>> = (0..spatial)
        .map(|k| {
            let (input, output, scale) = (plan.inputs[k], plan.outputs[k], plan.scales[k]);
            let (ac, cubic) = (plan.align_corners, opts.mode == Mode::Bicubic);
            match opts.mode {
                Mode::Area => weights::area(input, output),
                _ if opts.antialias => weights::antialias(input, output, ac, scale, cubic, p),
                Mode::Bicubic => Some(weights::cubic(input, output, ac, scale, p)),
                // Finite input: an unchanged axis is copied (ATen's result, exactly).
                _ if finite && input == output => None,
                _ => Some(weights::linear(input, output, ac, scale, p)),
            }
        })
        .collect();
    let resized = if kernel {
        kernels::resample_axes(x, &taps)?
    } else {
        composed_resize(x, &taps, &plan, finite)?
    };
    match resized {
        Some(y) => Ok(y),
        // Every axis is copied: a new tensor, as torch returns, with an identity backward.
        None => x.copy(),
    }
}

/// The composition: each axis with taps in turn (`None` if there are none). Shrinking axes
/// first, so every later axis works on a smaller tensor; for non-finite input the last axis
/// first, as ATen's separable kernels (the order decides where +inf meets -inf).
fn composed_resize(
    x: &Tensor,
    taps: &[Option<Taps>],
    plan: &options::Plan,
    finite: bool,
) -> Result<Option<Tensor>> {
    let mut order: Vec<usize> = (0..taps.len()).collect();
    if finite {
        order.sort_by(|&a, &b| {
            let ra = plan.outputs[a] as f64 / plan.inputs[a] as f64;
            let rb = plan.outputs[b] as f64 / plan.inputs[b] as f64;
            ra.total_cmp(&rb)
        });
    } else {
        order.reverse();
    }
    let mut y = None;
    for k in order {
        if let Some(t) = &taps[k] {
            let from = y.as_ref().unwrap_or(x);
            y = Some(apply::resample(from, k + 2, t, finite)?);
        }
    }
    Ok(y)
}

/// Nearest and nearest-exact: one `index_select` over the flattened spatial dims, with the
/// index `sum_k src_k[j_k] * stride_k` built from each axis's source indices.
fn nearest_resize(
    x: &Tensor,
    plan: &options::Plan,
    exact: bool,
    rule: NearestRule,
    p: Precision,
) -> Result<Tensor> {
    let axes: Vec<Option<Vec<u32>>> = (0..plan.inputs.len())
        .map(|k| {
            nearest_index(
                plan.inputs[k],
                plan.outputs[k],
                plan.scales[k],
                exact,
                rule,
                p,
            )
        })
        .collect();
    if axes.iter().all(Option::is_none) {
        return x.copy();
    }
    if kernels::apply_to(x) {
        // One tap of weight 1 per changed axis: a copy forward, a sum of the copies backward.
        let taps: Vec<Option<Taps>> = axes
            .iter()
            .enumerate()
            .map(|(k, axis)| {
                axis.as_ref().map(|index| {
                    let mut taps = Taps::new(plan.inputs[k], plan.outputs[k], 1);
                    for (j, &i) in index.iter().enumerate() {
                        taps.set(0, j, i64::from(i), 1.0);
                    }
                    taps
                })
            })
            .collect();
        return Ok(kernels::resample_axes(x, &taps)?.unwrap_or(x.clone()));
    }
    if let Some(factors) = repeat_factors(&axes, &plan.inputs, &plan.outputs) {
        return repeat(x, &factors);
    }
    let mut flat: Vec<u32> = vec![0];
    for (k, axis) in axes.iter().enumerate() {
        let input = plan.inputs[k] as u32;
        let index: Vec<u32> = match axis {
            Some(index) => index.clone(),
            None => (0..input).collect(),
        };
        flat = flat
            .iter()
            .flat_map(|&base| index.iter().map(move |&i| base * input + i))
            .collect();
    }
    let dims = x.dims();
    let inputs: usize = plan.inputs.iter().product();
    let y = apply::select(&x.reshape((dims[0], dims[1], inputs))?, 2, &flat)?;
    let mut out_dims = dims[..2].to_vec();
    out_dims.extend(&plan.outputs);
    y.reshape(out_dims)
}

/// Each axis's integer factor when every axis is unchanged or repeats each input `f` times
/// (`index[j] = j / f`), as nearest upscaling by integer factors does.
fn repeat_factors(
    axes: &[Option<Vec<u32>>],
    inputs: &[usize],
    outputs: &[usize],
) -> Option<Vec<usize>> {
    axes.iter()
        .zip(inputs.iter().zip(outputs))
        .map(|(axis, (&input, &output))| match axis {
            None => Some(1),
            Some(index) => {
                let f = output / input;
                let repeats = f >= 1
                    && output == f * input
                    && index.iter().enumerate().all(|(j, &i)| i as usize == j / f);
                repeats.then_some(f)
            }
        })
        .collect()
}

/// Nearest upscaling by integer factors as a broadcast: `(n, c, s1, 1, s2, 1, ..)` broadcast to
/// `(n, c, s1, f1, s2, f2, ..)` and copied, so no index is built or read; the backward is
/// candle's broadcast backward, a sum over each input's copies (torch's). (A `cat` of `f` copies
/// per axis measured no faster in benches/speed.rs, forward or backward.)
fn repeat(x: &Tensor, factors: &[usize]) -> Result<Tensor> {
    let dims = x.dims();
    let (mut split, mut wide, mut out) =
        (dims[..2].to_vec(), dims[..2].to_vec(), dims[..2].to_vec());
    for (&s, &f) in dims[2..].iter().zip(factors) {
        split.extend([s, 1]);
        wide.extend([s, f]);
        out.push(s * f);
    }
    x.reshape(split)?
        .broadcast_as(wide)?
        .contiguous()?
        .reshape(out)
}
