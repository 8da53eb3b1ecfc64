//! `conv1d` against torch's numbers (tests/vectors/conv1d.*): output and the gradients of
//! `(out * grad_output).sum()` w.r.t. input, weight and bias, f32 and f64, at batch > 1 where
//! candle's own `Tensor::conv1d` trains the weight wrong.

mod common;

use std::collections::BTreeMap;

use candle_core::{Result, Tensor, Var};
use candle_port_ops::*;
use common::{assert_close, assert_gradients, conv_of, load_cases, load_family, operand_names};

#[test]
fn conv1d_matches_torch_forward_and_backward() -> Result<()> {
    let cases = load_cases("conv1d");
    assert!(!cases.is_empty(), "no conv1d vectors");
    let mut worst: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for case in &cases {
        assert_eq!(
            case.op, "conv1d",
            "{}: op {} is not handled",
            case.id, case.op
        );
        let x = case.input_var();
        let w = Var::from_tensor(case.tensor("weight"))?;
        let b = if operand_names(case).iter().any(|n| n == "bias") {
            Some(Var::from_tensor(case.tensor("bias"))?)
        } else {
            None
        };
        let out = conv1d(
            x.as_tensor(),
            w.as_tensor(),
            b.as_ref().map(|b| b.as_tensor()),
            &conv_of(case, 1),
        )?;
        let fwd = assert_close(case, "output", &out, case.tensor("output"));
        let mut vars = vec![("input", &x), ("weight", &w)];
        if let Some(b) = &b {
            vars.push(("bias", b));
        }
        let bwd = assert_gradients(case, &out, &vars);
        let entry = worst.entry(case.dtype_name()).or_insert((0.0, 0.0));
        *entry = (entry.0.max(fwd), entry.1.max(bwd));
    }
    eprintln!(
        "conv1d vs torch ({} cases): worst relative error",
        cases.len()
    );
    for (dtype, (fwd, bwd)) in &worst {
        eprintln!("  {dtype}  forward {fwd:9.2e}  backward {bwd:9.2e}");
    }
    Ok(())
}

#[test]
fn candles_own_conv1d_weight_gradient_is_wrong_where_ours_is_right() -> Result<()> {
    // The reason this op exists: the same case through Tensor::conv1d gets another weight
    // gradient (if this starts failing, candle fixed its conv1d: PR #3836).
    let case = load_family("conv1d")
        .into_iter()
        .find(|c| c.id == "c1d_basic.f64")
        .expect("c1d_basic.f64");
    let x = case.input_var();
    let w = Var::from_tensor(case.tensor("weight"))?;
    let y = x.as_tensor().conv1d(w.as_tensor(), 1, 1, 1, 1)?;
    let grads = (y * case.tensor("grad_output"))?.sum_all()?.backward()?;
    let theirs = grads.get(w.as_tensor()).expect("weight gradient");
    let torch: &Tensor = case.tensor("grad_weight");
    let off = (theirs - torch)?.abs()?.max_all()?.to_scalar::<f64>()?;
    let scale = torch.abs()?.max_all()?.to_scalar::<f64>()?;
    assert!(
        off / scale > 1e-3,
        "candle's conv1d weight gradient now equals torch's ({off:e} of {scale:e})"
    );
    Ok(())
}

#[test]
fn conv1d_errors() -> Result<()> {
    let dev = candle_core::Device::Cpu;
    let x = Tensor::zeros((1, 4, 5), candle_core::DType::F32, &dev)?;
    let w = Tensor::zeros((6, 2, 3), candle_core::DType::F32, &dev)?;
    // groups must divide the channels and match the weight.
    assert!(conv1d(&x, &w, None, &Conv::new().groups(3)).is_err());
    assert!(conv1d(&x, &w, None, &Conv::new()).is_err());
    // a kernel longer than the padded input.
    let long = Tensor::zeros((6, 2, 9), candle_core::DType::F32, &dev)?;
    assert!(conv1d(&x, &long, None, &Conv::new().groups(2)).is_err());
    // one entry per argument.
    assert!(conv1d(&x, &w, None, &Conv::new().groups(2).stride(&[1, 2])).is_err());
    Ok(())
}
