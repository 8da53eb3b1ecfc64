//! `norm` against torch's numbers (tests/vectors/norm.*): `F.layer_norm` and `F.rms_norm`, output
//! and the gradients of `(out * grad_output).sum()` w.r.t. input, weight and bias, f32 and f64,
//! non-finite inputs included; and what candle-nn 0.11.0's own layers and `*_slow` functions do
//! on the same cases.

mod common;

use std::collections::BTreeMap;

use candle_core::{DType, Device, Module, Result, Tensor, Var};
use candle_nn::{LayerNormConfig, VarBuilder, VarMap};
use candle_port_ops::norm::{self, LayerNorm, RmsNorm};
use common::{assert_close, assert_gradients, load_family, operand_names, rel_err, Case};

fn eps(case: &Case) -> f64 {
    case.params["eps"].as_f64().expect("eps")
}

fn has_bias(case: &Case) -> bool {
    operand_names(case).iter().any(|n| n == "bias")
}

/// The case's input, weight and (if any) bias as `Var`s.
fn vars(case: &Case) -> Result<(Var, Var, Option<Var>)> {
    let bias = if has_bias(case) {
        Some(Var::from_tensor(case.tensor("bias"))?)
    } else {
        None
    };
    Ok((
        case.input_var(),
        Var::from_tensor(case.tensor("weight"))?,
        bias,
    ))
}

/// Assert output and every gradient equal torch's; returns the worst (forward, backward) error.
fn check(case: &Case, out: &Tensor, x: &Var, w: &Var, b: Option<&Var>) -> (f64, f64) {
    let fwd = assert_close(case, "output", out, case.tensor("output"));
    let mut grads = vec![("input", x), ("weight", w)];
    if let Some(b) = b {
        grads.push(("bias", b));
    }
    (fwd, assert_gradients(case, out, &grads))
}

#[test]
fn norm_layers_and_functions_match_torch_forward_and_backward() -> Result<()> {
    let cases = load_family("norm");
    assert!(!cases.is_empty(), "no norm vectors");
    let mut worst: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for case in &cases {
        // each case twice: the functional form and the Module
        for module in [false, true] {
            let (x, w, b) = vars(case)?;
            let (wt, bt) = (
                w.as_tensor().clone(),
                b.as_ref().map(|b| b.as_tensor().clone()),
            );
            let out = match (case.op.as_str(), module, &bt) {
                ("layer_norm", false, Some(bt)) => norm::ops::layer_norm(&x, &wt, bt, eps(case))?,
                ("layer_norm", _, Some(bt)) => {
                    LayerNorm::new(wt, bt.clone(), eps(case)).forward(&x)?
                }
                ("layer_norm", _, None) => LayerNorm::new_no_bias(wt, eps(case)).forward(&x)?,
                ("rms_norm", false, _) => norm::ops::rms_norm(&x, &wt, eps(case))?,
                ("rms_norm", true, _) => RmsNorm::new(wt, eps(case)).forward(&x)?,
                (op, ..) => panic!("{}: op {op} is not handled", case.id),
            };
            let (fwd, bwd) = check(case, &out, &x, &w, b.as_ref());
            let entry = worst.entry(case.dtype_name()).or_insert((0.0, 0.0));
            *entry = (entry.0.max(fwd), entry.1.max(bwd));
        }
    }
    eprintln!(
        "norm vs torch ({} cases): worst relative error",
        cases.len()
    );
    for (dtype, (fwd, bwd)) in &worst {
        eprintln!("  {dtype}  forward {fwd:9.2e}  backward {bwd:9.2e}");
    }
    Ok(())
}

