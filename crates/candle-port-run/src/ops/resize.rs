//! Pooling and upsampling, each in two modes: native runs the candle op a straightforward port
//! uses (`max_pool2d_with_stride`, `avg_pool2d_with_stride`, `upsample_bilinear2d`,
//! `upsample_nearest2d`, a `mean` for a 1x1 adaptive pool; none for `grid_sampler_2d`); port runs
//! the candle-port-ops twin,
//! equal to torch in forward and backward. A native op that cannot express the call (padding,
//! dilation, ceil_mode, a non-1x1 adaptive pool) is an error naming what is missing. Pooling
//! takes an unbatched `(C, H, W)` input as torch does (`unbatched`).

use candle_core::{bail, Result, Tensor};
use candle_port_ops::{grid_sample, GridMode, GridPadding, GridSample, Interpolate, Mode, Pool};

use super::OpsMode;
use crate::value::{usizes, Args, Value};

/// Maps the pooling and upsampling ops; `None` for other ops.
pub fn run(name: &str, op: &str, args: &Args, mode: OpsMode) -> Option<Result<Value>> {
    let r = match name {
        "max_pool2d_with_indices" => pool(args, |x| max_pool(x, args, mode, true)),
        "max_pool2d" => pool(args, |x| max_pool(x, args, mode, false)),
        "avg_pool2d" => pool(args, |x| avg_pool(x, args, mode).map(Value::Tensor)),
        "upsample_bilinear2d" | "upsample_nearest2d" => {
            upsample(name, op, args, mode).map(Value::Tensor)
        }
        "_adaptive_avg_pool2d" | "adaptive_avg_pool2d" => {
            pool(args, |x| adaptive_avg(x, args, mode).map(Value::Tensor))
        }
        "grid_sampler_2d" | "grid_sampler" => grid_sampler(args, mode).map(Value::Tensor),
        _ => return None,
    };
    Some(r)
}

/// The native candle op without a backward that a mapping calls, for attributing a
/// `backward not supported for X` error to its node.
pub fn candle_op_used(name: &str, mode: OpsMode) -> Option<&'static str> {
    match (name, mode) {
        ("upsample_bilinear2d", OpsMode::Native) => Some("upsample_bilinear2d"),
        ("upsample_nearest2d", OpsMode::Native) => Some("upsample_nearest2d"),
        _ => None,
    }
}

/// `grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners)`: candle has no
/// grid_sample, so native is an error; port runs candle-port-ops' `grid_sample`.
fn grid_sampler(a: &Args, mode: OpsMode) -> Result<Tensor> {
    if mode == OpsMode::Native {
        bail!("candle has no grid_sample op")
    }
    let (x, grid) = (a.tensor(0, "input")?, a.tensor(1, "grid")?);
    let interpolation = match a.int_or(2, "interpolation_mode", 0)? {
        0 => GridMode::Bilinear,
        1 => GridMode::Nearest,
        2 => GridMode::Bicubic,
        m => bail!("grid_sampler interpolation_mode {m}"),
    };
    let padding = match a.int_or(3, "padding_mode", 0)? {
        0 => GridPadding::Zeros,
        1 => GridPadding::Border,
        2 => GridPadding::Reflection,
        p => bail!("grid_sampler padding_mode {p}"),
    };
    let options = GridSample::new()
        .mode(interpolation)
        .padding_mode(padding)
        .align_corners(a.bool_or(4, "align_corners", false)?);
    grid_sample(&x, &grid, &options)
}

/// One value per spatial dim: `default` when none is given, a single value for all `n` dims, or
/// exactly `n` values.
pub(super) fn per_dim(v: &[i64], default: &[i64], n: usize) -> Result<Vec<usize>> {
    let v = usizes(if v.is_empty() { default } else { v })?;
    match v.len() {
        1 => Ok(vec![v[0]; n]),
        k if k == n => Ok(v),
        k => bail!("{k} values for {n} spatial dims"),
    }
}

