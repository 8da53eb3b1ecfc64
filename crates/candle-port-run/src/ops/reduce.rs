//! Reductions: `sum` and `mean` (all elements or over dims, `keepdim`), `amax`/`amin` (one dim at
//! a time with candle's `max_keepdim`/`min_keepdim`), `max`/`min` over a dim (values and int64
//! indices: [`max_dim`]) or of all elements, `var` and `std` (with `correction`: [`var`]) and
//! `var_mean`/`std_mean`, `argmax`/`argmin` (candle's first index of the extreme, as int64),
//! `logsumexp` ([`logsumexp`]), `prod` ([`prod`]), `all`/`any` (masks: [`all_any`]) and
//! `count_nonzero`, `cumsum` (candle's, with torch's `dtype`: [`cumsum`]). The public functions
//! are the compositions `measure.rs` probes.

use candle_core::{DType, Result, Tensor};

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
        "max" | "min" => return Some(extreme(name, args)),
        "var_mean" | "std_mean" => return Some(moments(name, args)),
        "logsumexp" => (|| {
            let x = args.tensor(0, "self")?;
            let dims = dims_of(args, &x)?;
            logsumexp(&x, &dims, args.bool_or(2, "keepdim", false)?)
        })(),
        "prod" => prod_op(args),
        "all" | "any" => (|| {
            let x = args.tensor(0, "self")?;
            let dims = dims_of(args, &x)?;
            all_any(&x, &dims, args.bool_or(2, "keepdim", false)?, name == "all")
        })(),
        "count_nonzero" => (|| {
            let x = args.tensor(0, "self")?;
            count_nonzero(&x, &dims_of(args, &x)?)
        })(),
        _ => return None,
    };
    Some(r.map(Value::Tensor))
}

/// `max.dim`/`min.dim` (values and indices), `max.default`/`min.default` (of all elements) and
/// `max.other`/`min.other` (torch.maximum).
fn extreme(name: &str, a: &Args) -> Result<Value> {
    let x = a.tensor(0, "self")?;
    let largest = name == "max";
    if a.node.op.ends_with(".other") {
        let y = a.tensor(1, "other")?;
        return Ok(Value::Tensor(if largest {
            x.broadcast_maximum(&y)?
        } else {
            x.broadcast_minimum(&y)?
        }));
    }
    match a.opt_int(1, "dim")? {
        Some(d) => {
            let (values, indices) = max_dim(
                &x,
                dim(d, x.rank())?,
                a.bool_or(2, "keepdim", false)?,
                largest,
            )?;
            Ok(Value::Tuple(vec![Some(values), Some(indices)]))
        }
        None => {
            let (values, _) = max_dim(&x.flatten_all()?, 0, false, largest)?;
            Ok(Value::Tensor(values))
        }
    }
}

/// `torch.max(x, dim, keepdim)` (`largest`) or `torch.min`: the values and their int64 indices,
/// the first index of the extreme as torch's (candle's `argmax_keepdim`/`argmin_keepdim`), the
/// values gathered there, so that the gradient goes to that index alone, as torch's (candle's
/// `max_keepdim` gives it to every tied element). torch's `max()` of all elements spreads it
/// evenly over ties instead; without ties the two agree.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[1.0f64, 3.0, 3.0], [0.0, -1.0, 0.0]], &Device::Cpu)?;
/// let (v, i) = candle_port_run::ops::reduce::max_dim(&x, 1, false, true)?;
/// assert_eq!(v.to_vec1::<f64>()?, [3.0, 0.0]);
/// assert_eq!(i.to_vec1::<i64>()?, [1, 0]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn max_dim(x: &Tensor, d: usize, keepdim: bool, largest: bool) -> Result<(Tensor, Tensor)> {
    let x = x.contiguous()?;
    let at = if largest {
        x.argmax_keepdim(d)?
    } else {
        x.argmin_keepdim(d)?
    };
    let values = x.gather(&at, d)?;
    let indices = at.to_dtype(DType::I64)?;
    if keepdim {
        Ok((values, indices))
    } else {
        Ok((values.squeeze(d)?, indices.squeeze(d)?))
    }
}

/// `torch.logsumexp(x, dims, keepdim)`: candle's `log_sum_exp` (`log(sum(exp(x - m))) + m`,
/// `m` the maximum over `dims`; the result does not depend on `m`, so neither does its gradient).
/// A slice of only `-inf` gives NaN here (torch: `-inf`).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[0.0f64, 0.0], [800.0, 800.0]], &Device::Cpu)?;
/// let y = candle_port_run::ops::reduce::logsumexp(&x, &[1], true)?;
/// let want = [[2.0f64.ln()], [800.0 + 2.0f64.ln()]];
/// assert_eq!(y.dims(), [2, 1]);
/// assert!((y.to_vec2::<f64>()?[1][0] - want[1][0]).abs() < 1e-12);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn logsumexp(x: &Tensor, dims: &[usize], keepdim: bool) -> Result<Tensor> {
    let mut y = x.log_sum_exp(dims)?;
    if keepdim {
        for &d in dims {
            y = y.unsqueeze(d)?;
        }
    }
    Ok(y)
}

