//! candle 0.11.0's own ops, run and measured: what candle-port's rules claim about candle.
//!
//! Everything candle-port says about candle was first read from candle's source
//! (`../shared/candle-ops.md`). These tests run candle's native ops instead and assert what they
//! do today, forward and backward, against torch's numbers (the `native` family of the shared
//! vectors, `scripts/vectors/cases_native.py`) or against finite differences. Each test's doc
//! comment names the claim it confirms or corrects; `docs/candle-measured.md` is the summary
//! table. They assert candle's current behaviour, bugs included, so that a candle upgrade that
//! changes any of it fails here and the rules get revisited.

mod common;

use candle_core::{DType, Device, IndexOp, Result, Tensor, Var, D};
use candle_nn::Module;
use common::{assert_close, assert_input_gradient, grad_of, load_family, rel_err, Case};

/// The native family's cases with this name (one per dtype).
fn cases(name: &str) -> Vec<Case> {
    let found: Vec<Case> = load_family("native")
        .into_iter()
        .filter(|c| c.id.rsplit_once('.').map(|(n, _)| n) == Some(name))
        .collect();
    assert_eq!(found.len(), 2, "native vectors: {name} in f32 and f64");
    found
}

/// The error `backward()` gives, as text (panics if it succeeds).
fn backward_error(y: &Tensor) -> String {
    match y.sum_all().and_then(|l| l.backward()) {
        Ok(_) => panic!("backward() succeeded, expected an error"),
        Err(e) => e.to_string(),
    }
}

/// The first line of an error's text (candle appends a backtrace when RUST_BACKTRACE is set).
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

fn vec4(t: &Tensor) -> Vec<Vec<Vec<Vec<f64>>>> {
    let (n, c, h, w) = t.dims4().unwrap();
    let flat = t
        .to_dtype(DType::F64)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f64>()
        .unwrap();
    (0..n)
        .map(|a| {
            (0..c)
                .map(|b| {
                    (0..h)
                        .map(|i| {
                            (0..w)
                                .map(|j| flat[((a * c + b) * h + i) * w + j])
                                .collect()
                        })
                        .collect()
                })
                .collect()
        })
        .collect()
}

