//! The CPU kernels against the compositions on inputs large enough to be split across threads
//! (the shared vectors are small): forward values, max-pool indices and input gradients, with
//! NaN and +-inf scattered in, f32 and f64.

use candle_core::{DType, Device, Result, Tensor, Var};
use candle_port_ops::kernels::composition_only;
use candle_port_ops::*;

/// A (2, 8, 40, 36) input of `dtype` (23k elements per image, 92k in all) with every 97th
/// element NaN, every 89th +inf and every 83rd -inf (a fixed pattern, so a failure repeats).
fn input(dtype: DType) -> Result<Var> {
    let n = 2 * 8 * 40 * 36;
    let values: Vec<f64> = (0..n)
        .map(|i| match i {
            _ if i % 97 == 5 => f64::NAN,
            _ if i % 89 == 7 => f64::INFINITY,
            _ if i % 83 == 11 => f64::NEG_INFINITY,
            _ => ((i * 7919) % 1000) as f64 / 250.0 - 2.0,
        })
        .collect();
    let x = Tensor::from_vec(values, (2, 8, 40, 36), &Device::Cpu)?.to_dtype(dtype)?;
    Var::from_tensor(&x)
}

/// Bitwise-equal where both are NaN or equal, else within `tol` relative.
fn assert_same(what: &str, a: &Tensor, b: &Tensor, tol: f64) -> Result<()> {
    assert_eq!(a.dims(), b.dims(), "{what}: shapes");
    let a = a.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
    let b = b.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let same = (x.is_nan() && y.is_nan())
            || x == y
            || (x - y).abs() <= tol * x.abs().max(y.abs()).max(1.0);
        assert!(same, "{what}: element {i}: kernel {x} vs composition {y}");
    }
    Ok(())
}

/// Output and input gradient (of `sum(out * ramp)`) of `op`, and the indices it returns.
type Run = (Tensor, Tensor, Option<Tensor>);

/// An op under test: its output and, for the max pools, its indices.
type Op<'a> = &'a dyn Fn(&Tensor) -> Result<(Tensor, Option<Tensor>)>;

fn run(x: &Var, op: Op) -> Result<Run> {
    let (out, index) = op(x.as_tensor())?;
    let n = out.elem_count();
    let ramp = Tensor::arange(0u32, n as u32, out.device())?
        .to_dtype(out.dtype())?
        .reshape(out.dims())?
        .affine(1.0 / n as f64, 0.5)?;
    let grads = (&out * ramp)?.sum_all()?.backward()?;
    let grad = grads.get(x.as_tensor()).expect("input gradient").clone();
    Ok((out, grad, index))
}

fn compare(name: &str, op: Op) -> Result<()> {
    for (dtype, tol) in [(DType::F32, 1e-5), (DType::F64, 1e-12)] {
        let x = input(dtype)?;
        let kernel = run(&x, op)?;
        let composed = composition_only(|| run(&x, op))?;
        let what = format!("{name} {dtype:?}");
        assert_same(&format!("{what} output"), &kernel.0, &composed.0, tol)?;
        assert_same(&format!("{what} gradient"), &kernel.1, &composed.1, tol)?;
        if let (Some(a), Some(b)) = (&kernel.2, &composed.2) {
            let (a, b) = (
                a.flatten_all()?.to_vec1::<i64>()?,
                b.flatten_all()?.to_vec1::<i64>()?,
            );
            assert_eq!(a, b, "{what}: indices");
        }
    }
    Ok(())
}

#[test]
fn resizes_agree_with_the_composition() -> Result<()> {
    for (mode, ac) in [
        (Mode::Bilinear, false),
        (Mode::Bilinear, true),
        (Mode::Bicubic, false),
        (Mode::Nearest, false),
        (Mode::NearestExact, false),
        (Mode::Area, false),
    ] {
        let with = |o: Interpolate| if ac { o.align_corners(true) } else { o };
        let up = with(Interpolate::size(&[67, 80], mode));
        compare(&format!("{mode:?} up"), &|x| {
            Ok((interpolate(x, &up)?, None))
        })?;
        let down = with(Interpolate::size(&[13, 20], mode));
        compare(&format!("{mode:?} down"), &|x| {
            Ok((interpolate(x, &down)?, None))
        })?;
    }
    let aa = Interpolate::size(&[13, 9], Mode::Bilinear).antialias(true);
    compare("antialias", &|x| Ok((interpolate(x, &aa)?, None)))
}

#[test]
fn max_pools_agree_with_the_composition() -> Result<()> {
    let stem = Pool::new(&[3]).stride(&[2]).padding(&[1]);
    compare("MaxPool2d(3,2,1)", &|x| {
        let (v, i) = max_pool2d_with_indices(x, &stem)?;
        Ok((v, Some(i)))
    })?;
    compare("MaxPool2d(2)", &|x| {
        let (v, i) = max_pool2d_with_indices(x, &Pool::new(&[2]))?;
        Ok((v, Some(i)))
    })?;
    let dilated = Pool::new(&[3]).dilation(&[2]).ceil_mode(true);
    compare("MaxPool2d(3, dilation 2, ceil)", &|x| {
        let (v, i) = max_pool2d_with_indices(x, &dilated)?;
        Ok((v, Some(i)))
    })?;
    compare("AdaptiveMaxPool2d(7)", &|x| {
        let (v, i) = adaptive_max_pool2d_with_indices(x, (7, 7))?;
        Ok((v, Some(i)))
    })
}
