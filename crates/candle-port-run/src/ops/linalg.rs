//! Matrix products: `t`, `mm`, `bmm`, `matmul`, `mv` and `addmv` ([`mv`], [`addmv`], shared with
//! `measure.rs`), `dot`, `addmm` (`beta * bias + alpha * a @ b`), `baddbmm` and `linear`
//! (`x @ w^T + b`), all on candle's `matmul`/`broadcast_matmul`; pairwise
//! distances `cdist`, `_cdist_forward` and `_euclidean_dist` ([`cdist`], from differences: candle
//! has no `cdist`).

use candle_core::{bail, Result, Tensor};

use crate::value::{Args, Value};

/// Maps the matrix products; `None` for other ops.
pub fn run(name: &str, args: &Args) -> Option<Result<Value>> {
    let r = match name {
        "t" => args
            .tensor(0, "self")
            .and_then(|x| if x.rank() < 2 { Ok(x) } else { x.t() }),
        "mm" | "bmm" => (|| args.tensor(0, "self")?.matmul(&args.tensor(1, "mat2")?))(),
        "matmul" => (|| {
            args.tensor(0, "self")?
                .broadcast_matmul(&args.tensor(1, "other")?)
        })(),
        // spectral norm's power iteration: `W v`, `u . (W v)`
        "mv" => (|| mv(&args.tensor(0, "self")?, &args.tensor(1, "vec")?))(),
        "addmv" => (|| {
            addmv(
                &args.tensor(0, "self")?,
                &args.tensor(1, "mat")?,
                &args.tensor(2, "vec")?,
                args.float_or(3, "beta", 1.0)?,
                args.float_or(4, "alpha", 1.0)?,
            )
        })(),
        "dot" => (|| {
            let (a, b) = (args.tensor(0, "self")?, args.tensor(1, "tensor")?);
            a.mul(&b)?.sum_all()
        })(),
        "addmm" | "baddbmm" => addmm(args),
        "linear" => linear(args),
        "cdist" | "_cdist_forward" => (|| {
            let p = args.float_or(2, "p", 2.0)?;
            cdist(&args.tensor(0, "x1")?, &args.tensor(1, "x2")?, p)
        })(),
        // torch's matmul form of p = 2 (more than 25 rows): the same distances
        "_euclidean_dist" => (|| cdist(&args.tensor(0, "x1")?, &args.tensor(1, "x2")?, 2.0))(),
        _ => return None,
    };
    Some(r.map(Value::Tensor))
}

/// `torch.cdist(x1, x2, p)`: `out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p` over broadcast
/// batch dims, from the differences (`(..., P, 1, M) - (..., 1, R, M)`): `p` 2 `sqrt(sum d^2)`,
/// 1 `sum |d|`, infinity `max |d|`, other `p > 0` `(sum |d|^p)^(1/p)`. As with every square root,
/// a zero distance (`cdist(x, x)`'s diagonal) has an infinite gradient in candle where torch's
/// is 0.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let a = Tensor::new(&[[0.0f64, 0.0], [1.0, 1.0]], &Device::Cpu)?;
/// let b = Tensor::new(&[[3.0f64, 4.0]], &Device::Cpu)?;
/// let d = candle_port_run::ops::linalg::cdist(&a, &b, 2.0)?;
/// assert_eq!(d.to_vec2::<f64>()?, [[5.0], [13.0f64.sqrt()]]);
/// let d = candle_port_run::ops::linalg::cdist(&a, &b, 1.0)?;
/// assert_eq!(d.to_vec2::<f64>()?, [[7.0], [5.0]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn cdist(x1: &Tensor, x2: &Tensor, p: f64) -> Result<Tensor> {
    if x1.rank() < 2 || x2.rank() < 2 {
        bail!(
            "cdist takes tensors of rank 2 or more, got {:?} and {:?}",
            x1.dims(),
            x2.dims()
        )
    }
    let d = x1
        .unsqueeze(x1.rank() - 1)?
        .broadcast_sub(&x2.unsqueeze(x2.rank() - 2)?)?;
    let last = d.rank() - 1;
    if p == 2.0 {
        d.sqr()?.sum(last)?.sqrt()
    } else if p == 1.0 {
        d.abs()?.sum(last)
    } else if p == f64::INFINITY {
        d.abs()?.max(last)
    } else if p > 0.0 && p.is_finite() {
        d.abs()?.powf(p)?.sum(last)?.powf(1.0 / p)
    } else {
        bail!("cdist with p = {p}: only p > 0 is mapped")
    }
}

/// `torch.mv(mat, vec)`: `mat @ vec` as a one-column matmul.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let m = Tensor::new(&[[1.0f64, 2.0], [3.0, 4.0]], &Device::Cpu)?;
/// let v = Tensor::new(&[1.0f64, -1.0], &Device::Cpu)?;
/// assert_eq!(candle_port_run::ops::linalg::mv(&m, &v)?.to_vec1::<f64>()?, [-1.0, -1.0]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn mv(mat: &Tensor, vec: &Tensor) -> Result<Tensor> {
    mat.matmul(&vec.unsqueeze(1)?)?.squeeze(1)
}

/// `torch.addmv(bias, mat, vec, beta, alpha)`: `beta * bias + alpha * mat @ vec`, `bias`
/// broadcast; with `beta` 0 `bias` is not read (NaN in it does not propagate), as torch's.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let b = Tensor::new(&[1.0f64, 1.0], &Device::Cpu)?;
/// let m = Tensor::new(&[[1.0f64, 2.0], [3.0, 4.0]], &Device::Cpu)?;
/// let v = Tensor::new(&[1.0f64, -1.0], &Device::Cpu)?;
/// let y = candle_port_run::ops::linalg::addmv(&b, &m, &v, 0.5, 2.0)?;
/// assert_eq!(y.to_vec1::<f64>()?, [-1.5, -1.5]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn addmv(bias: &Tensor, mat: &Tensor, vec: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
    let product = scaled(mv(mat, vec)?, alpha)?;
    if beta == 0.0 {
        return Ok(product);
    }
    product.broadcast_add(&scaled(bias.clone(), beta)?)
}

fn scaled(t: Tensor, s: f64) -> Result<Tensor> {
    if s == 1.0 {
        Ok(t)
    } else {
        t.affine(s, 0.0)
    }
}

fn addmm(a: &Args) -> Result<Tensor> {
    let bias = a.tensor(0, "self")?;
    let prod = a.tensor(1, "mat1")?.matmul(&a.tensor(2, "mat2")?)?;
    let beta = a.float_or(3, "beta", 1.0)?;
    let alpha = a.float_or(4, "alpha", 1.0)?;
    scaled(prod, alpha)?.broadcast_add(&scaled(bias, beta)?)
}

fn linear(a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "input")?;
    let y = x.broadcast_matmul(&a.tensor(1, "weight")?.t()?)?;
    match a.opt_tensor(2, "bias")? {
        Some(b) => y.broadcast_add(&b),
        None => Ok(y),
    }
}