fn from4(v: &[Vec<Vec<Vec<f64>>>], dtype: DType) -> Tensor {
    let (n, c, h, w) = (v.len(), v[0].len(), v[0][0].len(), v[0][0][0].len());
    let flat: Vec<f64> = v.iter().flatten().flatten().flatten().copied().collect();
    Tensor::from_vec(flat, (n, c, h, w), &Device::Cpu)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

/// Central finite differences of the scalar `f` at `x` (f64; exact up to rounding when `f` is
/// linear in `x`, as every op measured with it here is).
fn numeric_grad(x: &Tensor, f: impl Fn(&Tensor) -> Result<f64>) -> Result<Tensor> {
    let base = x.flatten_all()?.to_vec1::<f64>()?;
    let h = 1e-3;
    let mut out = vec![0f64; base.len()];
    for (i, o) in out.iter_mut().enumerate() {
        let mut plus = base.clone();
        plus[i] += h;
        let mut minus = base.clone();
        minus[i] -= h;
        let fp = f(&Tensor::from_vec(plus, x.shape(), x.device())?)?;
        let fm = f(&Tensor::from_vec(minus, x.shape(), x.device())?)?;
        *o = (fp - fm) / (2.0 * h);
    }
    Tensor::from_vec(out, x.shape(), x.device())
}

/// f64 values uniform in [-1, 1) from a fixed seed (an LCG: independent of candle's RNG, so the
/// measured numbers never move). Distinct values almost surely: no accidental ties.
fn noise(shape: &[usize], seed: u64) -> Tensor {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let n: usize = shape.iter().product();
    let values: Vec<f64> = (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect();
    Tensor::from_vec(values, shape, &Device::Cpu).unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f64>()
        .unwrap()
}

/// The error text of a fallible forward (panics if it succeeds).
fn forward_error<T>(result: Result<T>) -> String {
    match result {
        Ok(_) => panic!("the forward succeeded, expected an error"),
        Err(e) => first_line(&e.to_string()).to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// upsample_bilinear2d (CP101)

/// Claim (CP101, candle-ops.md 2.1/4.1): candle's `upsample_bilinear2d` computes torch's bilinear
/// forward (size mode, both `align_corners`; `_with_scale` for scale_factor) but its backward
/// always bails with "backward not supported for upsample_bilinear2d". Measured: confirmed.
#[test]
fn bilinear_forward_equals_torch_and_backward_bails() {
    for name in ["bilinear_size", "bilinear_size_corners", "bilinear_scale"] {
        for case in cases(name) {
            let x = case.input_var();
            let corners = case.params["align_corners"].as_bool().unwrap();
            let y = match case.params["size"].as_array() {
                Some(size) => {
                    let (h, w) = (size[0].as_u64().unwrap(), size[1].as_u64().unwrap());
                    x.upsample_bilinear2d(h as usize, w as usize, corners)
                }
                None => {
                    let s = case.params["scale_factor"].as_f64().unwrap();
                    x.upsample_bilinear2d_with_scale(s, s, corners)
                }
            }
            .unwrap();
            assert_close(&case, "forward", &y, case.tensor("output"));
            assert_eq!(
                first_line(&backward_error(&y)),
                "backward not supported for upsample_bilinear2d",
                "{}",
                case.id
            );
        }
    }
}

/// Claim (candle-ops.md 2.1, UpsampleBilinear2D row): the one exception is `_with_scale` at the
/// input's own size, which returns the input unchanged (no op), so backward works. Measured:
/// confirmed (the gradient is the upstream gradient).
#[test]
fn bilinear_with_scale_at_identity_size_has_a_gradient() {
    let x = Var::from_tensor(&noise(&[1, 1, 4, 4], 1)).unwrap();
    let y = x.upsample_bilinear2d_with_scale(1.0, 1.0, false).unwrap();
    let g = noise(&[1, 1, 4, 4], 2);
    let grad = grad_of(&x, &y, &g).unwrap().expect("a gradient");
    assert_eq!(rel_err(&grad, &g).unwrap(), 0.0);
}

// ---------------------------------------------------------------------------------------------
// max_pool2d / avg_pool2d (CP106, CP107)

fn kernel_of(case: &Case) -> usize {
    case.params["kernel_size"].as_u64().unwrap() as usize
}

/// candle's MaxPool2D backward arm (backprop.rs:358-377), re-computed with plain loops:
/// `mask = x == nearest_up(out)`, `grad_x = nearest_up(g * avg_pool(mask)) * mask`, where
/// `nearest_up` is candle's `upsample_nearest2d` (source row `floor(i * ho / h)`). Used to show
/// that the measured gradient is exactly this formula, for every input shape and for ties.
fn candle_max_pool_grad_formula(x: &Tensor, out: &Tensor, g: &Tensor, k: usize) -> Tensor {
    let (xv, ov, gv) = (vec4(x), vec4(out), vec4(g));
    let (h, w) = (xv[0][0].len(), xv[0][0][0].len());
    let (ho, wo) = (ov[0][0].len(), ov[0][0][0].len());
    let up_h = |i: usize| ((i as f64 * (ho as f64 / h as f64)) as usize).min(ho - 1);
    let up_w = |j: usize| ((j as f64 * (wo as f64 / w as f64)) as usize).min(wo - 1);
    let grad: Vec<Vec<Vec<Vec<f64>>>> = xv
        .iter()
        .enumerate()
        .map(|(n, planes)| {
            planes
                .iter()
                .enumerate()
                .map(|(c, plane)| {
                    let mask = |i: usize, j: usize| {
                        (plane[i][j] == ov[n][c][up_h(i)][up_w(j)]) as u8 as f64
                    };
                    // avg_pool2d(mask) at window (a, b): the fraction of maxima in that window.
                    let share = |a: usize, b: usize| {
                        let count: f64 =
                            (0..k * k).map(|t| mask(a * k + t / k, b * k + t % k)).sum();
                        count / (k * k) as f64
                    };
                    (0..h)
                        .map(|i| {
                            (0..w)
                                .map(|j| {
                                    let (a, b) = (up_h(i), up_w(j));
                                    gv[n][c][a][b] * share(a, b) * mask(i, j)
                                })
                                .collect()
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    from4(&grad, x.dtype())
}

/// Claim (CP107, candle-ops.md 2.3): with kernel == stride and sizes the kernel divides, candle's
/// max_pool2d forward equals torch's and its gradient is torch's scaled by 1/(kh*kw) (0.25x for
/// 2x2, 1/9 for 3x3) when every window has one maximum. Measured: confirmed, to rounding.
#[test]
fn max_pool_kernel_eq_stride_scales_gradient_by_one_over_window() {
    for name in ["max_k2", "max_k3"] {
        for case in cases(name) {
            let k = kernel_of(&case);
            let x = case.input_var();
            let y = x.max_pool2d(k).unwrap();
            assert_close(&case, "forward", &y, case.tensor("output"));
            let grad = grad_of(&x, &y, case.tensor("grad_output"))
                .unwrap()
                .unwrap();
            let scaled_torch = (case.tensor("grad_input") / (k * k) as f64).unwrap();
            assert_close(&case, "grad = torch / (k*k)", &grad, &scaled_torch);
            assert!(rel_err(&grad, case.tensor("grad_input")).unwrap() > 0.5);
        }
    }
}

/// Claim (CP107): "the maximum gets 1/(kh*kw) of the true gradient", shown on the smallest case:
/// `x = [[1, 2], [3, 4]]`, `loss = sum(max_pool2d(x, 2))`. torch: `[0, 0, 0, 1]`. Measured:
/// candle `[0, 0, 0, 0.25]`, confirmed.
#[test]
fn max_pool_single_window_gradient_is_a_quarter() {
    let x =
        Var::from_tensor(&Tensor::new(&[[[[1f64, 2.], [3., 4.]]]], &Device::Cpu).unwrap()).unwrap();
    let y = x.max_pool2d(2).unwrap();
    let grad = grad_of(&x, &y, &y.ones_like().unwrap()).unwrap().unwrap();
    assert_eq!(values(&grad), [0.0, 0.0, 0.0, 0.25]);
}

/// Claim (candle-ops.md 2.1 MaxPool2D, "scale the gradient for multiple maxima"): with ties, every
/// tied maximum of a window gets the same share `g * count / (kh*kw)`, where torch gives the whole
/// `g` to one of them. Measured: confirmed. `[[1, 1], [0, 1]]` gives `[[0.75, 0.75], [0, 0.75]]`
/// (the window's total is 2.25 g, torch's `[[1, 0], [0, 0]]` totals g); on the `max_k2_ties`
/// vectors the gradient is exactly candle's formula and 0.75 (relative) away from torch's.
#[test]
fn max_pool_ties_each_get_count_over_window_share() {
    let x =
        Var::from_tensor(&Tensor::new(&[[[[1f64, 1.], [0., 1.]]]], &Device::Cpu).unwrap()).unwrap();
    let y = x.max_pool2d(2).unwrap();
    let grad = grad_of(&x, &y, &y.ones_like().unwrap()).unwrap().unwrap();
    assert_eq!(values(&grad), [0.75, 0.75, 0.0, 0.75]);
    for case in cases("max_k2_ties") {
        let x = case.input_var();
        let y = x.max_pool2d(2).unwrap();
        assert_close(&case, "forward", &y, case.tensor("output"));
        let g = case.tensor("grad_output");
        let grad = grad_of(&x, &y, g).unwrap().unwrap();
        let formula = candle_max_pool_grad_formula(x.as_tensor(), &y, g, 2);
        assert_close(&case, "grad = candle formula", &grad, &formula);
        let err = rel_err(&grad, case.tensor("grad_input")).unwrap();
        assert!((err - 0.75).abs() < 1e-6, "{}: {err}", case.id);
    }
}

/// Claim (candle-ops.md 2.3): with kernel == stride but H or W not divisible by k, the max-pool
/// gradient "lands on the wrong rows". Measured, and worse: the forward equals torch's, but the
/// backward's max mask compares each input with the output that `upsample_nearest2d(h, w)` maps
/// it to (row `floor(i * ho / h)`), which for 5x7 and k=2 is the wrong window for most rows and
/// columns, so most maxima get **no gradient at all** (3 of the 12 here) and the few that do get
/// the 1/(kh*kw) share. The gradient is exactly candle's arm re-computed by hand.
#[test]
fn max_pool_non_divisible_size_loses_most_maxima_gradients() {
    for case in cases("max_k2_odd") {
        let x = case.input_var();
        let y = x.max_pool2d(2).unwrap();
        assert_close(&case, "forward", &y, case.tensor("output"));
        let g = case.tensor("grad_output");
        let grad = grad_of(&x, &y, g).unwrap().unwrap();
        let formula = candle_max_pool_grad_formula(x.as_tensor(), &y, g, 2);
        assert_close(&case, "grad = candle formula", &grad, &formula);
        let (torch, candle) = (values(case.tensor("grad_input")), values(&grad));
        let maxima = torch.iter().filter(|v| **v != 0.0).count();
        let kept = torch
            .iter()
            .zip(&candle)
            .filter(|(t, c)| **t != 0.0 && **c != 0.0)
            .count();
        assert_eq!((kept, maxima), (3, 12), "{}", case.id);
        for (t, c) in torch.iter().zip(&candle) {
            if *c != 0.0 {
                assert!(
                    (c - t / 4.0).abs() < 1e-6,
                    "{}: kept maxima get 1/4",
                    case.id
                );
            }
        }
    }
}

/// CP107's by-hand composition: crop to a multiple of k, `reshape(n, c, h / k, k, w / k, k)`,
/// then max over the two window axes.
fn max_pool_by_reshape(x: &Tensor, k: usize) -> Result<Tensor> {
    let (n, c, h, w) = x.dims4()?;
    let (ho, wo) = (h / k, w / k);
    x.narrow(2, 0, ho * k)?
        .narrow(3, 0, wo * k)?
        .reshape((n, c, ho, k, wo, k))?
        .max(5)?
        .max(3)
}

/// Claim (CP107's fix hint): "compose it by hand: x.reshape(n, c, h // k, k, w // k, k), max over
/// the window axes". Measured: equal to torch in forward and backward for distinct maxima, also
/// on sizes the kernel does not divide once the remainder is cropped; with ties it differs from
/// torch: candle's max gives **every** tied maximum the whole gradient (torch: one of them).
#[test]
fn max_pool_by_reshape_and_max() {
    for name in ["max_k2", "max_k3", "max_k2_odd"] {
        for case in cases(name) {
            let x = case.input_var();
            let y = max_pool_by_reshape(&x, kernel_of(&case)).unwrap();
            assert_close(&case, "forward", &y, case.tensor("output"));
            assert_input_gradient(&case, &x, &y);
        }
    }
    let x =
        Var::from_tensor(&Tensor::new(&[[[[1f64, 1.], [0., 1.]]]], &Device::Cpu).unwrap()).unwrap();
    let y = max_pool_by_reshape(&x, 2).unwrap();
    let grad = grad_of(&x, &y, &y.ones_like().unwrap()).unwrap().unwrap();
    assert_eq!(values(&grad), [1.0, 1.0, 0.0, 1.0]);
}

/// Claim (candle-ops.md 2.1 AvgPool2D): with kernel == stride and sizes the kernel divides,
/// candle's avg_pool2d gradient is right. Measured: confirmed (equal to torch's).
#[test]
fn avg_pool_kernel_eq_stride_gradient_equals_torch() {
    for case in cases("avg_k2") {
        let x = case.input_var();
        let y = x.avg_pool2d(2).unwrap();
        assert_close(&case, "forward", &y, case.tensor("output"));
        assert_input_gradient(&case, &x, &y);
    }
}

/// Claim (candle-ops.md 2.3): avg_pool2d with H or W not divisible by k: the gradient is
/// `upsample_nearest2d(g, h, w) / (kh*kw)`, so it lands on the wrong rows and on the dropped
/// remainder. Measured: confirmed; the forward equals torch's, the gradient is exactly that
/// formula, 1.68 (relative) away from torch's on 5x7, k=2.
#[test]
fn avg_pool_non_divisible_size_gradient_is_wrong() {
    for case in cases("avg_k2_odd") {
        let x = case.input_var();
        let y = x.avg_pool2d(2).unwrap();
        assert_close(&case, "forward", &y, case.tensor("output"));
        let g = case.tensor("grad_output");
        let grad = grad_of(&x, &y, g).unwrap().unwrap();
        let (_, _, h, w) = x.dims4().unwrap();
        let formula = (g.upsample_nearest2d(h, w).unwrap() / 4.0).unwrap();
        assert_close(&case, "grad = nearest_up(g) / 4", &grad, &formula);
        assert!(rel_err(&grad, case.tensor("grad_input")).unwrap() > 1.0);
    }
}

/// Claim (CP106, candle-ops.md 2.1): max/avg pool with kernel != stride: candle's forward runs
/// (and equals torch's), the backward bails with "backward not supported for maxpool2d if ksize
/// (3, 3) != stride (2, 2)" (avgpool2d likewise). Measured: confirmed, messages verbatim.
#[test]
fn pool_kernel_ne_stride_backward_bails() {
    for case in cases("max_k3s2") {
        let x = case.input_var();
        let y = x.max_pool2d_with_stride(3, 2).unwrap();
        assert_close(&case, "forward", &y, case.tensor("output"));
        assert_eq!(
            first_line(&backward_error(&y)),
            "backward not supported for maxpool2d if ksize (3, 3) != stride (2, 2)"
        );
    }
    for case in cases("avg_k3s2") {
        let x = case.input_var();
        let y = x.avg_pool2d_with_stride(3, 2).unwrap();
        assert_close(&case, "forward", &y, case.tensor("output"));
        assert_eq!(
            first_line(&backward_error(&y)),
            "backward not supported for avgpool2d if ksize (3, 3) != stride (2, 2)"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// upsample_nearest2d (CP103)

fn size_of(case: &Case) -> (usize, usize) {
    let size = case.params["size"].as_array().unwrap();
    (
        size[0].as_u64().unwrap() as usize,
        size[1].as_u64().unwrap() as usize,
    )
}

/// Claim (CP103, candle-ops.md 2.1): nearest upsampling by an integer, uniform factor has a
/// correct backward. Measured: confirmed (forward and gradient equal torch's).
#[test]
fn nearest_integer_uniform_scale_equals_torch() {
    for case in cases("nearest_up2") {
        let x = case.input_var();
        let (h, w) = size_of(&case);
        let y = x.upsample_nearest2d(h, w).unwrap();
        assert_close(&case, "forward", &y, case.tensor("output"));
        assert_input_gradient(&case, &x, &y);
    }
}

/// Claim (CP103, candle-ops.md 2.1): nearest with a non-integer factor, a non-uniform one or a
/// downscale: candle's forward runs (and equals torch's), the backward bails with "backward not
/// supported for non integer upscaling factors" (a downscale too) or "... non uniform upscaling
/// factors". Measured: confirmed: it fails, it does not silently overwrite.
#[test]
fn nearest_non_integer_non_uniform_or_downscale_backward_bails() {
    for (name, message) in [
        (
            "nearest_frac",
            "backward not supported for non integer upscaling factors",
        ),
        (
            "nearest_nonuniform",
            "backward not supported for non uniform upscaling factors",
        ),
        (
            "nearest_down2",
            "backward not supported for non integer upscaling factors",
        ),
    ] {
        for case in cases(name) {
            let x = case.input_var();
            let (h, w) = size_of(&case);
            let y = x.upsample_nearest2d(h, w).unwrap();
            assert_close(&case, "forward", &y, case.tensor("output"));
            assert_eq!(first_line(&backward_error(&y)), message, "{}", case.id);
        }
    }
}

/// Claim (verify's upsample_nearest1d condition, candle-ops.md 2.1 UpsampleNearest1D): 1-D
/// nearest (`interpolate1d`) differentiates an integer upscale and bails otherwise, like 2-D.
/// Measured: confirmed; the integer case equals finite differences, 5 -> 7 and 6 -> 3 fail with
/// "backward not supported for non integer upscaling factors".
#[test]
fn nearest1d_integer_scale_differentiates_and_others_bail() {
    let xt = noise(&[1, 2, 5], 31);
    let x = Var::from_tensor(&xt).unwrap();
    let y = x.interpolate1d(15).unwrap();
    let g = noise(&[1, 2, 15], 32);
    let grad = grad_of(&x, &y, &g).unwrap().unwrap();
    let want = numeric_grad(&xt, |x| {
        (x.interpolate1d(15)? * &g)?.sum_all()?.to_scalar::<f64>()
    })
    .unwrap();
    assert!(rel_err(&grad, &want).unwrap() < 1e-9);
    for (size, target) in [(5, 7), (6, 3)] {
        let x = Var::from_tensor(&noise(&[1, 2, size], 33)).unwrap();
        let y = x.interpolate1d(target).unwrap();
        assert_eq!(
            first_line(&backward_error(&y)),
            "backward not supported for non integer upscaling factors"
        );
    }
}

/// Claim (candle-ops.md 2.3, verify's upsample_nearest2d caveat): the nearest backward overwrites
/// the gradient accumulated so far instead of adding to it, so another consumer of the
/// upsample's input loses its share, depending on graph order. `loss = sum(up2(x) * g) + 3 *
/// sum(x)`: torch gives `sum_pool2(g) + 3`. Measured: confirmed; written `up + other`, candle
/// drops the `+ 3` (the gradient is the upsample's alone); written `other + up`, it is torch's.
#[test]
fn nearest_backward_overwrites_other_consumers_gradient() {
    let x = Var::from_tensor(&noise(&[1, 1, 2, 3], 3)).unwrap();
    let g = noise(&[1, 1, 4, 6], 4);
    let up = x.upsample_nearest2d(4, 6).unwrap();
    let upsample_part = (&up * &g).unwrap().sum_all().unwrap();
    let other_part = (x.as_tensor() * 3.0).unwrap().sum_all().unwrap();
    let upsample_only = (g.avg_pool2d(2).unwrap() * 4.0).unwrap();
    let torch = upsample_only.affine(1.0, 3.0).unwrap();
    let grads = (&upsample_part + &other_part).unwrap().backward().unwrap();
    let grad = grads.get(x.as_tensor()).unwrap();
    assert!(rel_err(grad, &upsample_only).unwrap() < 1e-12);
    assert!(rel_err(grad, &torch).unwrap() > 0.5);
    let grads = (&other_part + &upsample_part).unwrap().backward().unwrap();
    let grad = grads.get(x.as_tensor()).unwrap();
    assert!(rel_err(grad, &torch).unwrap() < 1e-12);
}

// ---------------------------------------------------------------------------------------------
// transposed and strided convolutions (CP108, verify's convolution conditions)

/// Claim (CP108, candle-ops.md 2.1): conv_transpose1d's forward runs; its backward fails with
/// "backward is not supported for conv-transpose1d". Measured: confirmed.
#[test]
fn conv_transpose1d_backward_bails() {
    let x = Var::from_tensor(&noise(&[1, 2, 5], 5)).unwrap();
    let k = noise(&[2, 3, 4], 6);
    let y = x.conv_transpose1d(&k, 1, 0, 2, 1, 1).unwrap();
    assert_eq!(y.dims(), &[1, 3, 10]);
    assert_eq!(
        first_line(&backward_error(&y)),
        "backward is not supported for conv-transpose1d"
    );
}

/// Found on demucs (verify --candle at batch 2): conv_transpose1d's **forward** is wrong for a
/// batch above 1 with more than one input channel when padding, output_padding and dilation are
/// 0, 0 and 1 (the col2im path, whose matmul reads the transposed input with the wrong batch
/// stride); with padding it takes the direct kernel and is right. Measured against torch's
/// numbers (the transposed_conv vectors' `ct1d_basic`: batch 2, 3 input channels, padding 0).
#[test]
fn conv_transpose1d_forward_is_wrong_for_batch_above_one_without_padding() {
    let torch_case = load_family("transposed_conv")
        .into_iter()
        .find(|c| c.id == "ct1d_basic.f64")
        .expect("ct1d_basic.f64");
    let (x, w) = (torch_case.tensor("input"), torch_case.tensor("weight"));
    let b = torch_case.tensor("bias").reshape((1, 4, 1)).unwrap();
    let candle = x
        .conv_transpose1d(w, 0, 0, 1, 1, 1)
        .unwrap()
        .broadcast_add(&b)
        .unwrap();
    assert!(rel_err(&candle, torch_case.tensor("output")).unwrap() > 0.1);
    // each sample alone (batch 1) is right
    let first = x
        .narrow(0, 0, 1)
        .unwrap()
        .conv_transpose1d(w, 0, 0, 1, 1, 1)
        .unwrap()
        .broadcast_add(&b)
        .unwrap();
    let want = torch_case.tensor("output").narrow(0, 0, 1).unwrap();
    assert!(rel_err(&first, &want).unwrap() < 1e-12);
    // with padding (the direct kernel) the batch is right: equal to the crate's twin
    let x = noise(&[2, 3, 7], 41);
    let w = noise(&[3, 4, 3], 42);
    let padded = x.conv_transpose1d(&w, 1, 0, 2, 1, 1).unwrap();
    let twin = candle_port_ops::conv_transpose1d(
        &x,
        &w,
        None,
        &candle_port_ops::Conv::new().stride(&[2]).padding(&[1]),
    )
    .unwrap();
    assert!(rel_err(&padded, &twin).unwrap() < 1e-12);
}

/// Found on demucs: conv1d's weight gradient is wrong for a batch above 1 with more than one
/// output channel per group (candle's CPU conv1d copies a non-contiguous kernel, then multiplies
/// by the original; the backward's kernel is the transposed output gradient). CP111.
#[test]
fn conv1d_weight_gradient_is_wrong_for_batch_above_one() {
    let x = noise(&[2, 3, 9], 43);
    let w = Var::from_tensor(&noise(&[4, 3, 3], 44)).unwrap();
    let g = noise(&[2, 4, 9], 45);
    let pad1 = candle_port_ops::Conv::new().padding(&[1]);
    let weight_grad = |y: Tensor, g: &Tensor| grad_of(&w, &y, g).unwrap().unwrap();
    let candle = weight_grad(x.conv1d(w.as_tensor(), 1, 1, 1, 1).unwrap(), &g);
    let twin = weight_grad(
        candle_port_ops::conv1d(&x, w.as_tensor(), None, &pad1).unwrap(),
        &g,
    );
    assert!(rel_err(&candle, &twin).unwrap() > 0.1);
    // batch 1: right
    let one = x.narrow(0, 0, 1).unwrap();
    let g1 = g.narrow(0, 0, 1).unwrap();
    let candle = weight_grad(one.conv1d(w.as_tensor(), 1, 1, 1, 1).unwrap(), &g1);
    let twin = weight_grad(
        candle_port_ops::conv1d(&one, w.as_tensor(), None, &pad1).unwrap(),
        &g1,
    );
    assert!(rel_err(&candle, &twin).unwrap() < 1e-12);
}

/// Found on transformers' Wav2Vec2 (its frozen feature extractor passes only the input
/// gradient): conv1d's **input** gradient is wrong for a batch above 1 with more than one output
/// channel per group when padding is 0, dilation 1 and `(L - k) % stride == 0`. candle's backward
/// computes it with `conv_transpose1d(grad, kernel, padding, out_padding, ...)`, and with padding
/// 0, dilation 1 and a derived out_padding of 0 that call takes the CPU col2im path whose forward
/// is wrong for batch > 1 (above). Measured against torch's numbers: `Conv1d(1, 2, 3)` on 2x1x10
/// in float64, `loss = sum(conv1d(x, w) * g)` with `g` = `(arange % 7) - 3` in the output's shape
/// (torch 2.14, `F.conv1d` then `backward`; integer weights, so torch's values are exact). Padding
/// 0 and stride 2 at L = 11 are wrong (1.17 and 1.8 relative); padding 1, batch 1 and stride 2
/// at L = 10 (out_padding 1) are right. `g` differs between the two samples: with equal samples
/// the wrong batch stride does not show.
#[test]
fn conv1d_input_gradient_is_wrong_for_batch_above_one_without_padding() {
    let w = Tensor::new(&[[[1f64, 2., 3.]], [[-1., 0., 2.]]], &Device::Cpu).unwrap();
    let input_grad = |batch: usize, len: usize, padding: usize, stride: usize| {
        let x = Var::from_tensor(&noise(&[batch, 1, len], 46)).unwrap();
        let y = x.conv1d(&w, padding, stride, 1, 1).unwrap();
        let g: Vec<f64> = (0..y.elem_count()).map(|i| (i % 7) as f64 - 3.0).collect();
        let g = Tensor::from_vec(g, y.shape(), &Device::Cpu).unwrap();
        grad_of(&x, &y, &g).unwrap().unwrap()
    };
    let torch = |values: &[f64], len: usize| {
        Tensor::from_vec(values.to_vec(), (values.len() / len, 1, len), &Device::Cpu).unwrap()
    };
    let pad0 = torch(
        &[
            -1., -7., -18., -11., -4., 3., 17., 17., -3., -13., //
            -1., -3., -4., 3., 17., 17., -4., -18., -10., -3.,
        ],
        10,
    );
    let err = rel_err(&input_grad(2, 10, 0, 1), &pad0).unwrap();
    assert!(err > 0.5, "padding 0, batch 2: {err}");
    // batch 1 is right (torch's first sample: g's first half is the same)
    let first = pad0.narrow(0, 0, 1).unwrap();
    assert!(rel_err(&input_grad(1, 10, 0, 1), &first).unwrap() < 1e-12);
    // padding 1 takes conv_transpose1d's direct kernel: right
    let pad1 = torch(
        &[
            -9., -16., -9., 5., 12., 5., 5., -2., -16., -6., //
            3., -2., -16., -9., 5., 12., 5., 5., -2., -13.,
        ],
        10,
    );
    assert!(rel_err(&input_grad(2, 10, 1, 1), &pad1).unwrap() < 1e-12);
    // stride 2: L = 11 derives out_padding 0 (col2im, wrong); L = 10 derives 1 (right)
    let s2_l11 = torch(
        &[
            -5., -6., -10., -4., 2., -2., -7., 0., -2., 2., 1., //
            2., 0., -2., 2., 3., 4., 8., 6., 6., -6., -5.,
        ],
        11,
    );
    let err = rel_err(&input_grad(2, 11, 0, 2), &s2_l11).unwrap();
    assert!(err > 0.5, "stride 2, L 11: {err}");
    let s2_l10 = torch(
        &[
            -4., -6., -11., -4., -6., -2., 6., 0., -6., 0., //
            -4., -4., -6., -2., 6., 0., -3., 2., -1., 0.,
        ],
        10,
    );
    assert!(rel_err(&input_grad(2, 10, 0, 2), &s2_l10).unwrap() < 1e-12);
}

/// CP108's workaround for conv_transpose1d: conv_transpose2d on a height-1 image with padding 0
/// and output_padding 0, then crop `padding` columns from each end and append `output_padding`
/// zero columns (what torch's padding and output_padding do to the full output).
fn conv_transpose1d_via_2d(
    x: &Tensor,
    k: &Tensor,
    padding: usize,
    output_padding: usize,
    stride: usize,
) -> Result<Tensor> {
    let full = x
        .unsqueeze(2)?
        .conv_transpose2d(&k.unsqueeze(2)?, 0, 0, stride, 1)?
        .squeeze(2)?;
    let len = full.dim(2)? + output_padding - 2 * padding;
    let kept = (full.dim(2)? - padding).min(len);
    let body = full.narrow(2, padding, kept)?;
    if kept == len {
        return Ok(body);
    }
    let (n, c, _) = body.dims3()?;
    let zeros = Tensor::zeros((n, c, len - kept), body.dtype(), body.device())?;
    Tensor::cat(&[&body, &zeros], 2)
}

/// Claim (CP108's fix hint, as first written): "1-D: unsqueeze to 2-D and use conv_transpose2d
/// with a (1, k) kernel". Measured: **corrected**. candle's conv_transpose2d applies its one
/// padding and output_padding to the height too, so with output_padding > 0 the result gets a
/// second row, and with padding > 0 the height `1 - 2 * padding` underflows (a panic in debug
/// builds). Padding 0 and output_padding 0, then cropping, equals conv_transpose1d in forward and
/// has a backward (input and kernel gradients equal finite differences).
#[test]
fn conv_transpose1d_as_conv_transpose2d() {
    let xt = noise(&[1, 2, 5], 34);
    let kt = noise(&[2, 3, 4], 35);
    let naive = |p: usize, op: usize| {
        xt.unsqueeze(2)
            .and_then(|x| x.conv_transpose2d(&kt.unsqueeze(2)?, p, op, 2, 1))
    };
    assert_eq!(naive(0, 0).unwrap().dims(), &[1, 3, 1, 12]);
    assert_eq!(naive(0, 1).unwrap().dims(), &[1, 3, 2, 13]);
    #[cfg(debug_assertions)]
    assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| naive(1, 0))).is_err());
    for (p, op, s) in [(0, 0, 2), (1, 0, 2), (1, 1, 2), (0, 1, 2), (2, 1, 3)] {
        let want = xt.conv_transpose1d(&kt, p, op, s, 1, 1).unwrap();
        let got = conv_transpose1d_via_2d(&xt, &kt, p, op, s).unwrap();
        assert!(rel_err(&got, &want).unwrap() < 1e-12, "p {p} op {op} s {s}");
        let result = conv_grad_errors(&xt, &kt, |x, k| conv_transpose1d_via_2d(x, k, p, op, s));
        assert_grads_ok(
            &format!("conv_transpose1d via 2-D, p {p} op {op} s {s}"),
            result,
        );
    }
}

type GradErrors = std::result::Result<(f64, f64), String>;

/// Relative errors of candle's input and kernel gradients against finite differences, or the
/// backward's error.
fn conv_grad_errors(
    xt: &Tensor,
    kt: &Tensor,
    conv: impl Fn(&Tensor, &Tensor) -> Result<Tensor>,
) -> GradErrors {
    let x = Var::from_tensor(xt).unwrap();
    let k = Var::from_tensor(kt).unwrap();
    let y = conv(x.as_tensor(), k.as_tensor()).unwrap();
    let g = noise(y.dims(), 9);
    let grads = (&y * &g)
        .and_then(|p| p.sum_all())
        .and_then(|l| l.backward())
        .map_err(|e| first_line(&e.to_string()).to_string())?;
    let loss = |x: &Tensor, k: &Tensor| -> Result<f64> {
        (conv(x, k)? * &g)?.sum_all()?.to_scalar::<f64>()
    };
    let want_x = numeric_grad(xt, |x| loss(x, kt)).unwrap();
    let want_k = numeric_grad(kt, |k| loss(xt, k)).unwrap();
    Ok((
        rel_err(grads.get(x.as_tensor()).unwrap(), &want_x)?,
        rel_err(grads.get(k.as_tensor()).unwrap(), &want_k)?,
    ))
}

fn assert_grads_ok(what: &str, result: GradErrors) {
    match result {
        Ok((ex, ek)) => assert!(ex < 1e-9 && ek < 1e-9, "{what}: errors {ex:e} {ek:e}"),
        Err(e) => panic!("{what}: backward failed: {e}"),
    }
}

/// Claim (CP108's fix hint): grouped conv_transpose2d, which candle lacks, is "split the channels
/// and run one conv_transpose2d per group, then cat". Measured: confirmed; it equals one
/// conv_transpose2d with the block-diagonal kernel, and its gradients (through kernel slices at
/// non-zero offsets) equal finite differences.
#[test]
fn grouped_conv_transpose2d_as_one_per_group() {
    let groups = 2;
    let xt = noise(&[1, 4, 3, 4], 36);
    let kt = noise(&[4, 3, 3, 3], 37); // (c_in, c_out / groups, kh, kw)
    let grouped = |x: &Tensor, k: &Tensor| -> Result<Tensor> {
        let parts = (0..groups)
            .map(|g| {
                x.narrow(1, 2 * g, 2)?
                    .conv_transpose2d(&k.narrow(0, 2 * g, 2)?, 1, 1, 2, 1)
            })
            .collect::<Result<Vec<_>>>()?;
        Tensor::cat(&parts, 1)
    };
    // The same op as one conv_transpose2d with a block-diagonal (c_in, c_out, kh, kw) kernel.
    let zeros = Tensor::zeros((2, 3, 3, 3), DType::F64, &Device::Cpu).unwrap();
    let top = Tensor::cat(&[&kt.narrow(0, 0, 2).unwrap(), &zeros], 1).unwrap();
    let bottom = Tensor::cat(&[&zeros, &kt.narrow(0, 2, 2).unwrap()], 1).unwrap();
    let dense = Tensor::cat(&[&top, &bottom], 0).unwrap();
    let want = xt.conv_transpose2d(&dense, 1, 1, 2, 1).unwrap();
    assert!(rel_err(&grouped(&xt, &kt).unwrap(), &want).unwrap() < 1e-12);
    assert_grads_ok(
        "grouped conv_transpose2d",
        conv_grad_errors(&xt, &kt, grouped),
    );
}

/// Claim (CP108, candle-ops.md 2.1/3.3): conv_transpose2d has a full backward that ignores
/// output_padding: right while output_padding < stride, a wrong input-gradient shape otherwise.
/// Measured: confirmed, and the wrong shape is a hard error at `backward()` ("shape mismatch in
/// add, ..."), not a silent one. torch itself accepts output_padding >= stride only when it is
/// < dilation, so the failing cases all have dilation > 1.
#[test]
fn conv_transpose2d_backward_fails_when_output_padding_reaches_stride() {
    let xt = noise(&[1, 2, 4, 5], 7);
    let kt = noise(&[2, 3, 3, 3], 8);
    for (s, p, op, d) in [
        (1, 0, 0, 1),
        (2, 0, 0, 1),
        (2, 1, 1, 1),
        (3, 1, 2, 1),
        (2, 0, 0, 2),
        (2, 1, 1, 3),
    ] {
        let result = conv_grad_errors(&xt, &kt, |x, k| x.conv_transpose2d(k, p, op, s, d));
        assert_grads_ok(
            &format!("stride {s} padding {p} output_padding {op} dilation {d}"),
            result,
        );
    }
    for (s, p, op, d) in [(1, 0, 1, 2), (2, 0, 2, 3)] {
        let result = conv_grad_errors(&xt, &kt, |x, k| x.conv_transpose2d(k, p, op, s, d));
        assert_eq!(
            result,
            Err("shape mismatch in add, lhs: [1, 2, 4, 5], rhs: [1, 2, 5, 6]".to_string()),
            "stride {s} output_padding {op} dilation {d}"
        );
    }
}

/// Claim (candle-ops.md 2.1 Conv2D and 5, verify's conv2d condition): conv2d's backward is full,
/// except with stride > 1 when the H and W residuals `(size + 2p - d(k-1) - 1) mod s` differ
/// (e.g. 7x8, k3 p1 s2): one output_padding computed from the height is used for both axes and
/// the backward fails with a shape mismatch. Measured: confirmed.
#[test]
fn conv2d_backward_fails_when_h_and_w_residuals_differ() {
    let kt = noise(&[3, 2, 3, 3], 11);
    for (h, w, s, p) in [(6, 6, 1, 1), (8, 8, 2, 1), (7, 7, 2, 1), (6, 8, 2, 1)] {
        let xt = noise(&[1, 2, h, w], 10);
        let result = conv_grad_errors(&xt, &kt, |x, k| x.conv2d(k, p, s, 1, 1));
        assert_grads_ok(&format!("conv2d {h}x{w} stride {s}"), result);
    }
    for (h, w, s, p, message) in [
        (
            7,
            8,
            2,
            1,
            "shape mismatch in add, lhs: [1, 2, 7, 8], rhs: [1, 2, 7, 7]",
        ),
        (
            8,
            7,
            2,
            1,
            "shape mismatch in add, lhs: [1, 2, 8, 7], rhs: [1, 2, 8, 8]",
        ),
        (
            9,
            8,
            3,
            0,
            "shape mismatch in add, lhs: [1, 2, 9, 8], rhs: [1, 2, 9, 6]",
        ),
    ] {
        let xt = noise(&[1, 2, h, w], 10);
        let result = conv_grad_errors(&xt, &kt, |x, k| x.conv2d(k, p, s, 1, 1));
        assert_eq!(
            result,
            Err(message.to_string()),
            "conv2d {h}x{w} stride {s}"
        );
    }
}

/// Claim (candle-ops.md 1 and 7.4): CPU conv2d with a non-contiguous kernel gives wrong
/// gradients in 0.11.0 (issue #3735; PR #3736, merged after the release). Measured: a transposed
/// kernel (#3735's repro) is right, forward and backward. A 1x1 kernel sliced along its input
/// channels (a non-contiguous view at a non-zero offset, #3736's case) with padding, which takes
/// candle's full-im2col path, gives a wrong **forward** (1.42 relative); the input gradient,
/// computed by conv_transpose2d, is still right.
#[test]
fn conv2d_with_non_contiguous_kernel() {
    let xt = noise(&[1, 2, 6, 6], 27);
    let kt = noise(&[3, 2, 3, 3], 28);
    let transposed = conv_grad_errors(&xt, &kt, |x, k| x.conv2d(&k.transpose(2, 3)?, 1, 1, 1, 1));
    assert_grads_ok("transposed kernel", transposed);
    let big = noise(&[3, 4, 1, 1], 29);
    let sliced = big.narrow(1, 2, 2).unwrap();
    assert!(!sliced.is_contiguous());
    let conv = |k: &Tensor| xt.conv2d(k, 1, 1, 1, 1).unwrap();
    let err = rel_err(&conv(&sliced), &conv(&sliced.contiguous().unwrap())).unwrap();
    assert!(err > 1.0, "sliced kernel forward: {err:e}");
    let x = Var::from_tensor(&xt).unwrap();
    let y = x.conv2d(&sliced, 1, 1, 1, 1).unwrap();
    let g = noise(y.dims(), 30);
    let grad = grad_of(&x, &y, &g).unwrap().unwrap();
    let kc = sliced.contiguous().unwrap();
    let want = numeric_grad(&xt, |x| {
        (x.conv2d(&kc, 1, 1, 1, 1)? * &g)?
            .sum_all()?
            .to_scalar::<f64>()
    })
    .unwrap();
    assert!(rel_err(&grad, &want).unwrap() < 1e-9);
}

// ---------------------------------------------------------------------------------------------
// candle-nn's fused ops (verify's layer_norm / rms_norm / softmax caveats)

fn has_grads(loss: &Tensor, vars: &[&Var]) -> Vec<bool> {
    let grads = loss.backward().unwrap();
    vars.iter()
        .map(|v| grads.get(v.as_tensor()).is_some())
        .collect()
}

fn f32_noise(shape: &[usize], seed: u64) -> Tensor {
    noise(shape, seed).to_dtype(DType::F32).unwrap()
}

/// Claim (candle-ops.md 2.2; verify's layer_norm, rms_norm and softmax caveats):
/// `candle_nn::LayerNorm::forward` (contiguous input, with bias; the input, weight and bias
/// gradients), `RmsNorm::forward` (contiguous input), `ops::softmax_last_dim` and
/// `rotary_emb::rope` record no backward: no error, the Vars simply get no gradient, and an
/// optimizer skips them. `ops::softmax`, `rope_slow` and the non-contiguous (slow) paths of
/// LayerNorm/RmsNorm do differentiate. Measured: confirmed, in f32.
#[test]
fn fused_candle_nn_ops_cut_gradients() {
    let dev = Device::Cpu;
    let x = Var::from_tensor(&f32_noise(&[2, 3, 8], 13)).unwrap();
    let weight = Var::from_tensor(&Tensor::ones(8, DType::F32, &dev).unwrap()).unwrap();
    let bias = Var::from_tensor(&Tensor::zeros(8, DType::F32, &dev).unwrap()).unwrap();
    let g = f32_noise(&[2, 3, 8], 14);
    let loss = |y: Tensor| (y * &g).unwrap().sum_all().unwrap();
    let ln = candle_nn::LayerNorm::new(weight.as_tensor().clone(), bias.as_tensor().clone(), 1e-5);
    let rms = candle_nn::RmsNorm::new(weight.as_tensor().clone(), 1e-5);
    assert_eq!(
        has_grads(&loss(ln.forward(&x).unwrap()), &[&x, &weight, &bias]),
        [false; 3]
    );
    assert_eq!(
        has_grads(&loss(rms.forward(&x).unwrap()), &[&x, &weight]),
        [false; 2]
    );
    let softmax_last_dim = candle_nn::ops::softmax_last_dim(&x).unwrap();
    assert_eq!(has_grads(&loss(softmax_last_dim), &[&x]), [false]);
    let softmax = candle_nn::ops::softmax(&x, D::Minus1).unwrap();
    assert_eq!(has_grads(&loss(softmax), &[&x]), [true]);
    // The slow paths: a non-contiguous input.
    let xt = Var::from_tensor(&f32_noise(&[2, 8, 3], 19)).unwrap();
    let x_view = xt.transpose(1, 2).unwrap();
    assert!(!x_view.is_contiguous());
    assert_eq!(
        has_grads(&loss(ln.forward(&x_view).unwrap()), &[&xt, &weight, &bias]),
        [true; 3]
    );
    assert_eq!(
        has_grads(&loss(rms.forward(&x_view).unwrap()), &[&xt, &weight]),
        [true; 2]
    );
    // rope: (batch, heads, seq, dim) with cos/sin (seq, dim / 2).
    let q = Var::from_tensor(&f32_noise(&[1, 2, 3, 8], 15)).unwrap();
    let (cos, sin) = (f32_noise(&[3, 4], 16), f32_noise(&[3, 4], 17));
    let gq = f32_noise(&[1, 2, 3, 8], 18);
    let fast = candle_nn::rotary_emb::rope(&q, &cos, &sin).unwrap();
    assert!(grad_of(&q, &fast, &gq).unwrap().is_none());
    let slow = candle_nn::rotary_emb::rope_slow(&q, &cos, &sin).unwrap();
    assert!(grad_of(&q, &slow, &gq).unwrap().is_some());
}

/// Not a claim of ours (a lost earlier measurement said all three fail in f64): in f64 the fused
/// LayerNorm and RmsNorm forwards fail, both with "unsupported dtype for rmsnorm F64" (LayerNorm
/// reuses RmsNorm's message); `softmax_last_dim` and `rope` run in f64 and equal their
/// differentiable twins. Measured: see the asserts.
#[test]
fn fused_candle_nn_ops_in_f64() {
    let dev = Device::Cpu;
    let x = noise(&[2, 3, 8], 20);
    let w = Tensor::ones(8, DType::F64, &dev).unwrap();
    let ln =
        candle_nn::LayerNorm::new(w.clone(), Tensor::zeros(8, DType::F64, &dev).unwrap(), 1e-5);
    let rms = candle_nn::RmsNorm::new(w, 1e-5);
    assert_eq!(
        forward_error(ln.forward(&x)),
        "unsupported dtype for rmsnorm F64"
    );
    assert_eq!(
        forward_error(rms.forward(&x)),
        "unsupported dtype for rmsnorm F64"
    );
    let fused = candle_nn::ops::softmax_last_dim(&x).unwrap();
    let composed = candle_nn::ops::softmax(&x, D::Minus1).unwrap();
    assert!(rel_err(&fused, &composed).unwrap() < 1e-12);
    let q = noise(&[1, 2, 3, 8], 21);
    let (cos, sin) = (noise(&[3, 4], 22), noise(&[3, 4], 23));
    let fused = candle_nn::rotary_emb::rope(&q, &cos, &sin).unwrap();
    let composed = candle_nn::rotary_emb::rope_slow(&q, &cos, &sin).unwrap();
    assert!(rel_err(&fused, &composed).unwrap() < 1e-12);
}

// ---------------------------------------------------------------------------------------------
// the ops candle_port.runtime and this crate are built from

/// Claim (candle-ops.md 2.1; the premise of candle_port.runtime and this crate): index_select,
/// gather, matmul / broadcast_matmul, narrow + cat and max_keepdim have full backwards.
/// Measured: confirmed against finite differences in f64 (relative error < 1e-8).
#[test]
fn runtime_building_blocks_differentiate() {
    let dev = Device::Cpu;
    let xt = noise(&[3, 4], 24);
    let idx = Tensor::new(&[2u32, 0, 2, 1], &dev).unwrap();
    let gidx = Tensor::new(&[[3u32, 0], [1, 1], [2, 3]], &dev).unwrap();
    let m = noise(&[2, 4, 5], 25);
    type Op<'a> = Box<dyn Fn(&Tensor) -> Result<Tensor> + 'a>;
    let ops: Vec<(&str, Op)> = vec![
        (
            "index_select",
            Box::new(|x: &Tensor| x.index_select(&idx, 0)),
        ),
        ("gather", Box::new(|x: &Tensor| x.gather(&gidx, 1))),
        (
            "broadcast_matmul",
            Box::new(|x: &Tensor| x.broadcast_matmul(&m)),
        ),
        ("matmul", Box::new(|x: &Tensor| x.matmul(&m.i(0)?))),
        (
            "narrow+cat",
            Box::new(|x: &Tensor| Tensor::cat(&[x.narrow(1, 1, 2)?, x.clone()], 1)),
        ),
        ("max_keepdim", Box::new(|x: &Tensor| x.max_keepdim(1))),
    ];
    for (name, f) in ops {
        let x = Var::from_tensor(&xt).unwrap();
        let y = f(x.as_tensor()).unwrap();
        let g = noise(y.dims(), 26);
        let grad = grad_of(&x, &y, &g).unwrap().expect(name);
        let want = numeric_grad(&xt, |x| (f(x)? * &g)?.sum_all()?.to_scalar::<f64>()).unwrap();
        let err = rel_err(&grad, &want).unwrap();
        assert!(err < 1e-8, "{name}: {err:e}");
    }
}

/// Claim (candle-ops.md 2.3, verify's scatter / scatter_add caveat): the gradient to the source
/// is right, the gradient to the destination (`init`) is wrong: `scatter` passes the whole
/// gradient to `init`, overwritten positions included (torch: 0 there); `scatter_add` zeroes it
/// at the scattered positions (torch: 1 everywhere). Measured: confirmed when the index has the
/// destination's shape; corrected for `scatter_add` with a smaller index (the usual case): its
/// backward fails outright with "shape mismatch in scatter (indexes, src), ...", because the
/// mask it builds has the destination's shape.
#[test]
fn scatter_destination_gradient() {
    let dev = Device::Cpu;
    let init = Var::from_tensor(&Tensor::new(&[[1f64, 2., 3., 4.]], &dev).unwrap()).unwrap();
    let full_idx = Tensor::new(&[[1u32, 1, 2, 0]], &dev).unwrap();
    let src = Var::from_tensor(&Tensor::new(&[[5f64, 6., 7., 8.]], &dev).unwrap()).unwrap();
    let y = init.scatter_add(&full_idx, &src, 1).unwrap();
    let grads = y.sum_all().unwrap().backward().unwrap();
    assert_eq!(
        values(grads.get(init.as_tensor()).unwrap()),
        [0.0, 0.0, 0.0, 1.0]
    );
    assert_eq!(values(grads.get(src.as_tensor()).unwrap()), [1.0; 4]);
    let y = init.scatter(&full_idx, &src, 1).unwrap();
    let grads = y.sum_all().unwrap().backward().unwrap();
    assert_eq!(values(grads.get(init.as_tensor()).unwrap()), [1.0; 4]);
    // As torch (2.14): every src element gets the gradient of the position it targets, even the
    // one of the two writing position 1 whose value is overwritten.
    assert_eq!(values(grads.get(src.as_tensor()).unwrap()), [1.0; 4]);
    let small_idx = Tensor::new(&[[1u32]], &dev).unwrap();
    let small_src = Var::from_tensor(&Tensor::new(&[[5f64]], &dev).unwrap()).unwrap();
    let y = init.scatter_add(&small_idx, &small_src, 1).unwrap();
    assert_eq!(
        first_line(&backward_error(&y)),
        "shape mismatch in scatter (indexes, src), lhs: [1, 1], rhs: [1, 4]"
    );
}

// ---------------------------------------------------------------------------------------------
// gradients at kinks

/// Claim (candle-ops.md 2.1 Unary Relu): candle's relu'(0) is 1 where torch's is 0. Measured:
/// confirmed against the `relu_kinks` vectors: equal to torch everywhere but at x == 0, where
/// candle passes the whole upstream gradient.
#[test]
fn relu_gradient_at_zero_is_one() {
    for case in cases("relu_kinks") {
        let x = case.input_var();
        let y = x.relu().unwrap();
        assert_close(&case, "forward", &y, case.tensor("output"));
        let grad = values(
            &grad_of(&x, &y, case.tensor("grad_output"))
                .unwrap()
                .unwrap(),
        );
        let (xs, g, torch) = (
            values(x.as_tensor()),
            values(case.tensor("grad_output")),
            values(case.tensor("grad_input")),
        );
        for i in 0..xs.len() {
            let want = if xs[i] == 0.0 { g[i] } else { torch[i] };
            assert_eq!(grad[i], want, "{} at x = {}", case.id, xs[i]);
            if xs[i] == 0.0 {
                assert_eq!(torch[i], 0.0);
            }
        }
    }
}

/// Claim (candle-ops.md 2.1 Maximum/Minimum; verify's clamp note "ties get 0.5 each"): candle's
/// clamp is `maximum(min).minimum(max)`, whose backward splits a tie 0.5/0.5, so an input exactly
/// at a bound gets half the upstream gradient. torch's clamp and hardtanh give it 0 there (torch
/// 2.14; `torch.maximum` does split ties 0.5/0.5, as candle). Measured against the
/// `hardtanh_kinks` vectors: confirmed, candle 0.5 g and torch 0 at both bounds, equal elsewhere.
#[test]
fn clamp_gradient_at_a_bound_is_half() {
    for case in cases("hardtanh_kinks") {
        let x = case.input_var();
        let y = x.clamp(-1.0, 1.0).unwrap();
        assert_close(&case, "forward", &y, case.tensor("output"));
        let grad = values(
            &grad_of(&x, &y, case.tensor("grad_output"))
                .unwrap()
                .unwrap(),
        );
        let (xs, g, torch) = (
            values(x.as_tensor()),
            values(case.tensor("grad_output")),
            values(case.tensor("grad_input")),
        );
        for i in 0..xs.len() {
            let at_bound = xs[i].abs() == 1.0;
            let want = if at_bound { 0.5 * g[i] } else { torch[i] };
            assert!(
                (grad[i] - want).abs() <= 1e-6 * g[i].abs(),
                "{} at x = {}",
                case.id,
                xs[i]
            );
            if at_bound {
                assert_eq!(torch[i], 0.0);
            }
        }
    }
}

/// Claim (none was made; found by `candle-port compare` on candle-transformers' MobileNetV4):
/// ReLU's derivative at exactly 0 is torch's, 0. Measured: **corrected**: candle's backward
/// passes the gradient where the input is exactly 0 (`x >= 0`), torch's does not (`x > 0`). A
/// ReLU after BatchNorm over an all-zero window (a depthwise conv on ReLU'd input, BatchNorm's
/// bias 0 at init) sends the BatchNorm bias a gradient torch's does not have.
#[test]
fn relu_passes_the_gradient_at_exactly_zero() -> Result<()> {
    let x = Var::from_tensor(&Tensor::new(&[-1.0f64, 0.0, 2.0], &Device::Cpu)?)?;
    let ones = Tensor::ones(3, DType::F64, &Device::Cpu)?;
    let g = grad_of(&x, &x.as_tensor().relu()?, &ones)?.expect("relu has a backward");
    assert_eq!(
        g.to_vec1::<f64>()?,
        [0.0, 1.0, 1.0],
        "torch gives [0, 0, 1]"
    );
    Ok(())
}

/// candle's `gelu_erf` backward writes 1/sqrt(2 pi) as 0.398942 (0.3989422804...), so the
/// `x * phi(x)` term of the derivative is 7e-7 off, relatively: at x = 1 the gradient is 1.7e-7
/// below the exact 1.0833154705876864 in f64 (f32 rounding is of the same size, so only f64
/// shows it). The forward is exact. This is the 1e-9 gradient gap `candle-port compare` showed
/// on SegFormer's GELUs in f64, after the MLPs' weights scale it down.
#[test]
fn gelu_erf_gradient_uses_a_six_digit_constant() -> Result<()> {
    let x = Var::from_tensor(&Tensor::new(&[1.0f64], &Device::Cpu)?)?;
    let ones = Tensor::ones(1, DType::F64, &Device::Cpu)?;
    let y = x.as_tensor().gelu_erf()?;
    // gelu(1) = 0.5 * (1 + erf(1 / sqrt 2)) = 0.8413447460685429
    let forward = y.to_vec1::<f64>()?[0];
    assert!(
        (forward - 0.841_344_746_068_542_9).abs() < 1e-15,
        "{forward}"
    );
    let g = grad_of(&x, &y, &ones)?.expect("gelu_erf has a backward");
    let exact = 1.083_315_470_587_686_4; // Phi(1) + phi(1)
    let off = exact - g.to_vec1::<f64>()?[0];
    let constant = (0.398_942_280_401_432_7 - 0.398_942) * (-0.5f64).exp();
    assert!(
        (off - constant).abs() < 1e-12,
        "off by {off:e}, the constant explains {constant:e}"
    );
    Ok(())
}

/// The tanh-approximated `gelu` backward has six-digit constants too (`0.797885` for
/// sqrt(2 / pi), `0.0356774`, `0.0535161`, `0.398942`), while its forward uses exact ones: in f64
/// the gradient at x = 1 is 1.6e-7 off the forward's own derivative (a central difference,
/// accurate to 1e-10 here).
#[test]
fn gelu_tanh_gradient_is_off_its_forward_by_its_constants() -> Result<()> {
    let at = |v: f64| -> Result<f64> {
        Tensor::new(&[v], &Device::Cpu)?
            .gelu()?
            .to_vec1::<f64>()
            .map(|y| y[0])
    };
    let h = 1e-5;
    let numeric = (at(1.0 + h)? - at(1.0 - h)?) / (2.0 * h);
    let x = Var::from_tensor(&Tensor::new(&[1.0f64], &Device::Cpu)?)?;
    let ones = Tensor::ones(1, DType::F64, &Device::Cpu)?;
    let g = grad_of(&x, &x.as_tensor().gelu()?, &ones)?.expect("gelu has a backward");
    let off = (g.to_vec1::<f64>()?[0] - numeric).abs();
    assert!(off > 1e-8 && off < 1e-6, "off by {off:e}");
    Ok(())
}
