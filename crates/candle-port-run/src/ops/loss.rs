//! Losses, with ATen's `reduction` (0 none, 1 mean, 2 sum): `mse_loss`, `smooth_l1_loss` (with
//! `beta`), `binary_cross_entropy` (with `weight`) and `nll_loss_forward` (with `weight` and
//! `ignore_index`; `(output, total_weight)`), composed from candle ops ([`mse_loss`],
//! [`smooth_l1_loss`], [`binary_cross_entropy`], [`nll_loss`], shared with `measure.rs`).

use candle_core::{bail, DType, Result, Tensor};

use crate::value::{Args, Value};

/// ATen's `reduction` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduction {
    /// 0: one loss per element.
    None,
    /// 1: their mean (the default).
    Mean,
    /// 2: their sum.
    Sum,
}

impl Reduction {
    /// ATen's int (`at::Reduction`).
    pub fn from_aten(r: i64) -> Result<Self> {
        match r {
            0 => Ok(Reduction::None),
            1 => Ok(Reduction::Mean),
            2 => Ok(Reduction::Sum),
            _ => bail!("unknown reduction {r}"),
        }
    }

    fn apply(self, losses: Tensor) -> Result<Tensor> {
        match self {
            Reduction::None => Ok(losses),
            Reduction::Mean => losses.mean_all(),
            Reduction::Sum => losses.sum_all(),
        }
    }
}

/// Maps the losses; `None` for other ops.
pub fn run(name: &str, args: &Args) -> Option<Result<Value>> {
    let reduction = |i: usize| Reduction::from_aten(args.int_or(i, "reduction", 1)?);
    let r = match name {
        "mse_loss" => (|| {
            let (x, t) = (args.tensor(0, "self")?, args.tensor(1, "target")?);
            mse_loss(&x, &t, reduction(2)?)
        })(),
        "smooth_l1_loss" => (|| {
            let (x, t) = (args.tensor(0, "self")?, args.tensor(1, "target")?);
            smooth_l1_loss(&x, &t, reduction(2)?, args.float_or(3, "beta", 1.0)?)
        })(),
        "binary_cross_entropy" => (|| {
            let (x, t) = (args.tensor(0, "self")?, args.tensor(1, "target")?);
            binary_cross_entropy(
                &x,
                &t,
                args.opt_tensor(2, "weight")?.as_ref(),
                reduction(3)?,
            )
        })(),
        "nll_loss_forward" => {
            return Some((|| {
                let (x, t) = (args.tensor(0, "self")?, args.tensor(1, "target")?);
                let (out, total) = nll_loss(
                    &x,
                    &t,
                    args.opt_tensor(2, "weight")?.as_ref(),
                    reduction(3)?,
                    args.int_or(4, "ignore_index", -100)?,
                )?;
                Ok(Value::Tuple(vec![Some(out), Some(total)]))
            })())
        }
        _ => return None,
    };
    Some(r.map(Value::Tensor))
}

/// `F.mse_loss(x, t, reduction)`: `(x - t)^2`, broadcast, reduced.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_run::ops::loss::{mse_loss, Reduction};
/// let x = Tensor::new(&[1.0f64, 3.0], &Device::Cpu)?;
/// let t = Tensor::new(&[0.0f64, 0.0], &Device::Cpu)?;
/// assert_eq!(mse_loss(&x, &t, Reduction::Mean)?.to_vec0::<f64>()?, 5.0);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn mse_loss(x: &Tensor, t: &Tensor, reduction: Reduction) -> Result<Tensor> {
    reduction.apply(x.broadcast_sub(t)?.sqr()?)
}