/// `torch.prod(x, d, keepdim=True)` for a float tensor: a tree of products of the two halves of
/// the dim (an odd last element joins the next level), `log2(n)` multiplies, so the gradient is
/// candle's `mul` backward: right with zeros too (torch's formula divides where it can).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[1.0f64, 2.0, 3.0, 4.0, 5.0]], &Device::Cpu)?;
/// let y = candle_port_run::ops::reduce::prod(&x, 1)?;
/// assert_eq!(y.to_vec2::<f64>()?, [[120.0]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn prod(x: &Tensor, d: usize) -> Result<Tensor> {
    let mut y = x.clone();
    while y.dims()[d] > 1 {
        let n = y.dims()[d];
        let half = n / 2;
        let product = y.narrow(d, 0, half)?.mul(&y.narrow(d, half, half)?)?;
        y = if n % 2 == 1 {
            Tensor::cat(&[&product, &y.narrow(d, n - 1, 1)?], d)?
        } else {
            product
        };
    }
    if y.dims()[d] == 0 {
        let mut shape = y.dims().to_vec();
        shape[d] = 1;
        return Tensor::ones(shape, y.dtype(), y.device());
    }
    Ok(y)
}

/// `prod(self, *, dtype)` of all elements, `prod.dim_int(self, dim, keepdim, *, dtype)`; integers
/// and masks give int64, as torch's (multiplied in float64).
fn prod_op(a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let x = x.to_dtype(super::shape::dtype_kwarg_or(a, x.dtype())?)?;
    let integer = !x.dtype().is_float();
    let x = if integer { x.to_dtype(DType::F64)? } else { x };
    let y = match a.opt_int(1, "dim")? {
        Some(d) => {
            let d = dim(d, x.rank())?;
            let y = prod(&x, d)?;
            if a.bool_or(2, "keepdim", false)? {
                y
            } else {
                y.squeeze(d)?
            }
        }
        None => prod(&x.flatten_all()?, 0)?.squeeze(0)?,
    };
    if integer {
        y.to_dtype(DType::I64)
    } else {
        Ok(y)
    }
}

/// `torch.all(x, dims, keepdim)` (`all`) or `torch.any`: whether every (any) element over `dims`
/// is non-zero (NaN counts, as torch's), as the u8 0/1 mask this runner holds torch's bools in.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[1.0f64, 0.0], [2.0, 3.0]], &Device::Cpu)?;
/// let all = candle_port_run::ops::reduce::all_any(&x, &[1], false, true)?;
/// let any = candle_port_run::ops::reduce::all_any(&x, &[0, 1], false, false)?;
/// assert_eq!((all.to_vec1::<u8>()?, any.to_vec0::<u8>()?), (vec![0, 1], 1));
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn all_any(x: &Tensor, dims: &[usize], keepdim: bool, all: bool) -> Result<Tensor> {
    let mut y = x.ne(0.0)?;
    for &d in dims {
        y = if all {
            y.min_keepdim(d)?
        } else {
            y.max_keepdim(d)?
        };
    }
    if keepdim {
        return Ok(y);
    }
    for &d in dims.iter().rev() {
        y = y.squeeze(d)?;
    }
    Ok(y)
}

/// `torch.count_nonzero(x, dims)` (all dims when none): the int64 count of non-zero elements.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[1.0f64, 0.0], [2.0, 3.0]], &Device::Cpu)?;
/// let n = candle_port_run::ops::reduce::count_nonzero(&x, &[1])?;
/// assert_eq!(n.to_vec1::<i64>()?, [1, 2]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn count_nonzero(x: &Tensor, dims: &[usize]) -> Result<Tensor> {
    x.ne(0.0)?.to_dtype(DType::I64)?.sum(dims)
}

/// `torch.var(x, dims, correction, keepdim=True)`: `sum((x - mean)^2) / (n - correction)`, `n`
/// the number of elements reduced (`var`, `std`, `var_mean`, `std_mean`).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[1.0f64, 2.0, 3.0, 4.0]], &Device::Cpu)?;
/// let v = candle_port_run::ops::reduce::var(&x, &[1], 1.0)?.to_vec2::<f64>()?;
/// assert!((v[0][0] - 5.0 / 3.0).abs() < 1e-15);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn var(x: &Tensor, dims: &[usize], correction: f64) -> Result<Tensor> {
    let n: usize = dims.iter().map(|&d| x.dims()[d]).product();
    let centered = x.broadcast_sub(&x.mean_keepdim(dims)?)?;
    centered
        .sqr()?
        .sum_keepdim(dims)?
        .affine(1.0 / (n as f64 - correction), 0.0)
}

/// `var_mean.correction(self, dim, *, correction, keepdim)` and `std_mean`: `(var or std, mean)`.
fn moments(name: &str, a: &Args) -> Result<Value> {
    let x = a.tensor(0, "self")?;
    let dims = dims_of(a, &x)?;
    let spread = var(&x, &dims, correction(a))?;
    let spread = if name == "std_mean" {
        spread.sqrt()?
    } else {
        spread
    };
    let mut out = [spread, x.mean_keepdim(dims.as_slice())?];
    if !keepdim(a)? {
        for t in &mut out {
            for &d in dims.iter().rev() {
                *t = t.squeeze(d)?;
            }
        }
    }
    let [spread, mean] = out;
    Ok(Value::Tuple(vec![Some(spread), Some(mean)]))
}

fn correction(a: &Args) -> f64 {
    a.node
        .kwargs
        .get("correction")
        .and_then(|c| c.as_f64())
        .unwrap_or(1.0)
}

/// `keepdim` by position 2 or keyword (keyword-only in the `.correction` overloads).
fn keepdim(a: &Args) -> Result<bool> {
    Ok(a.bool_or(2, "keepdim", false)?
        || a.node
            .kwargs
            .get("keepdim")
            .and_then(|k| k.as_bool())
            .unwrap_or(false))
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
    let keep = keepdim(a)?;
    let y = match name {
        "sum" => x.sum_keepdim(dims.as_slice())?,
        "mean" => x.mean_keepdim(dims.as_slice())?,
        "var" | "std" => {
            let var = var(&x, &dims, correction(a))?;
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
