//! Speed of the crate's interpolate against candle's native forward (which has no backward for
//! bilinear): `cargo bench -p candle-port-ops --bench interpolate`.
//!
//! Prints, per shape, the median wall time of a few runs of candle's `upsample_bilinear2d`
//! (align_corners = false) and `upsample_nearest2d`, of ours in the same mode, the median of
//! the per-round ratios (ours / native, forward only: native bilinear has no backward), and
//! ours forward+backward.
//! Shapes: those of the Python runtime's bench/runtime_speed.py, and a large upscale.
//! float32, candle's default CPU threads. Ratios only, no asserts.

use std::time::Instant;

use candle_core::{DType, Device, Result, Tensor, Var};
use candle_port_ops::{interpolate, Interpolate, Mode};

type Shape4 = (usize, usize, usize, usize);

/// Seconds of one run of `f`.
fn secs(f: &mut impl FnMut() -> Result<()>) -> Result<f64> {
    let t0 = Instant::now();
    f()?;
    Ok(t0.elapsed().as_secs_f64())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

struct Row {
    label: String,
    native: f64,
    ours: f64,
    ratio: f64,
    ours_fwd_bwd: f64,
}

/// Native and ours alternate, one warm-up each, then `reps` rounds; the ratio is the median of
/// the per-round ratios (back-to-back runs share the machine's load, so it is steadier than
/// the ratio of the medians on a busy machine).
fn bench(x: &Tensor, out: (usize, usize), mode: Mode, reps: usize) -> Result<Row> {
    let opts = Interpolate::size(&[out.0, out.1], mode);
    let mut native = || {
        let y = match mode {
            Mode::Bilinear => x.upsample_bilinear2d(out.0, out.1, false)?,
            _ => x.upsample_nearest2d(out.0, out.1)?,
        };
        std::hint::black_box(y);
        Ok(())
    };
    let mut ours = || {
        std::hint::black_box(interpolate(x, &opts)?);
        Ok(())
    };
    let var = Var::from_tensor(x)?;
    let mut ours_fwd_bwd = || {
        let y = interpolate(var.as_tensor(), &opts)?;
        std::hint::black_box(y.sum_all()?.backward()?);
        Ok(())
    };
    secs(&mut native)?;
    secs(&mut ours)?;
    secs(&mut ours_fwd_bwd)?;
    let (mut tn, mut to, mut tb, mut ratios) = (vec![], vec![], vec![], vec![]);
    for _ in 0..reps {
        let n = secs(&mut native)?;
        let o = secs(&mut ours)?;
        ratios.push(o / n);
        tn.push(n);
        to.push(o);
        tb.push(secs(&mut ours_fwd_bwd)?);
    }
    Ok(Row {
        label: format!("{:?} -> {out:?} {}", x.dims(), mode.torch_name()),
        native: median(tn),
        ours: median(to),
        ratio: median(ratios),
        ours_fwd_bwd: median(tb),
    })
}

fn main() -> Result<()> {
    let dev = Device::Cpu;
    // (input shape, output H and W): bench/runtime_speed.py's CASES, then the large upscale.
    let cases: [(Shape4, (usize, usize), usize); 5] = [
        ((8, 64, 64, 64), (128, 128), 5),
        ((2, 256, 32, 32), (128, 128), 5),
        ((1, 3, 512, 512), (1024, 1024), 5),
        ((16, 32, 128, 128), (256, 256), 1),
        ((1, 3, 256, 256), (1024, 1024), 5),
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
                r.ratio,
                r.ours_fwd_bwd * 1e3
            );
        }
    }
    Ok(())
}
