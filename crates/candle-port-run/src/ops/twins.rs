//! Ops candle has no function for at all, run in port mode by their candle-port-ops twins:
//! the other `F.interpolate` modes (`upsample_bicubic2d`, `upsample_linear1d`,
//! `upsample_trilinear3d`, `upsample_nearest1d`/`3d`, `_upsample_nearest_exact1d`/`2d`/`3d`),
//! 3-D max and average pooling, adaptive max pooling (2-D and 3-D), 3-D adaptive average pooling
//! (each also unbatched, as torch takes it) and `affine_grid_generator`. Native mode is an error
//! naming what candle lacks.

use candle_core::{bail, Result, Tensor};
use candle_port_ops::{Interpolate, Mode};

use super::resize::{per_dim, pool_options, unbatched, upsample_scales};
use super::OpsMode;
use crate::value::{usizes, Args, Value};

/// Maps the ops above; `None` for other ops.
pub fn run(name: &str, op: &str, args: &Args, mode: OpsMode) -> Option<Result<Value>> {
    let wanted = matches!(
        name,
        "upsample_bicubic2d"
            | "upsample_linear1d"
            | "upsample_trilinear3d"
            | "upsample_nearest1d"
            | "upsample_nearest3d"
            | "_upsample_nearest_exact1d"
            | "_upsample_nearest_exact2d"
            | "_upsample_nearest_exact3d"
            | "max_pool3d_with_indices"
            | "max_pool3d"
            | "avg_pool3d"
            | "adaptive_max_pool2d"
            | "adaptive_max_pool3d"
            | "_adaptive_avg_pool3d"
            | "adaptive_avg_pool3d"
            | "affine_grid_generator"
    );
    if !wanted {
        return None;
    }
    if mode == OpsMode::Native {
        return Some(Err(candle_core::Error::Msg(format!(
            "candle has no {name} op"
        ))));
    }
    Some(port(name, op, args))
}

fn port(name: &str, op: &str, a: &Args) -> Result<Value> {
    let tensor = |t: Tensor| Ok(Value::Tensor(t));
    let pair = |(y, i): (Tensor, Tensor)| Ok(Value::Tuple(vec![Some(y), Some(i)]));
    match name {
        "max_pool3d_with_indices" => {
            let p = pool_options(a, 3, true)?;
            unbatched(&a.tensor(0, "self")?, 3, |x| {
                pair(candle_port_ops::max_pool3d_with_indices(x, &p)?)
            })
        }
        "max_pool3d" => {
            let p = pool_options(a, 3, true)?;
            unbatched(&a.tensor(0, "self")?, 3, |x| {
                tensor(candle_port_ops::max_pool3d(x, &p)?)
            })
        }
        "avg_pool3d" => {
            let p = pool_options(a, 3, false)?;
            unbatched(&a.tensor(0, "self")?, 3, |x| {
                tensor(candle_port_ops::avg_pool3d(x, &p)?)
            })
        }
        "adaptive_max_pool2d" => {
            let s = per_dim(&a.ints_or(1, "output_size", &[1])?, &[1], 2)?;
            unbatched(&a.tensor(0, "self")?, 2, |x| {
                pair(candle_port_ops::adaptive_max_pool2d_with_indices(
                    x,
                    (s[0], s[1]),
                )?)
            })
        }
        "adaptive_max_pool3d" => {
            let s = per_dim(&a.ints_or(1, "output_size", &[1])?, &[1], 3)?;
            unbatched(&a.tensor(0, "self")?, 3, |x| {
                pair(candle_port_ops::adaptive_max_pool3d_with_indices(
                    x,
                    (s[0], s[1], s[2]),
                )?)
            })
        }
        "_adaptive_avg_pool3d" | "adaptive_avg_pool3d" => {
            let s = per_dim(&a.ints_or(1, "output_size", &[1])?, &[1], 3)?;
            unbatched(&a.tensor(0, "self")?, 3, |x| {
                tensor(candle_port_ops::adaptive_avg_pool3d(x, (s[0], s[1], s[2]))?)
            })
        }
        "affine_grid_generator" => {
            let size = usizes(&a.ints_or(1, "size", &[])?)?;
            tensor(candle_port_ops::affine_grid(
                &a.tensor(0, "theta")?,
                &size,
                a.bool_or(2, "align_corners", false)?,
            )?)
        }
        _ => tensor(upsample(name, op, a)?),
    }
}

/// The other interpolate modes: `(self, output_size, [align_corners,] scales...)`, or the `.vec`
/// overload's `(input, output_size, [align_corners,] scale_factors)`.
fn upsample(name: &str, op: &str, a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let (mode, n) = match name {
        "upsample_bicubic2d" => (Mode::Bicubic, 2),
        "upsample_linear1d" => (Mode::Linear, 1),
        "upsample_trilinear3d" => (Mode::Trilinear, 3),
        "upsample_nearest1d" => (Mode::Nearest, 1),
        "upsample_nearest3d" => (Mode::Nearest, 3),
        "_upsample_nearest_exact1d" => (Mode::NearestExact, 1),
        "_upsample_nearest_exact2d" => (Mode::NearestExact, 2),
        _ => (Mode::NearestExact, 3),
    };
    let aligned = matches!(mode, Mode::Bicubic | Mode::Linear | Mode::Trilinear);
    let align = if aligned {
        a.bool_or(2, "align_corners", false)?
    } else {
        false
    };
    let scales_at = if aligned { 3 } else { 2 };
    let scales = upsample_scales(a, op, scales_at, n)?;
    let opts = match (a.opt_ints(1, "output_size")?, scales) {
        (_, Some(s)) if s.len() == n => Interpolate::scale(&s, mode),
        (Some(size), _) if size.len() == n => Interpolate::size(&usizes(&size)?, mode),
        _ => bail!("{name}: neither output_size nor scale_factors"),
    };
    let opts = if aligned {
        opts.align_corners(align)
    } else {
        opts
    };
    candle_port_ops::interpolate(&x, &opts)
}
