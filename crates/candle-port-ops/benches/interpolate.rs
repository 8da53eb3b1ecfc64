//! Speed of the crate's interpolate against candle's native forward (which has no backward for
//! bilinear): `cargo bench -p candle-port-ops --bench interpolate`.
//!
//! Prints, per shape, the median wall time of a few runs of candle's `upsample_bilinear2d`
//! (align_corners = false) and `upsample_nearest2d`, of ours in the same mode, their ratio
//! (ours / native, forward only: native has no backward to compare), and ours forward+backward.
//! Shapes: those of the Python runtime's bench/runtime_speed.py, and a large upscale.
//! float32, candle's default CPU threads. Ratios only, no asserts.

use std::time::Instant;

use candle_core::{DType, Device, Result, Tensor, Var};
use candle_port_ops::{interpolate, Interpolate, Mode};

/// Median seconds of `reps` runs of `f` after one warm-up run.
fn median_secs(reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t0 = Instant::now();
        f()?;
        times.push(t0.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[reps / 2])
}

type Shape4 = (usize, usize, usize, usize);

struct Row {
    label: String,
    native: f64,
    ours: f64,
    ours_fwd_bwd: f64,
}

fn bench(x: &Tensor, out: (usize, usize), mode: Mode, reps: usize) -> Result<Row> {
    let opts = Interpolate::size(&[out.0, out.1], mode);
    let native = median_secs(reps, || {
        let y = match mode {
            Mode::Bilinear => x.upsample_bilinear2d(out.0, out.1, false)?,
            _ => x.upsample_nearest2d(out.0, out.1)?,
        };
        std::hint::black_box(y);
        Ok(())
    })?;
    let ours = median_secs(reps, || {
        std::hint::black_box(interpolate(x, &opts)?);
        Ok(())
    })?;
    let var = Var::from_tensor(x)?;
    let ours_fwd_bwd = median_secs(reps, || {
        let y = interpolate(var.as_tensor(), &opts)?;
        std::hint::black_box(y.sum_all()?.backward()?);
        Ok(())
    })?;
    Ok(Row {
        label: format!("{:?} -> {out:?} {}", x.dims(), mode.torch_name()),
        native,
        ours,
        ours_fwd_bwd,
    })
}

fn main() -> Result<()> {
    let dev = Device::Cpu;
    // (input shape, output H and W): bench/runtime_speed.py's CASES, then the large upscale.
    let cases: [(Shape4, (usize, usize), usize); 5] = [
        ((8, 64, 64, 64), (128, 128), 3),
        ((2, 256, 32, 32), (128, 128), 3),
        ((1, 3, 512, 512), (1024, 1024), 3),
        ((16, 32, 128, 128), (256, 256), 1),
        ((1, 3, 256, 256), (1024, 1024), 3),
    ];
    println!(
        "{:<50} {:>10} {:>10} {:>8} {:>14}",
        "case (float32)", "native ms", "ours ms", "ours/nat", "ours fwd+bwd ms"
    );
    for (shape, out, reps) in cases {
        let x = Tensor::rand(0f32, 1f32, shape, &dev)?.to_dtype(DType::F32)?;
        for mode in [Mode::Bilinear, Mode::Nearest] {
            let r = bench(&x, out, mode, reps)?;
            println!(
                "{:<50} {:>10.2} {:>10.2} {:>8.2} {:>14.2}",
                r.label,
                r.native * 1e3,
                r.ours * 1e3,
                r.ours / r.native,
                r.ours_fwd_bwd * 1e3
            );
        }
    }
    Ok(())
}