/// The options of `n`-D max pooling `(self, kernel, stride, padding, dilation, ceil_mode)` or,
/// without `with_dilation`, average pooling `(self, kernel, stride, padding, ceil_mode,
/// count_include_pad, divisor_override)`; the stride defaults to the kernel.
pub(super) fn pool_options(a: &Args, n: usize, with_dilation: bool) -> Result<Pool> {
    let kernel = per_dim(&a.ints_or(1, "kernel_size", &[])?, &[1], n)?;
    let stride = per_dim(
        &a.ints_or(2, "stride", &[])?,
        &kernel.iter().map(|&k| k as i64).collect::<Vec<_>>(),
        n,
    )?;
    let padding = per_dim(&a.ints_or(3, "padding", &[0])?, &[0], n)?;
    let mut p = Pool::new(&kernel).stride(&stride).padding(&padding);
    if with_dilation {
        p = p
            .dilation(&per_dim(&a.ints_or(4, "dilation", &[1])?, &[1], n)?)
            .ceil_mode(a.bool_or(5, "ceil_mode", false)?);
    } else {
        p = p
            .ceil_mode(a.bool_or(4, "ceil_mode", false)?)
            .count_include_pad(a.bool_or(5, "count_include_pad", true)?);
        if let Some(d) = a.opt_float(6, "divisor_override")? {
            p = p.divisor_override(d as usize);
        }
    }
    Ok(p)
}

/// What candle's own pooling cannot express for these options.
fn native_pool_gap(p: &Pool, x: &Tensor) -> Option<String> {
    let stride = p.stride.clone().unwrap_or_else(|| p.kernel_size.clone());
    if p.padding.iter().any(|&v| v != 0) {
        return Some(format!("padding {:?}", p.padding));
    }
    if p.dilation.iter().any(|&v| v != 1) {
        return Some(format!("dilation {:?}", p.dilation));
    }
    if p.divisor_override.is_some() {
        return Some("divisor_override".into());
    }
    let dims = x.dims();
    let uneven = (0..2).any(|i| {
        let n = dims[dims.len() - 2 + i];
        n >= p.kernel_size[i] && (n - p.kernel_size[i]) % stride[i] != 0
    });
    (p.ceil_mode && uneven).then(|| "ceil_mode".into())
}

/// A 2-D pooling of the node's `self`, batched or not.
fn pool(a: &Args, f: impl FnOnce(&Tensor) -> Result<Value>) -> Result<Value> {
    unbatched(&a.tensor(0, "self")?, 2, f)
}

/// torch's pooling also takes an unbatched input, `(C, *spatial)` (DLinear's `nn.AvgPool1d` on a
/// `(C, L)` tensor traces to `avg_pool2d` of `(C, 1, L)`): `f` runs on it with a batch dim of 1,
/// which every result (values and indices) drops again. A batched input goes to `f` as it is.
pub(super) fn unbatched(
    x: &Tensor,
    spatial: usize,
    f: impl FnOnce(&Tensor) -> Result<Value>,
) -> Result<Value> {
    if x.rank() != spatial + 1 {
        return f(x);
    }
    match f(&x.unsqueeze(0)?)? {
        Value::Tensor(t) => Ok(Value::Tensor(t.squeeze(0)?)),
        Value::Tuple(items) => items
            .into_iter()
            .map(|t| t.map(|t| t.squeeze(0)).transpose())
            .collect::<Result<Vec<_>>>()
            .map(Value::Tuple),
        Value::Nothing => Ok(Value::Nothing),
    }
}

fn max_pool(x: &Tensor, a: &Args, mode: OpsMode, with_indices: bool) -> Result<Value> {
    let p = pool_options(a, 2, true)?;
    let (y, idx) = match mode {
        OpsMode::Port => {
            let (y, i) = candle_port_ops::max_pool2d_with_indices(x, &p)?;
            (y, Some(i))
        }
        OpsMode::Native => {
            if let Some(gap) = native_pool_gap(&p, x) {
                bail!("candle's max_pool2d has no {gap}")
            }
            let s = p.stride.clone().unwrap_or_else(|| p.kernel_size.clone());
            (
                x.max_pool2d_with_stride((p.kernel_size[0], p.kernel_size[1]), (s[0], s[1]))?,
                None,
            )
        }
    };
    Ok(if with_indices {
        Value::Tuple(vec![Some(y), idx])
    } else {
        Value::Tensor(y)
    })
}

