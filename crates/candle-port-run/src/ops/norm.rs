//! Normalisations: `native_batch_norm` (train: batch statistics, biased variance; eval: running
//! statistics), `native_layer_norm` and `native_group_norm`, each
//! `y = (x - mean) / sqrt(var + eps) * w + b`, composed of candle ops that have a backward; and
//! `_weight_norm_interface` (weight normalisation, `w = g * v / ||v||`).
//! In native mode a one-dim layer norm with weight and bias runs `candle_nn::ops::layer_norm`,
//! the fused op a straightforward port uses.

use candle_core::{Result, Tensor};

use super::conv::per_channel;
use super::OpsMode;
use crate::value::{dim, usizes, Args, Value};

/// Maps the norm ops; `None` for other ops.
pub fn run(name: &str, args: &Args, mode: OpsMode) -> Option<Result<Value>> {
    match name {
        "native_batch_norm"
        | "_native_batch_norm_legit"
        | "_native_batch_norm_legit_functional" => Some(
            args.bool_or(5, "training", false)
                .and_then(|t| batch_norm(args, t, 7)),
        ),
        "_native_batch_norm_legit_no_training" => Some(batch_norm(args, false, 6)),
        "batch_norm" => Some(
            args.bool_or(5, "training", false)
                .and_then(|t| batch_norm(args, t, 7))
                .and_then(first),
        ),
        "native_layer_norm" => Some(layer_norm(args, mode)),
        "layer_norm" => Some(layer_norm_plain(args, mode)),
        "native_group_norm" => Some(group_norm(args)),
        "_weight_norm_interface" => Some(weight_norm(args)),
        _ => None,
    }
}

fn first(v: Value) -> Result<Value> {
    match v {
        Value::Tuple(mut items) if !items.is_empty() => Ok(items
            .swap_remove(0)
            .map(Value::Tensor)
            .unwrap_or(Value::Nothing)),
        other => Ok(other),
    }
}

/// `(x - mean) * rstd` with mean and biased variance over `dims` (kept).
fn standardize(x: &Tensor, dims: &[usize], eps: f64) -> Result<(Tensor, Tensor, Tensor)> {
    let mean = x.mean_keepdim(dims)?;
    let centered = x.broadcast_sub(&mean)?;
    let var = centered.sqr()?.mean_keepdim(dims)?;
    let rstd = (var + eps)?.sqrt()?.recip()?;
    Ok((centered.broadcast_mul(&rstd)?, mean, rstd))
}

