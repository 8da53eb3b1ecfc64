//! The pooling ops reject what torch rejects, with messages that say what it accepts.

use candle_core::{DType, Device, Result, Tensor};
use candle_port_ops::*;

fn x4(h: usize, w: usize) -> Result<Tensor> {
    Tensor::zeros((1, 2, h, w), DType::F32, &Device::Cpu)
}

fn message<T: std::fmt::Debug>(r: Result<T>) -> String {
    format!("{}", r.expect_err("expected an error"))
}

#[test]
fn padding_above_half_the_kernel_is_rejected() -> Result<()> {
    let x = x4(5, 5)?;
    let m = message(max_pool2d(&x, &Pool::new(&[3]).padding(&[2])));
    assert!(
        m.contains("pad should be smaller than or equal to half of kernel size"),
        "{m}"
    );
    let m = message(avg_pool2d(&x, &Pool::new(&[2]).padding(&[2])));
    assert!(m.contains("half of kernel size"), "{m}");
    Ok(())
}

#[test]
fn wrong_rank_is_rejected() -> Result<()> {
    let unbatched = Tensor::zeros((2, 5, 5), DType::F32, &Device::Cpu)?;
    let m = message(max_pool2d(&unbatched, &Pool::new(&[2])));
    assert!(m.contains("expected a 4-D (N, C, H, W) input"), "{m}");
    let m = message(adaptive_avg_pool1d(&x4(5, 5)?, 2));
    assert!(m.contains("expected a 3-D (N, C, L) input"), "{m}");
    Ok(())
}

#[test]
fn an_empty_output_is_rejected() -> Result<()> {
    let m = message(max_pool2d(&x4(5, 5)?, &Pool::new(&[6])));
    assert!(m.contains("output size is too small"), "{m}");
    let m = message(avg_pool1d(
        &Tensor::zeros((1, 1, 3), DType::F64, &Device::Cpu)?,
        &Pool::new(&[4]),
    ));
    assert!(m.contains("output size is too small"), "{m}");
    Ok(())
}

#[test]
fn bad_arguments_are_rejected() -> Result<()> {
    let x = x4(5, 5)?;
    let m = message(max_pool2d(&x, &Pool::new(&[2, 2, 2])));
    assert!(
        m.contains("kernel_size must either be a single int, or a tuple of 2 ints"),
        "{m}"
    );
    let m = message(max_pool2d(&x, &Pool::new(&[2]).stride(&[0])));
    assert!(m.contains("stride should not be zero"), "{m}");
    let m = message(avg_pool2d(&x, &Pool::new(&[2]).dilation(&[2])));
    assert!(m.contains("no dilation"), "{m}");
    let m = message(avg_pool2d(&x, &Pool::new(&[2]).divisor_override(0)));
    assert!(m.contains("divisor must be not zero"), "{m}");
    let ints = Tensor::zeros((1, 1, 4, 4), DType::U32, &Device::Cpu)?;
    let m = message(max_pool2d(&ints, &Pool::new(&[2])));
    assert!(m.contains("floating point"), "{m}");
    Ok(())
}

#[test]
fn a_window_outside_the_input_is_rejected() -> Result<()> {
    // torch returns -inf here (length 2, k=2, p=1, d=3: window 0 reads positions -1 and 2).
    let x = Tensor::zeros((1, 1, 2), DType::F32, &Device::Cpu)?;
    let m = message(max_pool1d(
        &x,
        &Pool::new(&[2]).stride(&[1]).padding(&[1]).dilation(&[3]),
    ));
    assert!(m.contains("holds no element of the input"), "{m}");
    Ok(())
}

#[test]
fn adaptive_output_size_zero_is_empty_as_torch() -> Result<()> {
    let y = adaptive_avg_pool2d(&x4(5, 5)?, (0, 0))?;
    assert_eq!(y.dims(), &[1, 2, 0, 0]);
    let (y, i) =
        adaptive_max_pool1d_with_indices(&Tensor::zeros((1, 5, 3), DType::F32, &Device::Cpu)?, 0)?;
    assert_eq!(
        (y.dims(), i.dims(), i.dtype()),
        (&[1, 5, 0][..], &[1, 5, 0][..], DType::I64)
    );
    Ok(())
}

#[test]
fn half_precision_average_is_summed_in_f32() -> Result<()> {
    let x = Tensor::ones((1, 1, 4, 4), DType::F16, &Device::Cpu)?;
    let y = avg_pool2d(&x, &Pool::new(&[2]))?;
    assert_eq!(y.dtype(), DType::F16);
    assert_eq!(
        y.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?,
        vec![1.0; 4]
    );
    Ok(())
}
