//! The crate's speed in candle, per op and shape, against candle's native forward (where candle
//! has the op) and, through `bench/crate_speed.py`, torch's CPU kernel on the same shape and
//! thread count. float32, CPU, contiguous input; shapes from real models (the Python runtime's
//! table in docs/performance-runtime.md, SAM's 256 -> 1024 mask upscale, the ResNet stem pool).
//!
//!     python bench/crate_speed.py            # this bench, then torch on the same rows
//!     cargo bench --bench speed              # this bench alone (SPEED_BENCH_REPS=5)
//!
//! Each row prints the median ms of our forward and forward + backward (`sum().backward()` into
//! the input) and of candle's native forward (run alternately with ours; ratio = median of the
//! per-run ratios), then a `ROW {json}` line the Python script reads: the row's torch call and
//! the times. candle's native pools take no padding: where torch pads, native runs the same
//! kernel and stride unpadded (`native_unpadded`), an indicative floor.
//!
//! With `SPEED_BENCH_MEMORY=ours|ours_fb|native` and `SPEED_BENCH_ONLY` naming one row, it
//! prints instead the peak resident memory one call adds in this fresh process (`MEM {json}`,
//! Linux's high-water mark reset before the call); `bench/crate_speed.py --memory` runs it.

use std::time::Instant;

use candle_core::{Device, Result, Tensor, Var};
use candle_port_ops::{
    adaptive_avg_pool2d, adaptive_max_pool2d, avg_pool2d, interpolate, max_pool2d, Interpolate,
    Mode, Pool,
};

type Op = fn(&Tensor) -> Result<Tensor>;

struct Case {
    name: &'static str,
    shape: [usize; 4],
    ours: Op,
    native: Option<Op>,
    native_unpadded: bool,
    /// The same op in torch, `x` the input (`F` is torch.nn.functional).
    torch: &'static str,
}

fn up(x: &Tensor, f: usize, bilinear: bool, ac: bool) -> Result<Tensor> {
    let (_, _, h, w) = x.dims4()?;
    if bilinear {
        x.upsample_bilinear2d(h * f, w * f, ac)
    } else {
        x.upsample_nearest2d(h * f, w * f)
    }
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "SAM mask bilinear 256->1024",
            shape: [1, 3, 256, 256],
            ours: |x| interpolate(x, &Interpolate::size(&[1024, 1024], Mode::Bilinear)),
            native: Some(|x| x.upsample_bilinear2d(1024, 1024, false)),
            native_unpadded: false,
            torch: "F.interpolate(x, size=(1024, 1024), mode='bilinear', align_corners=False)",
        },
        Case {
            name: "DPT/Segformer bilinear x4",
            shape: [2, 256, 64, 64],
            ours: |x| interpolate(x, &Interpolate::scale(&[4.0], Mode::Bilinear)),
            native: Some(|x| up(x, 4, true, false)),
            native_unpadded: false,
            torch: "F.interpolate(x, scale_factor=4, mode='bilinear', align_corners=False)",
        },
        Case {
            name: "U-Net bilinear x2 (ac=True)",
            shape: [8, 64, 64, 64],
            ours: |x| {
                let o = Interpolate::scale(&[2.0], Mode::Bilinear).align_corners(true);
                interpolate(x, &o)
            },
            native: Some(|x| up(x, 2, true, true)),
            native_unpadded: false,
            torch: "F.interpolate(x, scale_factor=2, mode='bilinear', align_corners=True)",
        },
        Case {
            name: "U-Net nearest x2",
            shape: [8, 64, 64, 64],
            ours: |x| interpolate(x, &Interpolate::scale(&[2.0], Mode::Nearest)),
            native: Some(|x| up(x, 2, false, false)),
            native_unpadded: false,
            torch: "F.interpolate(x, scale_factor=2, mode='nearest')",
        },
        Case {
            name: "ResNet stem MaxPool2d(3,2,1)",
            shape: [8, 64, 112, 112],
            ours: |x| max_pool2d(x, &Pool::new(&[3]).stride(&[2]).padding(&[1])),
            native: Some(|x| x.max_pool2d_with_stride(3, 2)),
            native_unpadded: true,
            torch: "F.max_pool2d(x, 3, 2, 1)",
        },
        Case {
            name: "U-Net MaxPool2d(2)",
            shape: [8, 64, 64, 64],
            ours: |x| max_pool2d(x, &Pool::new(&[2])),
            native: Some(|x| x.max_pool2d(2)),
            native_unpadded: false,
            torch: "F.max_pool2d(x, 2)",
        },
        Case {
            name: "AvgPool2d(2)",
            shape: [8, 64, 64, 64],
            ours: |x| avg_pool2d(x, &Pool::new(&[2])),
            native: Some(|x| x.avg_pool2d(2)),
            native_unpadded: false,
            torch: "F.avg_pool2d(x, 2)",
        },
        Case {
            name: "AvgPool2d(3,1,1)",
            shape: [8, 64, 56, 56],
            ours: |x| avg_pool2d(x, &Pool::new(&[3]).stride(&[1]).padding(&[1])),
            native: Some(|x| x.avg_pool2d_with_stride(3, 1)),
            native_unpadded: true,
            torch: "F.avg_pool2d(x, 3, 1, 1)",
        },
        Case {
            name: "AdaptiveAvgPool2d(7)",
            shape: [8, 512, 14, 14],
            ours: |x| adaptive_avg_pool2d(x, (7, 7)),
            native: Some(|x| x.avg_pool2d(2)),
            native_unpadded: false,
            torch: "F.adaptive_avg_pool2d(x, 7)",
        },
        Case {
            name: "AdaptiveMaxPool2d(7)",
            shape: [8, 512, 14, 14],
            ours: |x| adaptive_max_pool2d(x, (7, 7)),
            native: Some(|x| x.max_pool2d(2)),
            native_unpadded: false,
            torch: "F.adaptive_max_pool2d(x, 7)",
        },
    ]
}

