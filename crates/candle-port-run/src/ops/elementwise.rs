//! Elementwise arithmetic with torch's broadcasting: `add`/`sub` (with `alpha`), `mul`, `div`
//! (with `rounding_mode`), `rsub`, `addcmul` (`self + value * tensor1 * tensor2`), `addcdiv`,
//! `lerp`, `sign`, `isinf`, tensor-or-number operands, unary math (`neg`, `exp`, `log`, `sqrt`,
//! `rsqrt`, `abs`, `reciprocal`, `pow`, `sin`, `cos`, `erf`, `log1p`, `expm1`, `log2`, `floor`,
//! `ceil`, `round`, `trunc`, `frac`), `floor_divide`, `remainder`, `fmod`, `xlogy`, `clamp*`,
//! `maximum`/`minimum`, `logaddexp`, `where`, `masked_fill`, comparisons and the logical ops on
//! their masks; tensor operands of mixed dtypes are promoted as torch does (`result_type`). The compositions `measure.rs` probes are public ([`log1p`], [`expm1`],
//! [`logaddexp`], [`trunc`], [`frac`], [`floor_divide`], [`remainder`], [`fmod`], [`xlogy`]).

use candle_core::{bail, DType, Result, Tensor};

use crate::value::{Args, Value};

/// Maps the elementwise ops; `None` for other ops.
pub fn run(name: &str, op: &str, args: &Args) -> Option<Result<Value>> {
    let r = match name {
        "div" if args.opt_str(2, "rounding_mode").is_some() => (|| {
            let (x, y) = operands(args, "self", "other")?;
            match args.opt_str(2, "rounding_mode") {
                Some("floor") => floor_divide(&x, &y),
                Some("trunc") => integral(&x, &y, |a, b| trunc(&a.broadcast_div(b)?)),
                Some(mode) => bail!("div with rounding_mode {mode:?}"),
                None => x.broadcast_div(&y),
            }
        })(),
        "add" | "add_" | "sub" | "mul" | "div" | "rsub" => binary(name, args),
        "floor_divide" => on_operands(args, floor_divide),
        "remainder" => on_operands(args, remainder),
        "fmod" => on_operands(args, fmod),
        "xlogy" => on_operands(args, xlogy),
        "addcmul" => addcmul(args),
        "addcdiv" => addcdiv(args),
        "lerp" => lerp(args),
        "sign" => args.tensor(0, "self").and_then(|x| x.sign()),
        "isinf" => args
            .tensor(0, "self")
            .and_then(|x| x.abs()?.eq(f64::INFINITY)?.to_dtype(DType::U8)),
        "neg" | "exp" | "log" | "sqrt" | "rsqrt" | "abs" | "reciprocal" | "sin" | "cos"
        | "square" | "floor" | "ceil" | "round" | "trunc" | "erf" | "log1p" | "expm1" | "log2"
        | "frac" => args.tensor(0, "self").and_then(|x| unary(name, &x)),
        "logical_and" | "bitwise_and" | "__and__" | "logical_or" | "bitwise_or" | "__or__"
        | "logical_xor" | "bitwise_xor" | "__xor__" => mask_binary(name, args),
        "logical_not" | "bitwise_not" => args
            .tensor(0, "self")
            .and_then(|x| x.eq(0u8)?.to_dtype(DType::U8)),
        "pow" => pow(op, args),
        "clamp" | "clamp_min" | "clamp_max" => clamp(name, args),
        "maximum" | "minimum" => (|| {
            let (x, y) = promote(args.tensor(0, "self")?, args.tensor(1, "other")?)?;
            if name == "maximum" {
                x.broadcast_maximum(&y)
            } else {
                x.broadcast_minimum(&y)
            }
        })(),
        "where" => (|| {
            let c = args.tensor(0, "condition")?;
            let (x, y) = promote(args.tensor(1, "self")?, args.tensor(2, "other")?)?;
            let shape = c.shape().broadcast_shape_binary_op(
                &x.shape().broadcast_shape_binary_op(y.shape(), "where")?,
                "where",
            )?;
            c.broadcast_as(&shape)?
                .where_cond(&x.broadcast_as(&shape)?, &y.broadcast_as(&shape)?)
        })(),
        "logaddexp" => (|| {
            let (x, y) = promote(args.tensor(0, "self")?, args.tensor(1, "other")?)?;
            logaddexp(&x, &y)
        })(),
        "eq" | "ne" | "gt" | "ge" | "lt" | "le" => compare(name, args),
        "masked_fill" => masked_fill(args),
        "isnan" => args.tensor(0, "self").and_then(|x| x.ne(&x)),
        _ => return None,
    };
    Some(r.map(Value::Tensor))
}

