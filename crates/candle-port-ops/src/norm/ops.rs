//! The functional forms, drop-in for `candle_nn::ops::layer_norm` and `candle_nn::ops::rms_norm`
//! (same arguments; `eps` may be an `f32` or an `f64`), but differentiable.

use candle_core::{bail, DType, Result, Tensor, D};

/// The dtype the statistics are computed in: float32 for half types (as torch and candle-nn do),
/// the input's own dtype otherwise.
fn internal_dtype(dtype: DType) -> DType {
    match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        other => other,
    }
}

/// `(x - mean) * rsqrt(var + eps) * weight + bias` over the last dimension (the mean removed
/// only when `remove_mean`), computed in [`internal_dtype`] and cast back to `x`'s dtype.
pub(crate) fn normalize(
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    remove_mean: bool,
    eps: f64,
) -> Result<Tensor> {
    let size = x.dim(D::Minus1)?;
    let matches = |t: &Tensor| t.dims1().is_ok_and(|n| n == size);
    if !matches(weight) || !bias.is_none_or(matches) {
        bail!(
            "norm: the last dimension of the input {:?} must equal the length of the weight {:?}{}",
            x.dims(),
            weight.dims(),
            bias.map(|b| format!(" and of the bias {:?}", b.dims()))
                .unwrap_or_default()
        )
    }
    let dtype = internal_dtype(x.dtype());
    let x_in = x.to_dtype(dtype)?;
    let centered = if remove_mean {
        x_in.broadcast_sub(&x_in.mean_keepdim(D::Minus1)?)?
    } else {
        x_in
    };
    let var = centered.sqr()?.mean_keepdim(D::Minus1)?;
    let rstd = var.affine(1.0, eps)?.sqrt()?.recip()?;
    let y = centered
        .broadcast_mul(&rstd)?
        .broadcast_mul(&weight.to_dtype(dtype)?)?;
    let y = match bias {
        Some(b) => y.broadcast_add(&b.to_dtype(dtype)?)?,
        None => y,
    };
    y.to_dtype(x.dtype())
}

/// torch's `F.layer_norm(x, (C,), weight, bias, eps)` over the last dimension:
/// `(x - mean) / sqrt(var + eps) * weight + bias`, the biased variance, per row of length `C`.
///
/// `x` (..., C), `weight` and `bias` (C). Differentiable w.r.t. all three, unlike
/// `candle_nn::ops::layer_norm` (a fused op without backward, and float32/half only); unlike
/// `candle_nn::ops::layer_norm_slow`, `eps` is not rounded to f32 (which moves float64 results
/// of rows whose variance is near `eps` off torch's by about 1e-8).
///
/// ```
/// use candle_core::{Device, Tensor, Var};
/// use candle_port_ops::norm::ops::layer_norm;
/// let x = Var::new(&[[1f64, 2., 3.]], &Device::Cpu)?;
/// let w = Var::new(&[1f64, 1., 1.], &Device::Cpu)?;
/// let b = Var::new(&[0f64, 0., 0.], &Device::Cpu)?;
/// let y = layer_norm(&x, &w, &b, 1e-5)?;
/// let grads = y.sqr()?.sum_all()?.backward()?;
/// assert!(grads.get(&w).is_some() && grads.get(&b).is_some() && grads.get(&x).is_some());
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn layer_norm(
    x: &Tensor,
    weight: &Tensor,
    bias: &Tensor,
    eps: impl Into<f64>,
) -> Result<Tensor> {
    normalize(x, weight, Some(bias), true, eps.into())
}

/// torch's `F.rms_norm(x, (C,), weight, eps)` over the last dimension:
/// `x / sqrt(mean(x^2) + eps) * weight`.
///
/// `x` (..., C), `weight` (C). Differentiable w.r.t. both, unlike `candle_nn::ops::rms_norm`
/// (a fused op without backward, and float32/half only).
///
/// ```
/// use candle_core::{Device, Tensor, Var};
/// use candle_port_ops::norm::ops::rms_norm;
/// let x = Var::new(&[[3f32, 4.]], &Device::Cpu)?;
/// let w = Var::new(&[1f32, 2.], &Device::Cpu)?;
/// let y = rms_norm(&x, &w, 0f32)?;
/// let rms = 12.5f32.sqrt(); // sqrt(mean(x^2))
/// let got = y.to_vec2::<f32>()?;
/// assert!((got[0][0] - 3. / rms).abs() < 1e-6 && (got[0][1] - 8. / rms).abs() < 1e-6);
/// assert!(y.sum_all()?.backward()?.get(&w).is_some());
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn rms_norm(x: &Tensor, weight: &Tensor, eps: impl Into<f64>) -> Result<Tensor> {
    normalize(x, weight, None, false, eps.into())
}
