//! The shortcut compositions (nearest by integer factors as a broadcast, average pools over
//! disjoint tiles as a reshape and a sum) against values worked out by hand, where the shared
//! vectors have no case (divisor_override on tiles, factor 3, 5-D, a dropped remainder), through
//! the CPU kernels and through the compositions.

use candle_core::{DType, Device, Result, Tensor, Var};
use candle_port_ops::kernels::composition_only;
use candle_port_ops::{avg_pool2d, avg_pool3d, interpolate, Interpolate, Mode, Pool};

fn ramp(dims: &[usize]) -> Result<Var> {
    let n: usize = dims.iter().product();
    Var::from_tensor(&Tensor::arange(0f64, n as f64, &Device::Cpu)?.reshape(dims)?)
}

fn values(t: &Tensor) -> Result<Vec<f64>> {
    t.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()
}

#[test]
fn nearest_integer_upscale_repeats_each_input_and_sums_its_gradient() -> Result<()> {
    nearest_integer_upscale()?;
    composition_only(nearest_integer_upscale)
}

fn nearest_integer_upscale() -> Result<()> {
    let x = ramp(&[1, 1, 2, 3])?;
    let y = interpolate(
        x.as_tensor(),
        &Interpolate::scale(&[3.0, 2.0], Mode::Nearest),
    )?;
    assert_eq!(y.dims(), &[1, 1, 6, 6]);
    let want: Vec<f64> = (0..6)
        .flat_map(|i| (0..6).map(move |j| ((i / 3) * 3 + j / 2) as f64))
        .collect();
    assert_eq!(values(&y)?, want);
    let g = ramp(&[1, 1, 6, 6])?;
    let grads = (&y * g.as_tensor())?.sum_all()?.backward()?;
    let got = values(grads.get(x.as_tensor()).expect("gradient"))?;
    let mut want = vec![0f64; 6];
    for i in 0..6 {
        for j in 0..6 {
            want[(i / 3) * 3 + j / 2] += (i * 6 + j) as f64;
        }
    }
    assert_eq!(got, want);
    let x5 = ramp(&[1, 2, 2, 2, 3])?;
    let y5 = interpolate(x5.as_tensor(), &Interpolate::scale(&[2.0], Mode::Nearest))?;
    assert_eq!(y5.dims(), &[1, 2, 4, 4, 6]);
    assert_eq!(
        values(&y5.narrow(2, 3, 1)?.narrow(3, 2, 1)?.flatten_all()?)?[..6],
        [9., 9., 10., 10., 11., 11.]
    );
    Ok(())
}

#[test]
fn average_pool_over_tiles_uses_torchs_divisor_and_drops_the_remainder() -> Result<()> {
    let x = ramp(&[1, 1, 5, 4])?; // rows 0..5 of 4: the 5th row is past the last tile
    let y = avg_pool2d(x.as_tensor(), &Pool::new(&[2]).divisor_override(3))?;
    // window (0, 0): 0 + 1 + 4 + 5 = 10, / 3
    assert_eq!(y.dims(), &[1, 1, 2, 2]);
    let want = [10.0 / 3.0, 18.0 / 3.0, 42.0 / 3.0, 50.0 / 3.0];
    for (a, b) in values(&y)?.iter().zip(want) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
    let grads = y.sum_all()?.backward()?;
    let g = values(grads.get(x.as_tensor()).expect("gradient"))?;
    assert!(
        g[..16].iter().all(|&v| (v - 1.0 / 3.0).abs() < 1e-15),
        "{g:?}"
    );
    assert!(g[16..].iter().all(|&v| v == 0.0), "{g:?}");
    let x3 = ramp(&[1, 1, 2, 2, 2])?;
    let y3 = avg_pool3d(x3.as_tensor(), &Pool::new(&[2]))?;
    assert_eq!(values(&y3)?, [3.5]);
    Ok(())
}

#[test]
fn the_shortcuts_equal_candles_native_forward_on_a_large_input() -> Result<()> {
    shortcuts_equal_native()?;
    composition_only(shortcuts_equal_native)
}

fn shortcuts_equal_native() -> Result<()> {
    // Large enough for candle's multi-threaded and strided binary kernels (0.5M elements).
    let x = Tensor::rand(-1f32, 1f32, (4, 32, 64, 64), &Device::Cpu)?;
    let pairs = [
        (avg_pool2d(&x, &Pool::new(&[2]))?, x.avg_pool2d(2)?),
        (avg_pool2d(&x, &Pool::new(&[4]))?, x.avg_pool2d(4)?),
        (
            interpolate(&x, &Interpolate::scale(&[2.0], Mode::Nearest))?,
            x.upsample_nearest2d(128, 128)?,
        ),
    ];
    for (i, (ours, native)) in pairs.iter().enumerate() {
        assert_eq!(ours.dims(), native.dims(), "pair {i}");
        let diff = (ours - native)?.abs()?.max_all()?.to_scalar::<f32>()?;
        assert!(diff < 1e-6, "pair {i}: {diff}");
    }
    Ok(())
}