fn avg_pool(x: &Tensor, a: &Args, mode: OpsMode) -> Result<Tensor> {
    let p = pool_options(a, 2, false)?;
    match mode {
        OpsMode::Port => candle_port_ops::avg_pool2d(x, &p),
        OpsMode::Native => {
            if let Some(gap) = native_pool_gap(&p, x) {
                bail!("candle's avg_pool2d has no {gap}")
            }
            let s = p.stride.clone().unwrap_or_else(|| p.kernel_size.clone());
            x.avg_pool2d_with_stride((p.kernel_size[0], p.kernel_size[1]), (s[0], s[1]))
        }
    }
}

fn adaptive_avg(x: &Tensor, a: &Args, mode: OpsMode) -> Result<Tensor> {
    let size = per_dim(&a.ints_or(1, "output_size", &[1])?, &[1], 2)?;
    match mode {
        OpsMode::Port => candle_port_ops::adaptive_avg_pool2d(x, (size[0], size[1])),
        OpsMode::Native if size == [1, 1] => x.mean_keepdim((2, 3)),
        OpsMode::Native => bail!("candle has no adaptive_avg_pool2d (output {size:?})"),
    }
}

/// The scales of an `upsample_*` node: the `.vec` overload's `scale_factors` list, else one
/// `scales_*` argument per spatial dim from position `at`; `None` when not given.
pub(super) fn upsample_scales(a: &Args, op: &str, at: usize, n: usize) -> Result<Option<Vec<f64>>> {
    if op.ends_with(".vec") {
        return Ok(a
            .get(at, "scale_factors")
            .and_then(|j| j.as_array())
            .map(|v| v.iter().filter_map(|s| s.as_f64()).collect()));
    }
    let names: &[&str] = match n {
        1 => &["scales"],
        2 => &["scales_h", "scales_w"],
        _ => &["scales_d", "scales_h", "scales_w"],
    };
    names
        .iter()
        .enumerate()
        .map(|(i, name)| a.opt_float(at + i, name))
        .collect()
}

fn upsample(name: &str, op: &str, a: &Args, mode: OpsMode) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let bilinear = name == "upsample_bilinear2d";
    let (scales_at, align) = if bilinear {
        (3, a.bool_or(2, "align_corners", false)?)
    } else {
        (2, false)
    };
    let size = a.opt_ints(1, "output_size")?;
    let scales = upsample_scales(a, op, scales_at, 2)?;
    let dims = x.dims();
    let (h, w) = (dims[dims.len() - 2], dims[dims.len() - 1]);
    let out = match (&size, &scales) {
        (Some(s), _) if s.len() == 2 => (s[0] as usize, s[1] as usize),
        (_, Some(s)) if s.len() == 2 => (
            (h as f64 * s[0]).floor() as usize,
            (w as f64 * s[1]).floor() as usize,
        ),
        _ => bail!("{name}: neither output_size nor scale_factors"),
    };
    match mode {
        OpsMode::Native => match (bilinear, &scales) {
            (true, Some(s)) => x.upsample_bilinear2d_with_scale(s[0], s[1], align),
            (true, None) => x.upsample_bilinear2d(out.0, out.1, align),
            (false, _) => x.upsample_nearest2d(out.0, out.1),
        },
        OpsMode::Port => {
            let m = if bilinear {
                Mode::Bilinear
            } else {
                Mode::Nearest
            };
            let opts = match &scales {
                Some(s) if s.len() == 2 => Interpolate::scale(s, m),
                _ => Interpolate::size(&[out.0, out.1], m),
            };
            let opts = if bilinear {
                opts.align_corners(align)
            } else {
                opts
            };
            candle_port_ops::interpolate(&x, &opts)
        }
    }
}