/// `F.smooth_l1_loss(x, t, reduction, beta)`: with `d = x - t`, `0.5 d^2 / beta` where
/// `|d| < beta`, else `|d| - 0.5 beta`; `beta` 0 is the L1 loss `|d|`.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_run::ops::loss::{smooth_l1_loss, Reduction};
/// let x = Tensor::new(&[0.5f64, 3.0], &Device::Cpu)?;
/// let t = x.zeros_like()?;
/// let y = smooth_l1_loss(&x, &t, Reduction::None, 1.0)?;
/// assert_eq!(y.to_vec1::<f64>()?, [0.125, 2.5]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn smooth_l1_loss(x: &Tensor, t: &Tensor, reduction: Reduction, beta: f64) -> Result<Tensor> {
    let d = x.broadcast_sub(t)?;
    let abs = d.abs()?;
    if beta == 0.0 {
        return reduction.apply(abs);
    }
    let losses = abs.lt(beta)?.where_cond(
        &d.sqr()?.affine(0.5 / beta, 0.0)?,
        &abs.affine(1.0, -0.5 * beta)?,
    )?;
    reduction.apply(losses)
}

/// `F.binary_cross_entropy(p, t, weight, reduction)`:
/// `-weight (t log p + (1 - t) log(1 - p))`, each log clamped at -100 as torch's.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_run::ops::loss::{binary_cross_entropy, Reduction};
/// let p = Tensor::new(&[0.5f64, 0.0], &Device::Cpu)?;
/// let t = Tensor::new(&[1.0f64, 1.0], &Device::Cpu)?;
/// let y = binary_cross_entropy(&p, &t, None, Reduction::None)?.to_vec1::<f64>()?;
/// assert!((y[0] - 2.0f64.ln()).abs() < 1e-15 && y[1] == 100.0);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn binary_cross_entropy(
    p: &Tensor,
    t: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
) -> Result<Tensor> {
    let log_p = p.log()?.maximum(-100.0)?;
    let log_q = p.affine(-1.0, 1.0)?.log()?.maximum(-100.0)?;
    let losses = t
        .mul(&log_p)?
        .add(&t.affine(-1.0, 1.0)?.mul(&log_q)?)?
        .neg()?;
    let losses = match weight {
        Some(w) => losses.broadcast_mul(w)?,
        None => losses,
    };
    reduction.apply(losses)
}

/// `nll_loss_forward(x, target, weight, reduction, ignore_index)` for `x` of shape `(N, C)` or
/// `(C)`: `(output, total_weight)` with the per-sample loss `-weight[t] x[n, t]` (0 where `t` is
/// `ignore_index`), `total_weight` the sum of `weight[t]` over the kept samples (0 for
/// reduction none, as torch's), the mean `sum / total_weight`. `x` is gathered at the targets, so
/// the gradient goes to those entries alone.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_run::ops::loss::{nll_loss, Reduction};
/// let x = Tensor::new(&[[-1.0f64, -2.0], [-3.0, -4.0]], &Device::Cpu)?;
/// let t = Tensor::new(&[1i64, -100], &Device::Cpu)?;
/// let (out, total) = nll_loss(&x, &t, None, Reduction::Mean, -100)?;
/// assert_eq!((out.to_vec0::<f64>()?, total.to_vec0::<f64>()?), (2.0, 1.0));
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn nll_loss(
    x: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: Reduction,
    ignore_index: i64,
) -> Result<(Tensor, Tensor)> {
    let single = x.rank() == 1;
    let (x, target) = if single {
        (x.unsqueeze(0)?, target.reshape(1)?)
    } else {
        (x.clone(), target.clone())
    };
    let target = target.to_dtype(DType::I64)?.contiguous()?;
    let keep = target.ne(ignore_index)?;
    let safe = keep.where_cond(&target, &target.zeros_like()?)?;
    let picked = x.contiguous()?.gather(&safe.unsqueeze(1)?, 1)?.squeeze(1)?;
    let kept = keep.to_dtype(x.dtype())?;
    let w = match weight {
        Some(w) => w
            .to_dtype(x.dtype())?
            .contiguous()?
            .index_select(&safe, 0)?
            .mul(&kept)?,
        None => kept,
    };
    let losses = picked.mul(&w)?.neg()?;
    let total = w.sum_all()?;
    Ok(match reduction {
        Reduction::None => {
            let losses = if single { losses.squeeze(0)? } else { losses };
            (losses, total.zeros_like()?)
        }
        Reduction::Sum => (losses.sum_all()?, total),
        Reduction::Mean => (losses.sum_all()?.div(&total)?, total),
    })
}