/// The case's input through `build(vb)` (a layer made from a `VarMap`, whose weight and bias are
/// then set to the case's): checks the output and the gradients of every variable in the map.
fn check_built<M: Module>(case: &Case, build: impl Fn(VarBuilder) -> Result<M>) -> Result<()> {
    let mut map = VarMap::new();
    let layer = build(VarBuilder::from_varmap(&map, case.dtype, &Device::Cpu))?;
    map.set_one("weight", case.tensor("weight"))?;
    if has_bias(case) {
        map.set_one("bias", case.tensor("bias"))?;
    }
    let x = case.input_var();
    let out = layer.forward(&x)?;
    assert_close(case, "output", &out, case.tensor("output"));
    let data = map.data().lock().expect("var map");
    let mut grads: Vec<(&str, &Var)> = vec![("input", &x)];
    for (name, var) in data.iter() {
        grads.push((name.as_str(), var));
    }
    assert_eq!(
        grads.len(),
        if has_bias(case) { 3 } else { 2 },
        "{}",
        case.id
    );
    assert_gradients(case, &out, &grads);
    Ok(())
}

#[test]
fn var_builder_constructors_take_candle_nns_arguments() -> Result<()> {
    let cases = load_family("norm");
    let find = |id: &str| cases.iter().find(|c| c.id == id).expect("case");
    // `layer_norm(size, eps, vb)` with a bare f64, as BERT's `layer_norm(768, 1e-12, vb)`.
    check_built(find("ln_bert_eps.f64"), |vb| {
        norm::layer_norm(16, 1e-12, vb)
    })?;
    check_built(find("ln_tokens.f32"), |vb| {
        norm::layer_norm(8, LayerNormConfig::from(1e-5), vb)
    })?;
    // `affine: false` drops the bias only (candle-nn's meaning), as layer_norm_no_bias.
    let no_bias = LayerNormConfig {
        eps: 1e-5,
        remove_mean: true,
        affine: false,
    };
    check_built(find("ln_no_bias.f64"), |vb| {
        norm::layer_norm(8, no_bias, vb)
    })?;
    check_built(find("ln_no_bias.f32"), |vb| {
        norm::layer_norm_no_bias(8, 1e-5, vb)
    })?;
    check_built(find("rms_tokens.f64"), |vb| norm::rms_norm(8, 1e-6, vb))?;
    Ok(())
}

#[test]
fn candle_nns_layer_norm_leaves_the_weight_without_gradient_ours_gives_torchs() -> Result<()> {
    let case = load_family("norm")
        .into_iter()
        .find(|c| c.id == "ln_tokens.f32")
        .expect("ln_tokens.f32");
    let (x, w, b) = vars(&case)?;
    let b = b.expect("bias");
    let theirs =
        candle_nn::LayerNorm::new(w.as_tensor().clone(), b.as_tensor().clone(), eps(&case));
    let out = theirs.forward(&x)?;
    // the forward is torch's, but backward() finds no path to any of the three
    assert_close(&case, "output", &out, case.tensor("output"));
    let grads = (out * case.tensor("grad_output"))?.sum_all()?.backward()?;
    assert!(grads.get(&w).is_none() && grads.get(&b).is_none() && grads.get(&x).is_none());
    let ours = LayerNorm::new(w.as_tensor().clone(), b.as_tensor().clone(), eps(&case));
    let out = ours.forward(&x)?;
    let grads = (out * case.tensor("grad_output"))?.sum_all()?.backward()?;
    let grad_w = grads.get(&w).expect("our weight gradient");
    assert_close(&case, "grad_weight", grad_w, case.tensor("grad_weight"));
    // candle-nn's RmsNorm likewise
    let rms = load_family("norm")
        .into_iter()
        .find(|c| c.id == "rms_tokens.f32")
        .expect("rms_tokens.f32");
    let (x, w, _) = vars(&rms)?;
    let out = candle_nn::RmsNorm::new(w.as_tensor().clone(), eps(&rms)).forward(&x)?;
    let grads = (out * rms.tensor("grad_output"))?.sum_all()?.backward()?;
    assert!(grads.get(&w).is_none() && grads.get(&x).is_none());
    Ok(())
}