fn other(a: &Args, x: &Tensor) -> Result<Tensor> {
    if a.is_tensor(1, "other") {
        let y = a.tensor(1, "other")?;
        if y.dtype() != x.dtype() && y.rank() == 0 {
            return y.to_dtype(x.dtype());
        }
        return Ok(y);
    }
    let v = a.float_or(1, "other", 0.0)?;
    Tensor::new(v, x.device())?.to_dtype(x.dtype())
}

/// torch's type promotion, reduced to what candle has: a float operand wins (of two floats the
/// wider: float32 with float64 is float64, float16 with bfloat16 float32), else int64.
fn promote(x: Tensor, y: Tensor) -> Result<(Tensor, Tensor)> {
    match <[Tensor; 2]>::try_from(promote_all(vec![x, y])?) {
        Ok([x, y]) => Ok((x, y)),
        Err(_) => bail!("promote: two tensors in, two out"),
    }
}

/// [`promote`] over any number of tensors (torch's `result_type` for `cat`, `stack`, `addcmul`):
/// all converted to the one dtype torch computes in.
pub(crate) fn promote_all(xs: Vec<Tensor>) -> Result<Vec<Tensor>> {
    let Some(first) = xs.first().map(|x| x.dtype()) else {
        return Ok(xs);
    };
    if xs.iter().all(|x| x.dtype() == first) {
        return Ok(xs);
    }
    let floats: Vec<DType> = xs
        .iter()
        .map(|x| x.dtype())
        .filter(|d| d.is_float())
        .collect();
    let target = match floats.split_first() {
        Some((&f, rest)) => rest.iter().fold(f, |a, &b| wider_float(a, b)),
        None => DType::I64,
    };
    xs.into_iter().map(|x| x.to_dtype(target)).collect()
}

fn wider_float(a: DType, b: DType) -> DType {
    match (a, b) {
        (DType::F64, _) | (_, DType::F64) => DType::F64,
        (DType::F32, _) | (_, DType::F32) => DType::F32,
        (x, y) if x == y => x,
        _ => DType::F32, // float16 with bfloat16
    }
}

fn binary(name: &str, a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let alpha = a.float_or(2, "alpha", 1.0)?;
    let y = other(a, &x)?;
    let (x, y) = promote(x, y)?;
    let y = if alpha != 1.0 {
        y.affine(alpha, 0.0)?
    } else {
        y
    };
    match name {
        "add" | "add_" => x.broadcast_add(&y),
        "sub" => x.broadcast_sub(&y),
        "rsub" => y.broadcast_sub(&x),
        "mul" => x.broadcast_mul(&y),
        "div" => x.broadcast_div(&y),
        _ => bail!("not a binary op: {name}"),
    }
}

/// `self + value * tensor1 * tensor2`, broadcast, in the dtype torch promotes the three to
/// (torch fuses the multiply-add; candle rounds the product first, a difference of one rounding).
fn addcmul(a: &Args) -> Result<Tensor> {
    let [x, t1, t2] = three(a)?;
    let value = a.float_or(3, "value", 1.0)?;
    let product = t1.broadcast_mul(&t2)?;
    let product = if value != 1.0 {
        product.affine(value, 0.0)?
    } else {
        product
    };
    x.broadcast_add(&product)
}

/// `self + value * tensor1 / tensor2`, broadcast, promoted as [`addcmul`] (the op table's probe
/// `a + 0.5 b / c`).
fn addcdiv(a: &Args) -> Result<Tensor> {
    let [x, t1, t2] = three(a)?;
    let quotient = t1.broadcast_div(&t2)?;
    x.broadcast_add(&quotient.affine(a.float_or(3, "value", 1.0)?, 0.0)?)
}

/// `addcmul`'s and `addcdiv`'s `self`, `tensor1` and `tensor2` in their promoted dtype.
fn three(a: &Args) -> Result<[Tensor; 3]> {
    let xs = vec![
        a.tensor(0, "self")?,
        a.tensor(1, "tensor1")?,
        a.tensor(2, "tensor2")?,
    ];
    <[Tensor; 3]>::try_from(promote_all(xs)?)
        .map_err(|_| candle_core::Error::Msg("three tensors in, three out".into()))
}