fn time_ms(f: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
    let start = Instant::now();
    f()?;
    Ok(start.elapsed().as_secs_f64() * 1e3)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Medians of `reps` alternate runs of `ours` and `base` after one warm-up each: (ours ms,
/// base ms, median of the per-run ratios).
fn paired(
    reps: usize,
    mut ours: impl FnMut() -> Result<()>,
    mut base: impl FnMut() -> Result<()>,
) -> Result<(f64, f64, f64)> {
    ours()?;
    base()?;
    let (mut a, mut b, mut r) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps {
        let (ta, tb) = (time_ms(&mut ours)?, time_ms(&mut base)?);
        a.push(ta);
        b.push(tb);
        r.push(ta / tb);
    }
    Ok((median(a), median(b), median(r)))
}

fn single(reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut t = Vec::new();
    for _ in 0..reps {
        t.push(time_ms(&mut f)?);
    }
    Ok(median(t))
}

fn forward_backward(op: Op, x: &Var) -> Result<()> {
    let grads = op(x.as_tensor())?.sum_all()?.backward()?;
    match grads.get(x.as_tensor()) {
        Some(_) => Ok(()),
        None => candle_core::bail!("no gradient reached the input"),
    }
}

/// A field of /proc/self/status in bytes (Linux; its values are in kB).
fn status_bytes(field: &str) -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .ok_or_else(|| candle_core::Error::Msg(format!("/proc/self/status has no {field}")))?;
    let kb: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .map_err(|e| candle_core::Error::Msg(format!("{field}: {e}")))?;
    Ok(kb * 1024)
}

/// Bytes the process's resident set grew to above its size before `f`, at its peak during `f`:
/// the kernel's high-water mark is reset first (`echo 5 > /proc/self/clear_refs`).
fn peak_extra_bytes(f: impl FnOnce() -> Result<()>) -> Result<u64> {
    std::fs::write("/proc/self/clear_refs", "5")?;
    let before = status_bytes("VmRSS:")?;
    f()?;
    Ok(status_bytes("VmHWM:")?.saturating_sub(before))
}

/// `SPEED_BENCH_MEMORY=ours|ours_fb|native` with `SPEED_BENCH_ONLY` naming one row exactly: the
/// peak memory of one call in this fresh process, as a `MEM {json}` line.
fn memory(case: &Case, which: &str) -> Result<()> {
    let x = Tensor::rand(-1f32, 1f32, case.shape.as_slice(), &Device::Cpu)?;
    let var = Var::from_tensor(&x)?;
    let bytes = match (which, case.native) {
        ("ours", _) => peak_extra_bytes(|| (case.ours)(&x).map(drop))?,
        ("ours_fb", _) => peak_extra_bytes(|| forward_backward(case.ours, &var))?,
        ("native", Some(native)) => peak_extra_bytes(|| native(&x).map(drop))?,
        ("native", None) => candle_core::bail!("{}: candle has no native op", case.name),
        (other, _) => candle_core::bail!("SPEED_BENCH_MEMORY={other}: ours, ours_fb or native"),
    };
    let row = serde_json::json!({"name": case.name, "which": which, "peak_extra_bytes": bytes});
    println!("MEM {row}");
    Ok(())
}

fn main() -> Result<()> {
    let only = std::env::var("SPEED_BENCH_ONLY").ok();
    if let Ok(which) = std::env::var("SPEED_BENCH_MEMORY") {
        let name = only.unwrap_or_default();
        return match cases().into_iter().find(|c| c.name == name) {
            Some(case) => memory(&case, &which),
            None => candle_core::bail!(
                "SPEED_BENCH_MEMORY: SPEED_BENCH_ONLY must name one row exactly, got {name:?}"
            ),
        };
    }
    let reps = std::env::var("SPEED_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    println!(
        "candle-port-ops vs candle native forward, float32 CPU, {} threads, median of {reps} (ms)",
        candle_core::utils::get_num_threads()
    );
    println!(
        "{:30} {:>9} {:>9} {:>7} {:>9} {:>9}",
        "case", "ours fwd", "native", "ratio", "ours f+b", "floor"
    );
    for case in cases() {
        if only.as_deref().is_some_and(|o| !case.name.contains(o)) {
            continue;
        }
        let x = Tensor::rand(-1f32, 1f32, case.shape.as_slice(), &Device::Cpu)?;
        let var = Var::from_tensor(&x)?;
        let (ours_f, native_f, ratio) = match case.native {
            Some(native) => {
                let (o, n, r) =
                    paired(reps, || (case.ours)(&x).map(drop), || native(&x).map(drop))?;
                (o, Some(n), Some(r))
            }
            None => (single(reps, || (case.ours)(&x).map(drop))?, None, None),
        };
        let ours_fb = single(reps, || forward_backward(case.ours, &var))?;
        // candle's own share of every f+b here, whatever the op: the backward of `sum_all` over
        // the output (its ones broadcast, a zero accumulator, one add) and the accumulation of
        // the input's gradient (a zero tensor plus the op's gradient: candle's backprop adds
        // every gradient into a fresh accumulator, where torch moves the first one in).
        let out = Var::from_tensor(&(case.ours)(&x)?.detach())?;
        let sum_backward = single(reps, || out.as_tensor().sum_all()?.backward().map(drop))?;
        let accumulate = single(reps, || (x.zeros_like()? + &x).map(drop))?;
        let floor = sum_backward + accumulate;
        let mark = if case.native_unpadded { "*" } else { " " };
        println!(
            "{:30} {ours_f:9.2} {:>8}{mark} {:>7} {ours_fb:9.2} {floor:9.2}",
            case.name,
            native_f.map_or("-".into(), |n| format!("{n:.2}")),
            ratio.map_or("-".into(), |r| format!("{r:.2}")),
        );
        let row = serde_json::json!({
            "name": case.name,
            "shape": case.shape,
            "torch": case.torch,
            "ours_fwd_ms": ours_f,
            "ours_fb_ms": ours_fb,
            "candle_floor_ms": floor,
            "native_fwd_ms": native_f,
            "native_ratio": ratio,
            "native_unpadded": case.native_unpadded,
        });
        println!("ROW {row}");
    }
    println!("* native has no padding: it runs the same kernel and stride unpadded.");
    Ok(())
}
