//! Activations and softmax: `relu`, `gelu` (erf and tanh forms), `silu`, `sigmoid`, `tanh`,
//! `hardtanh`, `hardswish`, `prelu`, (`x * clamp(x + 3, 0, 6) / 6`), `hardsigmoid`, `leaky_relu`, `elu`,
//! `glu` (`a * sigmoid(b)` of the two halves);
//! `_softmax`/`_log_softmax`: in native mode candle_nn's (`softmax_last_dim` on the last dim),
//! in port mode composed as `exp(x - max) / sum`.

use candle_core::{Result, Tensor};

use super::norm::{log_softmax_composed, softmax_composed};
use super::OpsMode;
use crate::value::{dim, Args, Value};

/// Maps the activations; `None` for other ops.
pub fn run(name: &str, args: &Args, mode: OpsMode) -> Option<Result<Value>> {
    let x = match args.tensor(0, "self") {
        Ok(x) => x,
        Err(e) => return known(name).then_some(Err(e)),
    };
    let r = match name {
        "relu" => relu(&x, mode),
        "gelu" => gelu(&x, args.opt_str(1, "approximate") == Some("tanh"), mode),
        "silu" => x.silu(),
        "sigmoid" => candle_nn::ops::sigmoid(&x),
        "tanh" => x.tanh(),
        "hardtanh" => (|| {
            x.maximum(args.float_or(1, "min_val", -1.0)?)?
                .minimum(args.float_or(2, "max_val", 1.0)?)
        })(),
        "hardsigmoid" => hard_sigmoid(&x),
        "hardswish" => hard_sigmoid(&x).and_then(|h| x.mul(&h)),
        "leaky_relu" => (|| {
            let slope = args.float_or(1, "negative_slope", 0.01)?;
            x.relu()?.sub(&x.neg()?.relu()?.affine(slope, 0.0)?)
        })(),
        "elu" => (|| {
            let alpha = args.float_or(1, "alpha", 1.0)?;
            let neg = x.minimum(0.0)?.exp()?.affine(alpha, -alpha)?;
            x.relu()?.add(&neg)
        })(),
        "_prelu_kernel" | "prelu" => prelu(&x, args),
        "glu" => glu(&x, args),
        // _safe_softmax differs only on rows that are all -inf (0 instead of NaN).
        "_safe_softmax" => softmax("_softmax", &x, args, mode),
        "_softmax" | "_log_softmax" => softmax(name, &x, args, mode),
        _ => return None,
    };
    Some(r.map(Value::Tensor))
}

fn known(name: &str) -> bool {
    matches!(
        name,
        "relu"
            | "gelu"
            | "silu"
            | "sigmoid"
            | "tanh"
            | "hardtanh"
            | "hardsigmoid"
            | "hardswish"
            | "leaky_relu"
            | "elu"
            | "_softmax"
            | "_log_softmax"
            | "_prelu_kernel"
            | "prelu"
            | "glu"
    )
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
