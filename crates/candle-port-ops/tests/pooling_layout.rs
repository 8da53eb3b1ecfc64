//! The pools on inputs the shared vectors do not cover: strided (non-contiguous) views and
//! half-precision dtypes give the same numbers and gradients as the plain f32 input.

use candle_core::{DType, Device, Result, Tensor, Var};
use candle_port_ops::*;

fn grad_of(x: &Var, f: impl Fn(&Tensor) -> Result<Tensor>, g: &Tensor) -> Result<(Tensor, Tensor)> {
    let y = f(x.as_tensor())?;
    let grads = y.mul(g)?.sum_all()?.backward()?;
    let dx = grads
        .get(x.as_tensor())
        .expect("gradient reaches the input")
        .clone();
    Ok((y, dx))
}

fn same(a: &Tensor, b: &Tensor) -> Result<()> {
    let a = a.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
    let b = b.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() <= 1e-6 * y.abs().max(1.0), "{x} != {y}");
    }
    Ok(())
}

#[test]
fn a_transposed_view_pools_like_its_contiguous_copy() -> Result<()> {
    let dev = Device::Cpu;
    let base = Tensor::randn(0f32, 1., (2, 3, 9, 7), &dev)?;
    let view = Var::from_tensor(&base)?;
    let copy = Var::from_tensor(&base.transpose(2, 3)?.contiguous()?)?;
    let ops: [fn(&Tensor) -> Result<Tensor>; 5] = [
        |x| max_pool2d(x, &Pool::new(&[3]).stride(&[2]).padding(&[1])),
        |x| max_pool2d(x, &Pool::new(&[2])),
        |x| avg_pool2d(x, &Pool::new(&[3]).stride(&[1]).padding(&[1])),
        |x| adaptive_max_pool2d(x, (3, 4)),
        |x| adaptive_avg_pool2d(x, (3, 4)),
    ];
    for op in ops {
        let g = Tensor::randn(0f32, 1., op(copy.as_tensor())?.dims(), &dev)?;
        let (y_view, dx_view) = grad_of(&view, |x| op(&x.transpose(2, 3)?), &g)?;
        let (y_copy, dx_copy) = grad_of(&copy, op, &g)?;
        same(&y_view, &y_copy)?;
        same(&dx_view.transpose(2, 3)?, &dx_copy)?;
    }
    Ok(())
}

#[test]
fn half_precision_pools_like_f32() -> Result<()> {
    let dev = Device::Cpu;
    // Quarter integers below 36: exact in f16 and bf16, so the max is exact too.
    let x = Tensor::arange(0u32, 2 * 2 * 6 * 6, &dev)?
        .to_dtype(DType::F32)?
        .reshape((2, 2, 6, 6))?
        .broadcast_mul(&Tensor::new(0.25f32, &dev)?)?;
    for dtype in [DType::F16, DType::BF16] {
        let xh = x.to_dtype(dtype)?;
        let p = Pool::new(&[3]).stride(&[2]).padding(&[1]);
        let (y, i) = max_pool2d_with_indices(&xh, &p)?;
        let (y32, i32) = max_pool2d_with_indices(&x, &p)?;
        assert_eq!(y.dtype(), dtype);
        same(&y, &y32)?;
        assert_eq!(
            i.flatten_all()?.to_vec1::<i64>()?,
            i32.flatten_all()?.to_vec1::<i64>()?
        );
        let a = avg_pool2d(&xh, &Pool::new(&[2]))?;
        assert_eq!(a.dtype(), dtype);
        // Summed in f32 and rounded once to the dtype, as ATen.
        same(&a, &avg_pool2d(&x, &Pool::new(&[2]))?.to_dtype(dtype)?)?;
    }
    Ok(())
}
