//! Activations and softmax: `relu`, `gelu` (erf and tanh forms), `silu`, `sigmoid`, `tanh` (and
//! their in-place forms `sigmoid_`, `tanh_`),
//! `hardtanh`, `hardswish`, `prelu`, (`x * clamp(x + 3, 0, 6) / 6`), `hardsigmoid`, `leaky_relu`,
//! `elu` (with torch's `scale` and `input_scale`: `selu` traces to it), `celu`, `softplus` (`beta`,
//! `threshold`), `mish` (candle_nn's), `log_sigmoid` (`-softplus(-x)`), `hardshrink`,
//! `glu` (`a * sigmoid(b)` of the two halves);
//! `_softmax`/`_log_softmax`: in native mode candle_nn's (`softmax_last_dim` on the last dim),
//! in port mode composed as `exp(x - max) / sum`.
//!
//! The compositions are public: `measure.rs` probes the same functions, so the op table's verdict
//! is about the code this runner runs.

use candle_core::{Result, Tensor};

use super::norm::{log_softmax_composed, softmax_composed};
use super::OpsMode;
use crate::value::{dim, Args, Value};

/// torch's SELU constants (`F.selu` traces to `elu(x, SELU_ALPHA, SELU_SCALE)`).
pub const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
/// See [`SELU_ALPHA`].
pub const SELU_SCALE: f64 = 1.050_700_987_355_480_5;

/// Maps the activations; `None` for other ops.
pub fn run(name: &str, args: &Args, mode: OpsMode) -> Option<Result<Value>> {
    let x = || args.tensor(0, "self");
    let r = match name {
        "relu" => x().and_then(|x| relu(&x, mode)),
        "relu6" => x().and_then(|x| x.maximum(0.0)?.minimum(6.0)),
        "gelu" => x().and_then(|x| gelu(&x, args.opt_str(1, "approximate") == Some("tanh"), mode)),
        "silu" => x().and_then(|x| x.silu()),
        // the in-place forms run as pure ones: `exec` checks that nothing reads the mutated
        // tensor afterwards (make_fx's LSTM cell)
        "sigmoid" | "sigmoid_" => x().and_then(|x| candle_nn::ops::sigmoid(&x)),
        "tanh" | "tanh_" => x().and_then(|x| x.tanh()),
        "hardtanh" => (|| {
            x()?.maximum(args.float_or(1, "min_val", -1.0)?)?
                .minimum(args.float_or(2, "max_val", 1.0)?)
        })(),
        "hardsigmoid" => x().and_then(|x| hard_sigmoid(&x)),
        "hardswish" => x().and_then(|x| hard_sigmoid(&x).and_then(|h| x.mul(&h))),
        "leaky_relu" => (|| {
            let x = x()?;
            let slope = args.float_or(1, "negative_slope", 0.01)?;
            x.relu()?.sub(&x.neg()?.relu()?.affine(slope, 0.0)?)
        })(),
        "elu" => (|| {
            elu(
                &x()?,
                args.float_or(1, "alpha", 1.0)?,
                args.float_or(2, "scale", 1.0)?,
                args.float_or(3, "input_scale", 1.0)?,
            )
        })(),
        "selu" => x().and_then(|x| elu(&x, SELU_ALPHA, SELU_SCALE, 1.0)),
        "celu" => (|| celu(&x()?, args.float_or(1, "alpha", 1.0)?))(),
        "softplus" => (|| {
            softplus(
                &x()?,
                args.float_or(1, "beta", 1.0)?,
                args.float_or(2, "threshold", 20.0)?,
            )
        })(),
        "mish" => x().and_then(|x| mish(&x)),
        "log_sigmoid" => x().and_then(|x| log_sigmoid(&x)),
        // (output, buffer): the buffer is only for torch's own backward
        "log_sigmoid_forward" => {
            return Some(
                x().and_then(|x| log_sigmoid(&x))
                    .map(|y| Value::Tuple(vec![Some(y), None])),
            )
        }
        "hardshrink" => (|| hardshrink(&x()?, args.float_or(1, "lambd", 0.5)?))(),
        "_prelu_kernel" | "prelu" => x().and_then(|x| prelu(&x, args)),
        "glu" => x().and_then(|x| glu(&x, args)),
        // _safe_softmax differs only on rows that are all -inf (0 instead of NaN).
        "_safe_softmax" => x().and_then(|x| softmax("_softmax", &x, args, mode)),
        "_softmax" | "_log_softmax" => x().and_then(|x| softmax(name, &x, args, mode)),
        _ => return None,
    };
    Some(r.map(Value::Tensor))
}

