//! Reductions: `sum` and `mean` (all elements or over dims, `keepdim`), `amax`/`amin` (one dim at
//! a time with candle's `max_keepdim`/`min_keepdim`), `var` and `std` (with `correction`), `argmax`/`argmin`
//! (candle's first index of the extreme, as int64), `cumsum` (candle's, with torch's `dtype`:
//! [`cumsum`], shared with `measure.rs`).

use candle_core::{Result, Tensor};

use super::OpsMode;
use crate::value::{dim, Args, Value};

/// Maps the reductions; `None` for other ops.
pub fn run(name: &str, args: &Args, _mode: OpsMode) -> Option<Result<Value>> {
    let r = match name {
        "sum" | "mean" | "amax" | "amin" | "var" | "std" => reduce(name, args),
        "argmax" | "argmin" => arg_extreme(name, args),
        "linalg_vector_norm" => vector_norm(args),
        "cumsum" => (|| {
            let x = args.tensor(0, "self")?;
            let x = x.to_dtype(super::shape::dtype_kwarg_or(args, x.dtype())?)?;
            cumsum(&x, dim(args.int_or(1, "dim", 0)?, x.rank())?)
        })(),
        _ => return None,
    };
    Some(r.map(Value::Tensor))
}

/// `torch.cumsum(x, dim)`: candle's `Tensor::cumsum` (a matmul with an upper triangle of ones);
/// a 0-d tensor is its own sum; a mask or integers are summed in float64 and give int64, as
/// torch's.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[1.0f64, 2.0, 3.0]], &Device::Cpu)?;
/// let y = candle_port_run::ops::reduce::cumsum(&x, 1)?;
/// assert_eq!(y.to_vec2::<f64>()?, [[1.0, 3.0, 6.0]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn cumsum(x: &Tensor, d: usize) -> Result<Tensor> {
    if x.dtype().is_float() {
        return x.cumsum(d);
    }
    // torch sums a mask or integers as int64; candle's matmul is float only (exact to 2^53)
    x.to_dtype(candle_core::DType::F64)?
        .cumsum(d)?
        .to_dtype(candle_core::DType::I64)
}

/// `linalg_vector_norm(self, ord, dim, keepdim)` for `ord` 2 (spectral norm, normalize) and 1.
fn vector_norm(a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let ord = a.float_or(1, "ord", 2.0)?;
    let dims = match a.opt_ints(2, "dim")? {
        Some(d) if !d.is_empty() => d
            .iter()
            .map(|&d| dim(d, x.rank()))
            .collect::<Result<Vec<_>>>()?,
        _ => (0..x.rank()).collect(),
    };
    let y = if ord == 2.0 {
        x.sqr()?.sum_keepdim(dims.as_slice())?.sqrt()?
    } else if ord == 1.0 {
        x.abs()?.sum_keepdim(dims.as_slice())?
    } else {
        candle_core::bail!("linalg_vector_norm with ord {ord}: only 1 and 2 are mapped")
    };
    if a.bool_or(3, "keepdim", false)? {
        return Ok(y);
    }
    let mut y = y;
    for &d in dims.iter().rev() {
        y = y.squeeze(d)?;
    }
    Ok(y)
}

fn dims_of(a: &Args, x: &Tensor) -> Result<Vec<usize>> {
    match a.opt_ints(1, "dim")? {
        Some(d) if !d.is_empty() => {
            let mut v = d
                .iter()
                .map(|&d| dim(d, x.rank()))
                .collect::<Result<Vec<_>>>()?;
            v.sort_unstable();
            v.dedup();
            Ok(v)
        }
        _ => Ok((0..x.rank()).collect()),
    }
}

fn reduce(name: &str, a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let dims = dims_of(a, &x)?;
    let keep = a.bool_or(2, "keepdim", false)?
        || a.node
            .kwargs
            .get("keepdim")
            .and_then(|k| k.as_bool())
            .unwrap_or(false);
    let y = match name {
        "sum" => x.sum_keepdim(dims.as_slice())?,
        "mean" => x.mean_keepdim(dims.as_slice())?,
        "var" | "std" => {
            let correction = a
                .node
                .kwargs
                .get("correction")
                .and_then(|c| c.as_f64())
                .unwrap_or(1.0);
            let n: usize = dims.iter().map(|&d| x.dims()[d]).product();
            let centered = x.broadcast_sub(&x.mean_keepdim(dims.as_slice())?)?;
            let var = centered
                .sqr()?
                .sum_keepdim(dims.as_slice())?
                .affine(1.0 / (n as f64 - correction), 0.0)?;
            if name == "std" {
                var.sqrt()? // demucs normalises its input by the mixture's std
            } else {
                var
            }
        }
        _ => {
            let mut y = x.clone();
            for &d in &dims {
                y = if name == "amax" {
                    y.max_keepdim(d)?
                } else {
                    y.min_keepdim(d)?
                };
            }
            y
        }
    };
    if keep {
        return Ok(y);
    }
    let mut y = y;
    for &d in dims.iter().rev() {
        y = y.squeeze(d)?;
    }
    Ok(y)
}

fn arg_extreme(name: &str, a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let keep = a.bool_or(2, "keepdim", false)?;
    let (x, d) = match a.opt_ints(1, "dim")? {
        Some(d) if !d.is_empty() => (x.clone(), dim(d[0], x.rank())?),
        _ => (x.flatten_all()?, 0),
    };
    let y = if name == "argmax" {
        x.argmax_keepdim(d)?
    } else {
        x.argmin_keepdim(d)?
    };
    let y = y.to_dtype(candle_core::DType::I64)?;
    if keep {
        Ok(y)
    } else {
        y.squeeze(d)
    }
}
