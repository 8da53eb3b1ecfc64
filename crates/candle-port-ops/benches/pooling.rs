//! Speed of the crate's pools against candle's native `max_pool2d_with_stride` /
//! `avg_pool2d_with_stride`, at the shapes of bench/pooling_speed.py (float32, CPU).
//!
//!     cargo bench --bench pooling            # POOL_BENCH_REPS=5 by default
//!
//! Prints the median time of the forward and of forward + backward (`sum().backward()`), and
//! ours / native ratios (the median of per-run ratios, ours and native run alternately, so a
//! busy machine slows both alike). candle's native pools take no padding, and differentiate
//! only when kernel == stride: where the torch module pads, native runs the same kernel and
//! stride without padding (marked *), and native forward + backward is shown only for
//! kernel == stride.

use std::time::Instant;

use candle_core::{Device, Result, Tensor, Var};
use candle_port_ops::{adaptive_avg_pool2d, adaptive_max_pool2d, avg_pool2d, max_pool2d, Pool};

type Op = fn(&Tensor) -> Result<Tensor>;

struct Case {
    name: &'static str,
    shape: (usize, usize, usize, usize),
    ours: Op,
    native: Op,
    /// Native differs from ours in its arguments (no padding): the forward ratio is indicative.
    native_unpadded: bool,
    /// kernel == stride: native has a backward to compare with.
    native_backward: bool,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "MaxPool2d(3,2,1) (8,64,112,112)",
            shape: (8, 64, 112, 112),
            ours: |x| max_pool2d(x, &Pool::new(&[3]).stride(&[2]).padding(&[1])),
            native: |x| x.max_pool2d_with_stride(3, 2),
            native_unpadded: true,
            native_backward: false,
        },
        Case {
            name: "MaxPool2d(2) (8,64,64,64)",
            shape: (8, 64, 64, 64),
            ours: |x| max_pool2d(x, &Pool::new(&[2])),
            native: |x| x.max_pool2d_with_stride(2, 2),
            native_unpadded: false,
            native_backward: true,
        },
        Case {
            name: "AvgPool2d(3,1,1) (8,64,56,56)",
            shape: (8, 64, 56, 56),
            ours: |x| avg_pool2d(x, &Pool::new(&[3]).stride(&[1]).padding(&[1])),
            native: |x| x.avg_pool2d_with_stride(3, 1),
            native_unpadded: true,
            native_backward: false,
        },
        Case {
            name: "AdaptiveAvgPool2d(7) (8,512,14,14)",
            shape: (8, 512, 14, 14),
            ours: |x| adaptive_avg_pool2d(x, (7, 7)),
            native: |x| x.avg_pool2d_with_stride(2, 2),
            native_unpadded: false,
            native_backward: true,
        },
        Case {
            name: "AdaptiveMaxPool2d(7) (8,512,14,14)",
            shape: (8, 512, 14, 14),
            ours: |x| adaptive_max_pool2d(x, (7, 7)),
            native: |x| x.max_pool2d_with_stride(2, 2),
            native_unpadded: false,
            native_backward: true,
        },
    ]
}

/// Medians over `reps` runs of `ours` and `base` run alternately (after one warm-up each), so
/// that a busy machine slows both alike: (ours ms, base ms, median of the per-run ratios).
fn paired_ms(
    reps: usize,
    mut ours: impl FnMut() -> Result<()>,
    mut base: impl FnMut() -> Result<()>,
) -> Result<(f64, f64, f64)> {
    let time = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        let start = Instant::now();
        f()?;
        Ok(start.elapsed().as_secs_f64() * 1e3)
    };
    ours()?;
    base()?;
    let (mut a, mut b, mut r) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps {
        let (ta, tb) = (time(&mut ours)?, time(&mut base)?);
        a.push(ta);
        b.push(tb);
        r.push(ta / tb);
    }
    Ok((median(a), median(b), median(r)))
}

/// Median wall time in ms of `reps` runs of `f`, after one warm-up run.
fn median_ms(reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        f()?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    Ok(median(times))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn forward(op: Op, x: &Tensor) -> Result<()> {
    op(x).map(drop)
}

fn forward_backward(op: Op, x: &Var) -> Result<()> {
    let grads = op(x.as_tensor())?.sum_all()?.backward()?;
    match grads.get(x.as_tensor()) {
        Some(_) => Ok(()),
        None => candle_core::bail!("no gradient reached the input"),
    }
}

fn main() -> Result<()> {
    let reps = std::env::var("POOL_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    println!("candle-port-ops pooling vs candle native, float32 CPU, median of {reps} (ms; ratio: median of paired runs)");
    println!(
        "{:36} {:>9} {:>9} {:>7}   {:>9} {:>9} {:>7}",
        "case", "ours fwd", "native", "ratio", "ours f+b", "native", "ratio"
    );
    for case in cases() {
        let (n, c, h, w) = case.shape;
        let x = Tensor::rand(-1f32, 1f32, (n, c, h, w), &Device::Cpu)?;
        let var = Var::from_tensor(&x)?;
        let (ours_f, native_f, ratio_f) =
            paired_ms(reps, || forward(case.ours, &x), || forward(case.native, &x))?;
        let (ours_fb, native_fb) = if case.native_backward {
            let (o, t, r) = paired_ms(
                reps,
                || forward_backward(case.ours, &var),
                || forward_backward(case.native, &var),
            )?;
            (o, format!("{t:9.2} {r:7.2}"))
        } else {
            let o = median_ms(reps, || forward_backward(case.ours, &var))?;
            (o, format!("{:>9} {:>7}", "bails", "-"))
        };
        let mark = if case.native_unpadded { "*" } else { " " };
        println!(
            "{:36} {ours_f:9.2} {native_f:8.2}{mark} {ratio_f:7.2}   {ours_fb:9.2} {native_fb}",
            case.name,
        );
    }
    println!("* native has no padding: it runs the same kernel and stride unpadded.");
    println!("native forward + backward bails for kernel != stride (candle 0.11).");
    Ok(())
}