fn affine(
    y: Tensor,
    w: Option<Tensor>,
    b: Option<Tensor>,
    shape: &dyn Fn(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let y = match w {
        Some(w) => y.broadcast_mul(&shape(&w)?)?,
        None => y,
    };
    match b {
        Some(b) => y.broadcast_add(&shape(&b)?),
        None => Ok(y),
    }
}

fn batch_norm(a: &Args, training: bool, eps_at: usize) -> Result<Value> {
    let x = a.tensor(0, "input")?;
    let (w, b) = (a.opt_tensor(1, "weight")?, a.opt_tensor(2, "bias")?);
    let eps = a.float_or(eps_at, "eps", 1e-5)?;
    let rank = x.rank();
    let dims: Vec<usize> = (0..rank).filter(|&d| d != 1).collect();
    let (y, mean, rstd) = if training {
        standardize(&x, &dims, eps)?
    } else {
        let rm = per_channel(&a.tensor(3, "running_mean")?, rank)?;
        let rv = per_channel(&a.tensor(4, "running_var")?, rank)?;
        let rstd = (rv + eps)?.sqrt()?.recip()?;
        (x.broadcast_sub(&rm)?.broadcast_mul(&rstd)?, rm, rstd)
    };
    let y = affine(y, w, b, &|t| per_channel(t, rank))?;
    let c = mean.elem_count();
    Ok(Value::Tuple(vec![
        Some(y),
        Some(mean.reshape(c)?),
        Some(rstd.reshape(c)?),
        None,
        None,
    ]))
}

fn layer_norm_core(a: &Args, mode: OpsMode) -> Result<(Tensor, Option<(Tensor, Tensor)>)> {
    let x = a.tensor(0, "input")?;
    let shape = usizes(&a.ints_or(1, "normalized_shape", &[])?)?;
    let (w, b) = (a.opt_tensor(2, "weight")?, a.opt_tensor(3, "bias")?);
    let eps = a.float_or(4, "eps", 1e-5)?;
    if let (OpsMode::Native, 1, Some(w), Some(b)) = (mode, shape.len(), &w, &b) {
        return Ok((
            candle_nn::ops::layer_norm(&x.contiguous()?, w, b, eps as f32)?,
            None,
        ));
    }
    let rank = x.rank();
    let dims: Vec<usize> = (rank - shape.len()..rank).collect();
    let (y, mean, rstd) = standardize(&x, &dims, eps)?;
    Ok((affine(y, w, b, &|t| Ok(t.clone()))?, Some((mean, rstd))))
}

fn layer_norm(a: &Args, mode: OpsMode) -> Result<Value> {
    let (y, stats) = layer_norm_core(a, mode)?;
    let (mean, rstd) = stats
        .map(|(m, r)| (Some(m), Some(r)))
        .unwrap_or((None, None));
    Ok(Value::Tuple(vec![Some(y), mean, rstd]))
}

fn layer_norm_plain(a: &Args, mode: OpsMode) -> Result<Value> {
    Ok(Value::Tensor(layer_norm_core(a, mode)?.0))
}

/// `_weight_norm_interface(v, g, dim)`: `(g * v / ||v||, ||v||)`, the norm over every dim but
/// `dim` (kept, the shape of `g`). `torch.nn.utils.weight_norm` (EnCodec's and DAC's convolutions)
/// traces to it; composed of `sqr`, `sum_keepdim`, `sqrt` and broadcast `mul`/`div`.
fn weight_norm(a: &Args) -> Result<Value> {
    let v = a.tensor(0, "v")?;
    let g = a.tensor(1, "g")?;
    let keep = dim(a.int_or(2, "dim", 0)?, v.rank())?;
    let others: Vec<usize> = (0..v.rank()).filter(|&d| d != keep).collect();
    let norm = v.sqr()?.sum_keepdim(others.as_slice())?.sqrt()?;
    let w = v.broadcast_mul(&g.broadcast_div(&norm)?)?;
    Ok(Value::Tuple(vec![Some(w), Some(norm)]))
}

fn group_norm(a: &Args) -> Result<Value> {
    let x = a.tensor(0, "input")?;
    let (w, b) = (a.opt_tensor(1, "weight")?, a.opt_tensor(2, "bias")?);
    let groups = a.int_or(6, "group", 1)? as usize;
    let eps = a.float_or(7, "eps", 1e-5)?;
    let dims = x.dims().to_vec();
    let n = dims[0];
    let grouped = x.reshape((n, groups, ()))?;
    let (y, mean, rstd) = standardize(&grouped, &[dim(-1, 3)?], eps)?;
    let y = affine(y.reshape(dims.as_slice())?, w, b, &|t| {
        per_channel(t, dims.len())
    })?;
    Ok(Value::Tuple(vec![
        Some(y),
        Some(mean.reshape((n, groups))?),
        Some(rstd.reshape((n, groups))?),
    ]))
}

/// Softmax over `d` as `exp(x - max) / sum(exp(x - max))` (every op has a backward).
pub fn softmax_composed(x: &Tensor, d: usize) -> Result<Tensor> {
    let e = x.broadcast_sub(&x.max_keepdim(d)?.detach())?.exp()?;
    e.broadcast_div(&e.sum_keepdim(d)?)
}

/// Log-softmax over `d` as `x - max - log(sum(exp(x - max)))`.
pub fn log_softmax_composed(x: &Tensor, d: usize) -> Result<Tensor> {
    let s = x.broadcast_sub(&x.max_keepdim(d)?.detach())?;
    s.broadcast_sub(&s.exp()?.sum_keepdim(d)?.log()?)
}