/// `lerp(start, end, weight)` = `start + weight * (end - start)`, the weight a number
/// (`lerp.Scalar`) or a tensor (`lerp.Tensor`), broadcast.
fn lerp(a: &Args) -> Result<Tensor> {
    let (x, y) = (a.tensor(0, "self")?, a.tensor(1, "end")?);
    let step = y.broadcast_sub(&x)?;
    let step = if a.is_tensor(2, "weight") {
        step.broadcast_mul(&a.tensor(2, "weight")?)?
    } else {
        step.affine(a.float_or(2, "weight", 0.0)?, 0.0)?
    };
    x.broadcast_add(&step)
}

fn unary(name: &str, x: &Tensor) -> Result<Tensor> {
    match name {
        "neg" => x.neg(),
        "exp" => x.exp(),
        "log" => x.log(),
        "sqrt" => x.sqrt(),
        "rsqrt" => x.sqrt()?.recip(),
        "abs" => x.abs(),
        "reciprocal" => x.recip(),
        "sin" => x.sin(),
        "cos" => x.cos(),
        "square" => x.sqr(),
        "floor" => x.floor(),
        "ceil" => x.ceil(),
        "round" => x.round(),
        "trunc" => trunc(x),
        "frac" => frac(x),
        "erf" => x.erf(),
        "log1p" => log1p(x),
        "expm1" => expm1(x),
        "log2" => x.log()?.affine(1.0 / std::f64::consts::LN_2, 0.0),
        _ => bail!("not a unary op: {name}"),
    }
}

/// `log(1 + x)` (candle has no `log1p`: below about 1e-8 of `x` the sum rounds, absolutely
/// negligible against the tensor's scale).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[0.5f64], &Device::Cpu)?;
/// let y = candle_port_run::ops::elementwise::log1p(&x)?.to_vec1::<f64>()?;
/// assert!((y[0] - 1.5f64.ln()).abs() < 1e-15);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn log1p(x: &Tensor) -> Result<Tensor> {
    x.affine(1.0, 1.0)?.log()
}

/// `exp(x) - 1` (candle has no `expm1`; the same absolute rounding as [`log1p`]).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[0.5f64], &Device::Cpu)?;
/// let y = candle_port_run::ops::elementwise::expm1(&x)?.to_vec1::<f64>()?;
/// assert!((y[0] - 0.5f64.exp_m1()).abs() < 1e-15);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn expm1(x: &Tensor) -> Result<Tensor> {
    x.exp()?.affine(1.0, -1.0)
}

/// `log(exp(a) + exp(b))`, broadcast, as `m + log(exp(a - m) + exp(b - m))` with
/// `m = max(a, b)` (no overflow; the expression does not depend on `m`, so its gradient is
/// right whichever side candle's `maximum` sends a tie's gradient to).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let a = Tensor::new(&[1.0f64, 800.0], &Device::Cpu)?;
/// let b = Tensor::new(&[2.0f64, 800.0], &Device::Cpu)?;
/// let y = candle_port_run::ops::elementwise::logaddexp(&a, &b)?.to_vec1::<f64>()?;
/// assert!((y[0] - (1.0f64.exp() + 2.0f64.exp()).ln()).abs() < 1e-15);
/// assert!((y[1] - (800.0 + 2.0f64.ln())).abs() < 1e-12);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn logaddexp(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let m = a.broadcast_maximum(b)?;
    let sum = a
        .broadcast_sub(&m)?
        .exp()?
        .add(&b.broadcast_sub(&m)?.exp()?)?;
    m.add(&sum.log()?)
}

/// `op` of the node's `self` and `other` operands (see [`operands`]).
fn on_operands(a: &Args, op: fn(&Tensor, &Tensor) -> Result<Tensor>) -> Result<Tensor> {
    let (x, y) = operands(a, "self", "other")?;
    op(&x, &y)
}

