//! Every interpolate case of the shared vectors (torch 2.14's numbers): forward output and the
//! input gradient of `(out * grad_output).sum()` through candle's backward.

mod common;

use std::collections::BTreeMap;

use candle_core::{DType, Device, Tensor};
use candle_port_ops::kernels::composition_only;
use candle_port_ops::{interpolate, Interpolate, Mode, Target};
use common::{assert_close, assert_input_gradient, floats, ints, load_cases, Case};
use serde_json::Value;

/// The case's `F.interpolate` keyword arguments as an [`Interpolate`]; panics on any key or
/// value it does not know, so a new kind of case cannot pass unchecked.
fn options(case: &Case, spatial: usize) -> Interpolate {
    let params = case.params.as_object().expect("params object");
    for key in params.keys() {
        assert!(
            matches!(
                key.as_str(),
                "mode"
                    | "size"
                    | "scale_factor"
                    | "align_corners"
                    | "recompute_scale_factor"
                    | "antialias"
            ),
            "{}: unhandled parameter {key}",
            case.id
        );
    }
    let name = params["mode"].as_str().expect("mode");
    let mode = Mode::from_torch_name(name).unwrap_or_else(|| panic!("{}: mode {name}", case.id));
    let target = match (
        ints(params.get("size").unwrap_or(&Value::Null), 1),
        floats(params.get("scale_factor").unwrap_or(&Value::Null), 1),
    ) {
        (Some(size), None) => Target::Size(size),
        (None, Some(scale)) => Target::Scale(scale),
        other => panic!("{}: size / scale_factor {other:?}", case.id),
    };
    let entries = match &target {
        Target::Size(s) => s.len(),
        Target::Scale(s) => s.len(),
    };
    assert!(
        entries == 1 || entries == spatial,
        "{}: {target:?}",
        case.id
    );
    let flag = |key: &str| params.get(key).and_then(Value::as_bool);
    Interpolate {
        target,
        mode,
        align_corners: flag("align_corners"),
        recompute_scale_factor: flag("recompute_scale_factor"),
        antialias: flag("antialias").unwrap_or(false),
    }
}

/// Every case through whichever path `interpolate` takes here (`path` names it in the log).
fn check_every_interpolate_case(path: &str) {
    let cases = load_cases("interpolate");
    assert!(cases.len() >= 100, "only {} cases", cases.len());
    // (mode, dtype) -> (worst forward, worst backward, cases)
    let mut worst: BTreeMap<(String, &str), (f64, f64, usize)> = BTreeMap::new();
    for case in &cases {
        assert_eq!(case.op, "interpolate", "{}: op {}", case.id, case.op);
        let x = case.input_var();
        let opts = options(case, x.rank() - 2);
        let out = interpolate(x.as_tensor(), &opts).unwrap_or_else(|e| panic!("{}: {e}", case.id));
        let fwd = assert_close(case, "output", &out, case.tensor("output"));
        let bwd = assert_input_gradient(case, &x, &out);
        let key = (
            opts.mode.torch_name().to_string() + if opts.antialias { "+aa" } else { "" },
            case.dtype_name(),
        );
        let entry = worst.entry(key).or_insert((0.0, 0.0, 0));
        entry.0 = entry.0.max(fwd);
        entry.1 = entry.1.max(bwd);
        entry.2 += 1;
    }
    for ((mode, dtype), (fwd, bwd, n)) in &worst {
        eprintln!("{path}: {mode:>16} {dtype}: {n:>2} cases, worst relative error forward {fwd:.2e}, backward {bwd:.2e}");
    }
}

fn x(dims: &[usize]) -> Tensor {
    Tensor::zeros(dims, DType::F32, &Device::Cpu).expect("zeros")
}

fn error_of(dims: &[usize], opts: Interpolate) -> String {
    match interpolate(&x(dims), &opts) {
        Ok(t) => panic!(
            "{opts:?} on {dims:?} gave {:?}, expected an error",
            t.dims()
        ),
        Err(e) => e.to_string(),
    }
}

#[test]
fn align_corners_is_refused_for_nearest_nearest_exact_and_area() {
    for mode in [Mode::Nearest, Mode::NearestExact, Mode::Area] {
        for v in [false, true] {
            let msg = error_of(
                &[1, 1, 4, 4],
                Interpolate::scale(&[2.0], mode).align_corners(v),
            );
            assert!(
                msg.contains("align_corners option can only be set"),
                "{msg}"
            );
        }
    }
}

#[test]
fn a_mode_refuses_a_rank_it_does_not_take() {
    let msg = error_of(&[1, 1, 4, 4], Interpolate::scale(&[2.0], Mode::Linear));
    assert!(
        msg.contains("got 4D input, but linear mode needs 3D input"),
        "{msg}"
    );
    let msg = error_of(&[1, 1, 4], Interpolate::scale(&[2.0], Mode::Bilinear));
    assert!(msg.contains("bilinear mode needs 4D input"), "{msg}");
    let msg = error_of(&[1, 1, 4, 4], Interpolate::scale(&[2.0], Mode::Trilinear));
    assert!(msg.contains("trilinear mode needs 5D input"), "{msg}");
    let msg = error_of(&[1, 4], Interpolate::scale(&[2.0], Mode::Nearest));
    assert!(msg.contains("only 3D, 4D and 5D input"), "{msg}");
    let msg = error_of(&[1, 1, 2, 2, 2, 2], Interpolate::scale(&[2.0], Mode::Area));
    assert!(msg.contains("got 6D"), "{msg}");
}

