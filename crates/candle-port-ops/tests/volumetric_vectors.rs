//! The 3-D ops against torch's numbers (tests/vectors/volumetric.*): conv3d and
//! conv_transpose3d (output, input / weight / bias gradients), max / avg / adaptive 3-D pools
//! (output, indices, input gradient), f32 and f64.

mod common;

use std::collections::BTreeMap;

use candle_core::{DType, Result, Tensor, Var};
use candle_port_ops::kernels::composition_only;
use candle_port_ops::*;
use common::{assert_close, assert_gradients, conv_of, ints, load_cases, operand_names, Case};
use serde_json::Value;

fn pool_of(case: &Case) -> Pool {
    let p = &case.params;
    for key in p.as_object().expect("params").keys() {
        assert!(
            [
                "kernel_size",
                "stride",
                "padding",
                "dilation",
                "ceil_mode",
                "return_indices",
                "count_include_pad",
                "divisor_override"
            ]
            .contains(&key.as_str()),
            "{}: unhandled parameter {key}",
            case.id
        );
    }
    let get = |k: &str| ints(p.get(k).unwrap_or(&Value::Null), 3);
    let mut pool = Pool::new(&get("kernel_size").expect("kernel_size"));
    if let Some(s) = get("stride") {
        pool = pool.stride(&s);
    }
    if let Some(v) = get("padding") {
        pool = pool.padding(&v);
    }
    if let Some(v) = get("dilation") {
        pool = pool.dilation(&v);
    }
    if let Some(v) = p.get("ceil_mode").and_then(Value::as_bool) {
        pool = pool.ceil_mode(v);
    }
    if let Some(v) = p.get("count_include_pad").and_then(Value::as_bool) {
        pool = pool.count_include_pad(v);
    }
    if let Some(d) = p.get("divisor_override").and_then(Value::as_u64) {
        pool = pool.divisor_override(d as usize);
    }
    pool
}

fn size3(case: &Case) -> (usize, usize, usize) {
    let s = ints(&case.params["output_size"], 3).expect("output_size");
    (s[0], s[1], s[2])
}

fn wants_indices(case: &Case) -> bool {
    case.params
        .get("return_indices")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Runs a pooling case: (output, indices if returned).
fn pool(case: &Case, x: &Tensor) -> Result<(Tensor, Option<Tensor>)> {
    let with = |r: (Tensor, Tensor)| (r.0, Some(r.1));
    Ok(match case.op.as_str() {
        "max_pool3d" if wants_indices(case) => with(max_pool3d_with_indices(x, &pool_of(case))?),
        "max_pool3d" => (max_pool3d(x, &pool_of(case))?, None),
        "avg_pool3d" => (avg_pool3d(x, &pool_of(case))?, None),
        "adaptive_avg_pool3d" => (adaptive_avg_pool3d(x, size3(case))?, None),
        "adaptive_max_pool3d" if wants_indices(case) => {
            with(adaptive_max_pool3d_with_indices(x, size3(case))?)
        }
        "adaptive_max_pool3d" => (adaptive_max_pool3d(x, size3(case))?, None),
        other => panic!("{}: op {other} is not handled", case.id),
    })
}

/// Every case through whichever path the ops take here (`path` names it in the log).
fn check_every_volumetric_case(path: &str) -> Result<()> {
    let cases = load_cases("volumetric");
    assert!(!cases.is_empty(), "no volumetric vectors");
    let mut worst: BTreeMap<(String, &str), (f64, f64, usize)> = BTreeMap::new();
    for case in &cases {
        let x = case.input_var();
        let (fwd, bwd) = if case.op.starts_with("conv") {
            let names = operand_names(case);
            let w = Var::from_tensor(case.tensor("weight"))?;
            let b = if names.iter().any(|n| n == "bias") {
                Some(Var::from_tensor(case.tensor("bias"))?)
            } else {
                None
            };
            let bt = b.as_ref().map(|b| b.as_tensor());
            let out = match case.op.as_str() {
                "conv3d" => conv3d(x.as_tensor(), w.as_tensor(), bt, &conv_of(case, 3))?,
                "conv_transpose3d" => {
                    conv_transpose3d(x.as_tensor(), w.as_tensor(), bt, &conv_of(case, 3))?
                }
                other => panic!("{}: op {other} is not handled", case.id),
            };
            let fwd = assert_close(case, "output", &out, case.tensor("output"));
            let mut vars = vec![("input", &x), ("weight", &w)];
            if let Some(b) = &b {
                vars.push(("bias", b));
            }
            (fwd, assert_gradients(case, &out, &vars))
        } else {
            let (out, indices) = pool(case, x.as_tensor())?;
            let fwd = assert_close(case, "output", &out, case.tensor("output"));
            match (indices, case.has("indices")) {
                (Some(i), true) => {
                    let got = i.to_dtype(DType::I64)?.flatten_all()?.to_vec1::<i64>()?;
                    let want = case.tensor("indices").flatten_all()?.to_vec1::<i64>()?;
                    assert_eq!(got, want, "{}: indices differ", case.id);
                }
                (None, false) => {}
                (got, want) => panic!("{}: indices {} vs {want}", case.id, got.is_some()),
            }
            (fwd, assert_gradients(case, &out, &[("input", &x)]))
        };
        let entry = worst
            .entry((case.op.clone(), case.dtype_name()))
            .or_insert((0.0, 0.0, 0));
        *entry = (entry.0.max(fwd), entry.1.max(bwd), entry.2 + 1);
    }
    let handled: usize = worst.values().map(|w| w.2).sum();
    assert_eq!(handled, cases.len());
    eprintln!(
        "{path}: volumetric vs torch: worst relative error per op and dtype ({handled} cases)"
    );
    for ((op, dtype), (fwd, bwd, n)) in &worst {
        eprintln!("  {op:20} {dtype}  forward {fwd:9.2e}  backward {bwd:9.2e}  ({n} cases)");
    }
    Ok(())
}

#[test]
fn volumetric_matches_torch_forward_indices_and_backward() -> Result<()> {
    check_every_volumetric_case("cpu kernels")
}

#[test]
fn volumetric_matches_torch_through_the_composition() -> Result<()> {
    composition_only(|| check_every_volumetric_case("composition"))
}
