//! The transposed convolutions against torch's numbers (tests/vectors/transposed_conv.*): output
//! and the gradients of `(out * grad_output).sum()` w.r.t. input, weight and bias, f32 and f64.

mod common;

use std::collections::BTreeMap;

use candle_core::{Result, Tensor, Var};
use candle_port_ops::*;
use common::{assert_close, assert_gradients, conv_of, load_cases, operand_names, Case};

fn run(case: &Case, x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
    match case.op.as_str() {
        "conv_transpose1d" => conv_transpose1d(x, w, b, &conv_of(case, 1)),
        "conv_transpose2d" => conv_transpose2d(x, w, b, &conv_of(case, 2)),
        other => panic!("{}: op {other} is not handled", case.id),
    }
}

#[test]
fn transposed_conv_matches_torch_forward_and_backward() -> Result<()> {
    let cases = load_cases("transposed_conv");
    assert!(!cases.is_empty(), "no transposed_conv vectors");
    let mut worst: BTreeMap<(String, &str), (f64, f64, usize)> = BTreeMap::new();
    for case in &cases {
        let names = operand_names(case);
        let x = case.input_var();
        let w = Var::from_tensor(case.tensor("weight"))?;
        let b = if names.iter().any(|n| n == "bias") {
            Some(Var::from_tensor(case.tensor("bias"))?)
        } else {
            None
        };
        let out = run(
            case,
            x.as_tensor(),
            w.as_tensor(),
            b.as_ref().map(|b| b.as_tensor()),
        )?;
        let fwd = assert_close(case, "output", &out, case.tensor("output"));
        let mut vars = vec![("input", &x), ("weight", &w)];
        if let Some(b) = &b {
            vars.push(("bias", b));
        }
        let bwd = assert_gradients(case, &out, &vars);
        let entry = worst
            .entry((case.op.clone(), case.dtype_name()))
            .or_insert((0.0, 0.0, 0));
        *entry = (entry.0.max(fwd), entry.1.max(bwd), entry.2 + 1);
    }
    let handled: usize = worst.values().map(|w| w.2).sum();
    assert_eq!(handled, cases.len());
    eprintln!("transposed_conv vs torch: worst relative error per op and dtype ({handled} cases; backward = input, weight, bias)");
    for ((op, dtype), (fwd, bwd, n)) in &worst {
        eprintln!("  {op:20} {dtype}  forward {fwd:9.2e}  backward {bwd:9.2e}  ({n} cases)");
    }
    Ok(())
}

#[test]
fn transposed_conv_errors_as_torch() -> Result<()> {
    let dev = candle_core::Device::Cpu;
    let x = Tensor::zeros((1, 4, 5), candle_core::DType::F32, &dev)?;
    let w = Tensor::zeros((4, 2, 3), candle_core::DType::F32, &dev)?;
    // output_padding must be smaller than the stride or the dilation.
    let e = conv_transpose1d(&x, &w, None, &Conv::new().stride(&[2]).output_padding(&[2]));
    assert!(e.is_err_and(|e| e.to_string().contains("output padding must be smaller")));
    // groups must divide the input channels.
    assert!(conv_transpose1d(&x, &w, None, &Conv::new().groups(3)).is_err());
    // a bias of the wrong length.
    let b = Tensor::zeros(3, candle_core::DType::F32, &dev)?;
    assert!(conv_transpose1d(&x, &w, Some(&b), &Conv::new()).is_err());
    Ok(())
}