#[test]
fn size_and_scale_need_one_entry_or_one_per_spatial_dim() {
    let msg = error_of(&[1, 1, 4, 4, 4], Interpolate::size(&[2, 3], Mode::Nearest));
    assert!(msg.contains("same number of spatial dimensions"), "{msg}");
    let msg = error_of(&[1, 1, 4, 4], Interpolate::scale(&[], Mode::Bilinear));
    assert!(msg.contains("same number of spatial dimensions"), "{msg}");
    let y = interpolate(
        &x(&[1, 1, 2, 3, 4]),
        &Interpolate::size(&[5], Mode::Trilinear),
    )
    .expect("broadcast size");
    assert_eq!(y.dims(), &[1, 1, 5, 5, 5]);
}

#[test]
fn recompute_scale_factor_with_a_size_is_refused() {
    let msg = error_of(
        &[1, 1, 4],
        Interpolate::size(&[8], Mode::Linear).recompute_scale_factor(true),
    );
    assert!(
        msg.contains("recompute_scale_factor is not meaningful with an explicit size"),
        "{msg}"
    );
}

#[test]
fn antialias_only_for_4d_bilinear_and_bicubic() {
    let msg = error_of(
        &[1, 1, 8],
        Interpolate::scale(&[0.5], Mode::Linear).antialias(true),
    );
    assert!(msg.contains("anti-alias option is restricted"), "{msg}");
    let msg = error_of(
        &[1, 1, 8, 8],
        Interpolate::scale(&[0.5], Mode::Nearest).antialias(true),
    );
    assert!(msg.contains("anti-alias option is restricted"), "{msg}");
}

#[test]
fn empty_outputs_and_bad_scales_are_refused() {
    let msg = error_of(&[1, 1, 3, 3], Interpolate::scale(&[0.2], Mode::Bilinear));
    assert!(msg.contains("should be greater than 0"), "{msg}");
    let msg = error_of(&[1, 1, 3, 3], Interpolate::size(&[0, 2], Mode::Nearest));
    assert!(msg.contains("should be greater than 0"), "{msg}");
    for bad in [-2.0, 0.0, f64::NAN, f64::INFINITY] {
        let msg = error_of(&[1, 1, 3], Interpolate::scale(&[bad], Mode::Linear));
        assert!(msg.contains("finite and positive"), "{msg}");
    }
}

#[test]
fn other_dtypes_are_refused() {
    let t = Tensor::zeros((1, 1, 4), DType::BF16, &Device::Cpu).expect("zeros");
    let err = interpolate(&t, &Interpolate::scale(&[2.0], Mode::Linear)).expect_err("bf16");
    assert!(err.to_string().contains("only f32 and f64"), "{err}");
}

#[test]
fn an_unchanged_size_returns_a_new_tensor_whose_gradient_is_the_upstream_one() {
    let v = candle_core::Var::from_tensor(
        &Tensor::arange(0f64, 6., &Device::Cpu)
            .and_then(|t| t.reshape((1, 1, 6)))
            .expect("ramp"),
    )
    .expect("var");
    let y = interpolate(v.as_tensor(), &Interpolate::size(&[6], Mode::Linear)).expect("same size");
    assert_ne!(y.id(), v.as_tensor().id());
    let g = Tensor::new(&[[[1f64, 2., 3., 4., 5., 6.]]], &Device::Cpu).expect("g");
    let grads = (&y * &g)
        .and_then(|p| p.sum_all())
        .and_then(|l| l.backward())
        .expect("backward");
    let gi = grads
        .get(v.as_tensor())
        .expect("grad")
        .flatten_all()
        .and_then(|t| t.to_vec1::<f64>())
        .expect("vec");
    assert_eq!(gi, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
}

#[test]
fn a_non_contiguous_input_gives_the_contiguous_result() {
    let base = Tensor::arange(0f32, 2. * 3. * 40. * 300., &Device::Cpu)
        .and_then(|t| t.reshape((2, 3, 300, 40)))
        .expect("ramp");
    let strided = base.transpose(2, 3).expect("transpose"); // (2, 3, 40, 300), not contiguous
    let packed = strided.contiguous().expect("contiguous");
    for opts in [
        Interpolate::size(&[97, 50], Mode::Bilinear),
        Interpolate::size(&[300, 7], Mode::Bilinear),
        Interpolate::scale(&[1.5], Mode::Bicubic),
        Interpolate::scale(&[0.5], Mode::Bicubic).antialias(true),
        Interpolate::size(&[13, 50], Mode::Nearest),
        Interpolate::size(&[13, 50], Mode::Area),
    ] {
        let a = interpolate(&strided, &opts).expect("strided");
        let b = interpolate(&packed, &opts).expect("packed");
        let diff = (a - b)
            .and_then(|d| d.abs())
            .and_then(|d| d.max_keepdim(0))
            .and_then(|d| d.flatten_all())
            .and_then(|d| d.max(0))
            .and_then(|d| d.to_scalar::<f32>())
            .expect("diff");
        assert_eq!(diff, 0.0, "{opts:?}");
    }
}

#[test]
fn every_interpolate_case_matches_torch_forward_and_backward() {
    check_every_interpolate_case("cpu kernels");
}

#[test]
fn every_interpolate_case_matches_torch_through_the_composition() {
    composition_only(|| check_every_interpolate_case("composition"));
}
