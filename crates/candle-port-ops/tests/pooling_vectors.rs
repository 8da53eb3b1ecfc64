//! The pooling ops against torch's numbers (tests/vectors/pooling.*): output, indices and the
//! input gradient of `(out * grad_output).sum()`, for every case of the table, f32 and f64.

mod common;

use std::collections::BTreeMap;

use candle_core::{DType, Result, Tensor};
use candle_port_ops::kernels::composition_only;
use candle_port_ops::*;
use common::{assert_close, assert_input_gradient, ints, load_cases, Case};
use serde_json::Value;

/// The keyword arguments each op family reads; any other key fails the test (no silent skip).
const MAX_KEYS: &[&str] = &[
    "kernel_size",
    "stride",
    "padding",
    "dilation",
    "ceil_mode",
    "return_indices",
];
const AVG_KEYS: &[&str] = &[
    "kernel_size",
    "stride",
    "padding",
    "ceil_mode",
    "count_include_pad",
    "divisor_override",
];
const ADAPTIVE_KEYS: &[&str] = &["output_size", "return_indices"];

fn check_keys(case: &Case, allowed: &[&str]) {
    for key in case.params.as_object().expect("params object").keys() {
        assert!(
            allowed.contains(&key.as_str()),
            "{}: unhandled parameter {key}",
            case.id
        );
    }
}

fn flag(params: &Value, key: &str) -> Option<bool> {
    params.get(key).and_then(Value::as_bool)
}

/// The case's `Pool` (`nd` spatial dims).
fn pool_of(case: &Case, nd: usize) -> Pool {
    let p = &case.params;
    let get = |k: &str| ints(p.get(k).unwrap_or(&Value::Null), nd);
    let mut pool = Pool::new(&get("kernel_size").expect("kernel_size"));
    if let Some(s) = get("stride") {
        pool = pool.stride(&s);
    }
    if let Some(pad) = get("padding") {
        pool = pool.padding(&pad);
    }
    if let Some(d) = get("dilation") {
        pool = pool.dilation(&d);
    }
    if let Some(v) = flag(p, "ceil_mode") {
        pool = pool.ceil_mode(v);
    }
    if let Some(v) = flag(p, "count_include_pad") {
        pool = pool.count_include_pad(v);
    }
    if let Some(d) = p.get("divisor_override").and_then(Value::as_u64) {
        pool = pool.divisor_override(d as usize);
    }
    pool
}

fn output_size(case: &Case, nd: usize) -> Vec<usize> {
    ints(&case.params["output_size"], nd).expect("output_size")
}

type Pooled = (Tensor, Option<Tensor>);

/// Runs the case's op on `x`: (output, indices if the op returns them).
fn run(case: &Case, x: &Tensor) -> Result<Pooled> {
    let with = |r: (Tensor, Tensor)| (r.0, Some(r.1));
    let wants_indices = flag(&case.params, "return_indices").unwrap_or(false);
    Ok(match case.op.as_str() {
        "max_pool1d" | "max_pool2d" | "max_pool1d_with_indices" | "max_pool2d_with_indices" => {
            check_keys(case, MAX_KEYS);
            let nd = if case.op.starts_with("max_pool1d") {
                1
            } else {
                2
            };
            let pool = pool_of(case, nd);
            let indices = wants_indices || case.op.ends_with("_with_indices");
            match (nd, indices) {
                (1, true) => with(max_pool1d_with_indices(x, &pool)?),
                (1, false) => (max_pool1d(x, &pool)?, None),
                (_, true) => with(max_pool2d_with_indices(x, &pool)?),
                (_, false) => (max_pool2d(x, &pool)?, None),
            }
        }
        "avg_pool1d" => {
            check_keys(case, AVG_KEYS);
            (avg_pool1d(x, &pool_of(case, 1))?, None)
        }
        "avg_pool2d" => {
            check_keys(case, AVG_KEYS);
            (avg_pool2d(x, &pool_of(case, 2))?, None)
        }
        "adaptive_avg_pool1d" => {
            check_keys(case, ADAPTIVE_KEYS);
            (adaptive_avg_pool1d(x, output_size(case, 1)[0])?, None)
        }
        "adaptive_avg_pool2d" => {
            check_keys(case, ADAPTIVE_KEYS);
            let s = output_size(case, 2);
            (adaptive_avg_pool2d(x, (s[0], s[1]))?, None)
        }
        "adaptive_max_pool1d" | "adaptive_max_pool1d_with_indices" => {
            check_keys(case, ADAPTIVE_KEYS);
            let s = output_size(case, 1)[0];
            if wants_indices || case.op.ends_with("_with_indices") {
                with(adaptive_max_pool1d_with_indices(x, s)?)
            } else {
                (adaptive_max_pool1d(x, s)?, None)
            }
        }
        "adaptive_max_pool2d" | "adaptive_max_pool2d_with_indices" => {
            check_keys(case, ADAPTIVE_KEYS);
            let s = output_size(case, 2);
            if wants_indices || case.op.ends_with("_with_indices") {
                with(adaptive_max_pool2d_with_indices(x, (s[0], s[1]))?)
            } else {
                (adaptive_max_pool2d(x, (s[0], s[1]))?, None)
            }
        }
        other => panic!("{}: op {other} is not handled", case.id),
    })
}

/// Every case through whichever path the pools take here (`path` names it in the log).
fn check_every_pooling_case(path: &str) -> Result<()> {
    let cases = load_cases("pooling");
    assert!(!cases.is_empty(), "no pooling vectors");
    // (op, dtype) -> (worst forward, worst backward, cases)
    let mut worst: BTreeMap<(String, &str), (f64, f64, usize)> = BTreeMap::new();
    for case in &cases {
        let var = case.input_var();
        let (out, indices) = run(case, var.as_tensor())?;
        let fwd = assert_close(case, "output", &out, case.tensor("output"));
        match (indices, case.has("indices")) {
            (Some(i), true) => {
                let got = i.to_dtype(DType::I64)?.flatten_all()?.to_vec1::<i64>()?;
                let want = case.tensor("indices").flatten_all()?.to_vec1::<i64>()?;
                assert_eq!(got, want, "{}: indices differ", case.id);
            }
            (None, false) => {}
            (got, want) => panic!(
                "{}: indices returned {} but expected {want}",
                case.id,
                got.is_some()
            ),
        }
        let bwd = assert_input_gradient(case, &var, &out);
        let entry = worst
            .entry((case.op.clone(), case.dtype_name()))
            .or_insert((0.0, 0.0, 0));
        *entry = (entry.0.max(fwd), entry.1.max(bwd), entry.2 + 1);
    }
    let handled: usize = worst.values().map(|w| w.2).sum();
    assert_eq!(
        handled,
        cases.len(),
        "every case of pooling.json is checked"
    );
    eprintln!("{path}: pooling vs torch: worst relative error per op and dtype ({handled} cases)");
    for ((op, dtype), (fwd, bwd, n)) in &worst {
        eprintln!("  {op:34} {dtype}  forward {fwd:9.2e}  backward {bwd:9.2e}  ({n} cases)");
    }
    Ok(())
}

#[test]
fn pooling_matches_torch_forward_indices_and_backward() -> Result<()> {
    check_every_pooling_case("cpu kernels")
}

#[test]
fn pooling_matches_torch_through_the_composition() -> Result<()> {
    composition_only(|| check_every_pooling_case("composition"))
}