/// The two operands of a binary op, either of them a number (`remainder.Scalar_Tensor`,
/// `xlogy.Scalar_Self`), with torch's promotion: a number takes the tensor's float dtype; with an
/// integer tensor an integral number is int64, another number makes both float32 (torch's default
/// dtype).
fn operands(a: &Args, first: &str, second: &str) -> Result<(Tensor, Tensor)> {
    let number = |i: usize, name: &str, like: &Tensor| -> Result<Tensor> {
        let v = a.float_or(i, name, 0.0)?;
        let dtype = match like.dtype() {
            d if d.is_float() => d,
            _ if v.fract() == 0.0 => DType::I64,
            _ => DType::F32,
        };
        Tensor::new(v, like.device())?.to_dtype(dtype)
    };
    let (x, y) = match (a.is_tensor(0, first), a.is_tensor(1, second)) {
        (true, true) => (a.tensor(0, first)?, a.tensor(1, second)?),
        (true, false) => {
            let x = a.tensor(0, first)?;
            let y = number(1, second, &x)?;
            (x, y)
        }
        (false, true) => {
            let y = a.tensor(1, second)?;
            (number(0, first, &y)?, y)
        }
        (false, false) => bail!("{}: no tensor operand", a.node.op),
    };
    promote(x, y)
}

/// `f(a, b)` on floats; on integers (a mask, int64) computed in float64 and given back as int64,
/// as torch's integer `floor_divide`, `remainder` and `fmod` (exact to 2^53).
fn integral(
    a: &Tensor,
    b: &Tensor,
    f: impl Fn(&Tensor, &Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    if a.dtype().is_float() {
        return f(a, b);
    }
    f(&a.to_dtype(DType::F64)?, &b.to_dtype(DType::F64)?)?.to_dtype(DType::I64)
}

/// `torch.trunc(x)`: `sign(x) * floor(|x|)` (candle has no `trunc`; both have a zero gradient).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[-1.5f64, 2.5], &Device::Cpu)?;
/// let y = candle_port_run::ops::elementwise::trunc(&x)?;
/// assert_eq!(y.to_vec1::<f64>()?, [-1.0, 2.0]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn trunc(x: &Tensor) -> Result<Tensor> {
    x.sign()?.mul(&x.abs()?.floor()?)
}

/// `torch.frac(x)`: `x - trunc(x)`, the sign of `x` kept (gradient 1, as torch's).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[-1.5f64, 2.25], &Device::Cpu)?;
/// let y = candle_port_run::ops::elementwise::frac(&x)?;
/// assert_eq!(y.to_vec1::<f64>()?, [-0.5, 0.25]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn frac(x: &Tensor) -> Result<Tensor> {
    x.sub(&trunc(x)?)
}

/// `torch.floor_divide(a, b)` (and `div(a, b, rounding_mode="floor")`): `floor(a / b)`,
/// broadcast, no gradient (torch's is zero). torch rounds its float quotient from `fmod`: where
/// `a / b` rounds up onto an integer the two differ by 1 (`1 // 0.1` is 9 in torch, 10 here).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let a = Tensor::new(&[7.0f64, -7.0], &Device::Cpu)?;
/// let b = Tensor::new(&[2.0f64], &Device::Cpu)?;
/// let q = candle_port_run::ops::elementwise::floor_divide(&a, &b)?;
/// assert_eq!(q.to_vec1::<f64>()?, [3.0, -4.0]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn floor_divide(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    integral(a, b, |a, b| a.broadcast_div(b)?.floor())
}

/// `torch.remainder(a, b)`: `a - floor(a / b) b`, broadcast, the sign of `b` (gradients: 1 and
/// `-floor(a / b)`, as torch's; torch computes the value from `fmod`, so it may differ by one
/// rounding, or by `b` where [`floor_divide`] does).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let a = Tensor::new(&[7.0f64, -7.0], &Device::Cpu)?;
/// let b = Tensor::new(&[2.0f64], &Device::Cpu)?;
/// let r = candle_port_run::ops::elementwise::remainder(&a, &b)?;
/// assert_eq!(r.to_vec1::<f64>()?, [1.0, 1.0]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn remainder(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    integral(a, b, |a, b| {
        a.broadcast_sub(&a.broadcast_div(b)?.floor()?.broadcast_mul(b)?)
    })
}