/// torch's `elu(x, alpha, scale, input_scale)`:
/// `scale * (x if x > 0 else alpha * (exp(input_scale * x) - 1))` (`F.elu`: scale and input
/// scale 1; `F.selu`: [`SELU_ALPHA`], [`SELU_SCALE`]; `F.celu`: input scale `1 / alpha`).
/// candle's `Tensor::elu` where the input scale is 1 (its gradient at 0 is `alpha`, as torch's),
/// else `max(x, 0) + alpha * (exp(input_scale * min(x, 0)) - 1)`; then times `scale`.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_run::ops::activation::{elu, SELU_ALPHA, SELU_SCALE};
/// let x = Tensor::new(&[-1.0f64, 2.0], &Device::Cpu)?;
/// let y = elu(&x, SELU_ALPHA, SELU_SCALE, 1.0)?.to_vec1::<f64>()?;
/// assert!((y[0] - SELU_SCALE * SELU_ALPHA * ((-1.0f64).exp() - 1.0)).abs() < 1e-15);
/// assert!((y[1] - SELU_SCALE * 2.0).abs() < 1e-15);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn elu(x: &Tensor, alpha: f64, scale: f64, input_scale: f64) -> Result<Tensor> {
    let y = if input_scale == 1.0 {
        x.elu(alpha)?
    } else {
        let neg = x
            .minimum(0.0)?
            .affine(input_scale, 0.0)?
            .exp()?
            .affine(alpha, -alpha)?;
        x.maximum(0.0)?.add(&neg)?
    };
    if scale == 1.0 {
        Ok(y)
    } else {
        y.affine(scale, 0.0)
    }
}

/// torch's `celu(x, alpha)` = `max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`, as
/// [`elu`] with input scale `1 / alpha` (torch's own decomposition).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[-1.0f64, 2.0], &Device::Cpu)?;
/// let y = candle_port_run::ops::activation::celu(&x, 2.0)?.to_vec1::<f64>()?;
/// assert!((y[0] - 2.0 * ((-0.5f64).exp() - 1.0)).abs() < 1e-15 && y[1] == 2.0);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn celu(x: &Tensor, alpha: f64) -> Result<Tensor> {
    elu(x, alpha, 1.0, 1.0 / alpha)
}

/// torch's `softplus(x, beta, threshold)`: `log(1 + exp(beta x)) / beta`, and `x` itself where
/// `beta x > threshold` (torch's switch to the linear branch, default 20).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[-1.0f64, 30.0], &Device::Cpu)?;
/// let y = candle_port_run::ops::activation::softplus(&x, 1.0, 20.0)?.to_vec1::<f64>()?;
/// assert!((y[0] - (1.0 + (-1.0f64).exp()).ln()).abs() < 1e-15 && y[1] == 30.0);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn softplus(x: &Tensor, beta: f64, threshold: f64) -> Result<Tensor> {
    let bx = x.affine(beta, 0.0)?;
    let smooth = bx.exp()?.affine(1.0, 1.0)?.log()?.affine(1.0 / beta, 0.0)?;
    bx.gt(threshold)?.where_cond(x, &smooth)
}

/// `x * tanh(log(1 + exp(x)))`: candle_nn's `ops::mish` (what `Activation::Mish` runs).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[1.0f64], &Device::Cpu)?;
/// let y = candle_port_run::ops::activation::mish(&x)?.to_vec1::<f64>()?;
/// assert!((y[0] - (1.0 + 1.0f64.exp()).ln().tanh()).abs() < 1e-15);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn mish(x: &Tensor) -> Result<Tensor> {
    candle_nn::ops::mish(x)
}

/// `log(sigmoid(x))` as `-softplus(-x)` ([`softplus`] with torch's defaults: `x` itself below
/// -20).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[0.5f64], &Device::Cpu)?;
/// let y = candle_port_run::ops::activation::log_sigmoid(&x)?.to_vec1::<f64>()?;
/// assert!((y[0] - (1.0 / (1.0 + (-0.5f64).exp())).ln()).abs() < 1e-15);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn log_sigmoid(x: &Tensor) -> Result<Tensor> {
    softplus(&x.neg()?, 1.0, 20.0)?.neg()
}