/// candle-nn's `layer_norm_slow` / `rms_norm_slow` (what a fix could call instead of the fused
/// ops): the worst error against torch over every case of a dtype, forward and backward.
fn slow_errors(dtype: DType) -> Result<(f64, f64, Vec<String>)> {
    let (mut fwd, mut bwd, mut off) = (0f64, 0f64, Vec::new());
    for case in load_family("norm").iter().filter(|c| c.dtype == dtype) {
        let (x, w, b) = vars(case)?;
        let e = eps(case) as f32;
        let out = match &b {
            Some(b) => candle_nn::ops::layer_norm_slow(&x, &w, b, e)?,
            None if case.op == "rms_norm" => candle_nn::ops::rms_norm_slow(&x, &w, e)?,
            None => continue, // no bias-less slow layer norm in candle-nn
        };
        let grads = (&out * case.tensor("grad_output"))?.sum_all()?.backward()?;
        let mut errs = vec![rel_err(&out, case.tensor("output"))];
        let mut pairs = vec![("input", &x), ("weight", &w)];
        if let Some(b) = &b {
            pairs.push(("bias", b));
        }
        for (name, var) in pairs {
            let g = grads.get(var).expect("slow functions differentiate");
            errs.push(rel_err(g, case.tensor(&format!("grad_{name}"))));
        }
        for (i, err) in errs.into_iter().enumerate() {
            let err = err.unwrap_or_else(|m| panic!("{}: {m}", case.id));
            if err > case.tol() {
                off.push(format!("{} ({err:.1e})", case.id));
            }
            if i == 0 {
                fwd = fwd.max(err);
            } else {
                bwd = bwd.max(err);
            }
        }
    }
    Ok((fwd, bwd, off))
}

#[test]
fn candle_nns_slow_functions_differentiate_but_round_eps_to_f32() -> Result<()> {
    let (fwd, bwd, off) = slow_errors(DType::F32)?;
    eprintln!("candle-nn *_slow vs torch, f32: forward {fwd:9.2e}  backward {bwd:9.2e}");
    assert!(off.is_empty(), "f32 cases off torch: {off:?}");
    let (fwd, bwd, off) = slow_errors(DType::F64)?;
    eprintln!(
        "candle-nn *_slow vs torch, f64: forward {fwd:9.2e}  backward {bwd:9.2e}; off: {off:?}"
    );
    // eps = 1e-5 as f32 is 9.99999974738e-6: rows whose variance is near eps move by ~1e-8
    assert!(
        off.iter()
            .any(|c| c.starts_with("ln_near_eps_variance.f64")),
        "{off:?}"
    );
    assert!(
        off.iter().any(|c| c.starts_with("rms_near_eps.f64")),
        "{off:?}"
    );
    Ok(())
}

#[test]
fn norm_errors_name_the_shapes() -> Result<()> {
    let dev = Device::Cpu;
    let x = Tensor::zeros((2, 8), DType::F32, &dev)?;
    let w = Tensor::ones(7, DType::F32, &dev)?;
    let err = norm::ops::rms_norm(&x, &w, 1e-6).expect_err("weight of the wrong length");
    assert!(
        err.to_string().contains("[2, 8]") && err.to_string().contains("[7]"),
        "{err}"
    );
    let w = Tensor::ones(8, DType::F32, &dev)?;
    let b = Tensor::zeros(9, DType::F32, &dev)?;
    assert!(norm::ops::layer_norm(&x, &w, &b, 1e-5).is_err());
    assert!(LayerNorm::new(w.clone(), b, 1e-5).forward(&x).is_err());
    // f64 works (candle-nn's fused layers fail with "unsupported dtype for rmsnorm F64")
    let x64 = Tensor::ones((2, 8), DType::F64, &dev)?;
    let w64 = Tensor::ones(8, DType::F64, &dev)?;
    assert!(RmsNorm::new(w64, 1e-6).forward(&x64).is_ok());
    // half precision: statistics in f32, the result in the input's dtype
    let xh = Tensor::new(&[[1f32, 2., 3., 4.]], &dev)?.to_dtype(DType::BF16)?;
    let wh = Tensor::ones(4, DType::BF16, &dev)?;
    let y = LayerNorm::new(wh.clone(), wh.zeros_like()?, 1e-5).forward(&xh)?;
    assert_eq!(y.dtype(), DType::BF16);
    Ok(())
}
