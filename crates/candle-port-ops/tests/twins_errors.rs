//! Argument checks of grid_sample / affine_grid, conv3d / conv_transpose3d and the 3-D pools:
//! torch's errors come out as errors (never a panic or a silently wrong shape).

use candle_core::{DType, Device, Result, Tensor};
use candle_port_ops::*;

fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
    Tensor::zeros(shape, dtype, &Device::Cpu)
}

fn message(r: Result<Tensor>) -> String {
    match r {
        Ok(t) => panic!("expected an error, got a tensor of shape {:?}", t.dims()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn grid_sample_rejects_what_torch_rejects() -> Result<()> {
    let x = zeros(&[2, 3, 4, 5], DType::F32)?;
    let o = GridSample::new();
    // batch mismatch, last dim not 2, 5-D input, dtype mismatch.
    assert!(
        message(grid_sample(&x, &zeros(&[1, 2, 2, 2], DType::F32)?, &o)).contains("grid of shape")
    );
    assert!(
        message(grid_sample(&x, &zeros(&[2, 2, 2, 3], DType::F32)?, &o)).contains("grid of shape")
    );
    let x5 = zeros(&[1, 1, 2, 2, 2], DType::F32)?;
    assert!(message(grid_sample(&x5, &zeros(&[1, 2, 2, 2, 3], DType::F32)?, &o)).contains("4-D"));
    assert!(
        message(grid_sample(&x, &zeros(&[2, 2, 2, 2], DType::F64)?, &o)).contains("same dtype")
    );
    // theta of the wrong shape, 3-D sizes.
    let theta = zeros(&[2, 2, 3], DType::F32)?;
    assert!(message(affine_grid(&theta, &[3, 1, 4, 4], false)).contains("[3, 2, 3]"));
    assert!(message(affine_grid(&theta, &[2, 1, 2, 4, 4], false)).contains("2-D"));
    Ok(())
}

#[test]
fn grid_sample_gives_the_grid_a_gradient_through_reflection() -> Result<()> {
    // x increasing along W: d out / d grid_x > 0 inside, sign-flipped past the reflection.
    let x = Tensor::arange(0f64, 5., &Device::Cpu)?.reshape((1, 1, 1, 5))?;
    let grid = candle_core::Var::new(&[[[[0.2f64, 0.], [1.3, 0.]]]], &Device::Cpu)?;
    let o = GridSample::new()
        .padding_mode(GridPadding::Reflection)
        .align_corners(true);
    let out = grid_sample(&x, grid.as_tensor(), &o)?;
    let g = out.sum_all()?.backward()?;
    let gg = g
        .get(grid.as_tensor())
        .expect("grid gradient")
        .flatten_all()?
        .to_vec1::<f64>()?;
    // unnormalize: (g + 1) * 2, so d coord / d g = 2; reflected past 4 the slope is -2.
    assert_eq!(gg, vec![2., 0., -2., 0.]);
    Ok(())
}

#[test]
fn convolutions_and_3d_pools_reject_what_torch_rejects() -> Result<()> {
    let x = zeros(&[1, 4, 3, 3, 3], DType::F32)?;
    let w = zeros(&[2, 2, 2, 2, 2], DType::F32)?;
    // weight's in-channels x groups must be the input's channels.
    assert!(conv3d(&x, &w, None, &Conv::new()).is_err());
    assert!(conv3d(&x, &w, None, &Conv::new().groups(2)).is_ok());
    // output_padding is for transposed convolutions.
    assert!(conv3d(&x, &w, None, &Conv::new().groups(2).output_padding(&[1])).is_err());
    // kernel larger than the padded input.
    let big = zeros(&[2, 4, 4, 4, 4], DType::F32)?;
    assert!(message(conv3d(&x, &big, None, &Conv::new())).contains("can't be greater"));
    // a 4-D input.
    assert!(message(conv3d(
        &zeros(&[4, 3, 3, 3], DType::F32)?,
        &w,
        None,
        &Conv::new().groups(2)
    ))
    .contains("batched"));
    // conv_transpose3d: weight's first dim is the input channels.
    assert!(conv_transpose3d(&x, &w, None, &Conv::new()).is_err());
    let wt = zeros(&[4, 1, 2, 2, 2], DType::F32)?;
    assert_eq!(
        conv_transpose3d(&x, &wt, None, &Conv::new().groups(2).stride(&[2]))?.dims(),
        &[1, 2, 6, 6, 6]
    );
    // pools: padding above half the kernel, an empty output.
    assert!(max_pool3d(&x, &Pool::new(&[2]).padding(&[2])).is_err());
    assert!(avg_pool3d(&x, &Pool::new(&[4])).is_err());
    assert!(max_pool3d(&zeros(&[4, 3, 3, 3], DType::F32)?, &Pool::new(&[2])).is_err());
    Ok(())
}