/// `torch.fmod(a, b)`: `a - trunc(a / b) b`, broadcast, the sign of `a` (gradients: 1 and
/// `-trunc(a / b)`, as torch's; the value may differ from C's `fmod` by one rounding).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let a = Tensor::new(&[7.0f64, -7.0], &Device::Cpu)?;
/// let b = Tensor::new(&[2.0f64], &Device::Cpu)?;
/// let r = candle_port_run::ops::elementwise::fmod(&a, &b)?;
/// assert_eq!(r.to_vec1::<f64>()?, [1.0, -1.0]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn fmod(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    integral(a, b, |a, b| {
        a.broadcast_sub(&trunc(&a.broadcast_div(b)?)?.broadcast_mul(b)?)
    })
}

/// `torch.xlogy(x, y)`: `x log(y)`, and 0 where `x` is 0 (also where `y` is NaN: torch gives
/// NaN there), broadcast; the gradients are torch's (`log(y)` and `x / y`, 0 where `x` is 0),
/// except `x`'s where both are 0: NaN (candle multiplies the masked `-inf` by 0; torch: 0).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[0.0f64, 2.0], &Device::Cpu)?;
/// let y = Tensor::new(&[0.0f64, 1.0f64.exp()], &Device::Cpu)?;
/// let z = candle_port_run::ops::elementwise::xlogy(&x, &y)?;
/// assert_eq!(z.to_vec1::<f64>()?, [0.0, 2.0]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn xlogy(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let product = x.broadcast_mul(&y.log()?)?;
    let zero = x.eq(0.0)?.broadcast_as(product.shape())?;
    zero.where_cond(&product.zeros_like()?, &product)
}

fn pow(op: &str, a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    if op.ends_with("Tensor_Scalar") {
        let e = a.float_or(1, "exponent", 1.0)?;
        return if e == 2.0 { x.sqr() } else { x.powf(e) };
    }
    let e = other(a, &x)?;
    let shape = x.shape().broadcast_shape_binary_op(e.shape(), "pow")?;
    x.broadcast_as(&shape)?.pow(&e.broadcast_as(&shape)?)
}

fn clamp(name: &str, a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let (lo, hi) = match name {
        "clamp_min" => (a.opt_float(1, "min")?, None),
        "clamp_max" => (None, a.opt_float(1, "max")?),
        _ => (a.opt_float(1, "min")?, a.opt_float(2, "max")?),
    };
    let x = match lo {
        Some(v) => x.maximum(v)?,
        None => x,
    };
    match hi {
        Some(v) => x.minimum(v),
        None => Ok(x),
    }
}

/// `x.masked_fill(mask, value)`: `value` (a number, inf included, or a 0-d tensor) where the mask
/// is set, `x` elsewhere; the gradient reaches `x` only where it is kept.
fn masked_fill(a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let mask = a.tensor(1, "mask")?;
    let value = if a.is_tensor(2, "value") {
        a.tensor(2, "value")?.to_dtype(x.dtype())?
    } else {
        Tensor::new(a.float_or(2, "value", 0.0)?, x.device())?.to_dtype(x.dtype())?
    };
    let shape = x
        .shape()
        .broadcast_shape_binary_op(mask.shape(), "masked_fill")?;
    mask.broadcast_as(&shape)?
        .where_cond(&value.broadcast_as(&shape)?, &x.broadcast_as(&shape)?)
}

/// `&`, `|`, `^` of boolean masks (u8 0/1 here, as the comparisons give them): product, maximum,
/// inequality.
fn mask_binary(name: &str, a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?.to_dtype(DType::U8)?;
    let y = a.tensor(1, "other")?.to_dtype(DType::U8)?;
    let shape = x.shape().broadcast_shape_binary_op(y.shape(), "mask")?;
    let (x, y) = (x.broadcast_as(&shape)?, y.broadcast_as(&shape)?);
    match name
        .trim_start_matches("logical_")
        .trim_start_matches("bitwise_")
        .trim_matches('_')
    {
        "and" => x.mul(&y),
        "or" => x.maximum(&y),
        _ => x.ne(&y)?.to_dtype(DType::U8),
    }
}

fn compare(name: &str, a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let y = other(a, &x)?;
    let shape = x.shape().broadcast_shape_binary_op(y.shape(), "compare")?;
    let (x, y) = (x.broadcast_as(&shape)?, y.broadcast_as(&shape)?);
    let m = match name {
        "eq" => x.eq(&y)?,
        "ne" => x.ne(&y)?,
        "gt" => x.gt(&y)?,
        "ge" => x.ge(&y)?,
        "lt" => x.lt(&y)?,
        _ => x.le(&y)?,
    };
    m.to_dtype(DType::U8)
}