/// torch's `hardshrink(x, lambd)`: `x` where `|x| > lambd`, else 0 (`x * (|x| > lambd)`).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[-1.0f64, 0.2, 0.7], &Device::Cpu)?;
/// let y = candle_port_run::ops::activation::hardshrink(&x, 0.5)?;
/// assert_eq!(y.to_vec1::<f64>()?, [-1.0, 0.0, 0.7]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn hardshrink(x: &Tensor, lambd: f64) -> Result<Tensor> {
    x.mul(&x.abs()?.gt(lambd)?.to_dtype(x.dtype())?)
}

/// Native: candle's `gelu`/`gelu_erf` (measured 1.6e-7 relative off torch in float64, float32
/// precision). Port: `0.5 x (1 + erf(x / sqrt 2))` or
/// `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))` from exact candle ops.
fn gelu(x: &Tensor, tanh: bool, mode: OpsMode) -> Result<Tensor> {
    match (mode, tanh) {
        (OpsMode::Native, true) => x.gelu(),
        (OpsMode::Native, false) => x.gelu_erf(),
        (OpsMode::Port, false) => x
            .affine(std::f64::consts::FRAC_1_SQRT_2, 0.0)?
            .erf()?
            .affine(0.5, 0.5)?
            .mul(x),
        (OpsMode::Port, true) => {
            let inner = x.add(&x.powf(3.0)?.affine(0.044715, 0.0)?)?;
            let k = (2.0 / std::f64::consts::PI).sqrt();
            inner.affine(k, 0.0)?.tanh()?.affine(0.5, 0.5)?.mul(x)
        }
    }
}

/// Native: candle's `relu`, whose backward passes the gradient at exactly 0 (mask `x >= 0`);
/// torch's is 0 there, which matters after zero-initialised BatchNorms (timm's ResNets).
/// Port: `x * (x > 0)`, torch's gradient.
fn relu(x: &Tensor, mode: OpsMode) -> Result<Tensor> {
    match mode {
        OpsMode::Native => x.relu(),
        OpsMode::Port => x.mul(&x.gt(0.0)?.to_dtype(x.dtype())?),
    }
}

/// `x` where `x > 0`, else `w * x` (torch's mask: the gradient at 0 is `w`'s side), with a
/// per-channel weight broadcast along dim 1.
fn prelu(x: &Tensor, a: &Args) -> Result<Tensor> {
    let w = a.tensor(1, "weight")?;
    let w = if w.rank() == 1 && x.rank() >= 2 && w.elem_count() == x.dims()[1] && w.elem_count() > 1
    {
        let mut shape = vec![1usize; x.rank()];
        shape[1] = w.elem_count();
        w.reshape(shape)?
    } else {
        w
    };
    let pos = x.gt(0.0)?.to_dtype(x.dtype())?;
    let neg = pos.affine(-1.0, 1.0)?;
    x.mul(&pos)?.add(&x.mul(&neg)?.broadcast_mul(&w)?)
}

/// `glu(x, dim)`: the first half along `dim` times the sigmoid of the second (demucs' 1x1
/// rewrite convolutions, gated CNNs).
fn glu(x: &Tensor, a: &Args) -> Result<Tensor> {
    let d = dim(a.int_or(1, "dim", -1)?, x.rank())?;
    let half = x.dims()[d] / 2;
    if half * 2 != x.dims()[d] {
        candle_core::bail!("glu: dim {d} has odd size {}", x.dims()[d])
    }
    x.narrow(d, 0, half)?
        .mul(&candle_nn::ops::sigmoid(&x.narrow(d, half, half)?)?)
}

fn hard_sigmoid(x: &Tensor) -> Result<Tensor> {
    x.affine(1.0 / 6.0, 0.5)?.maximum(0.0)?.minimum(1.0)
}

fn softmax(name: &str, x: &Tensor, a: &Args, mode: OpsMode) -> Result<Tensor> {
    let d = dim(a.int_or(1, "dim", -1)?, x.rank())?;
    let last = d + 1 == x.rank();
    match (mode, name) {
        (OpsMode::Native, "_softmax") if last => candle_nn::ops::softmax_last_dim(&x.contiguous()?),
        (OpsMode::Native, "_softmax") => candle_nn::ops::softmax(x, d),
        (OpsMode::Native, _) => candle_nn::ops::log_softmax(x, d),
        (OpsMode::Port, "_softmax") => softmax_composed(x, d),
        (OpsMode::Port, _) => log_softmax_composed(x, d),
    }
}
