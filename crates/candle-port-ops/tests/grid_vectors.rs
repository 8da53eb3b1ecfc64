//! grid_sample and affine_grid against torch's numbers (tests/vectors/grid.*): output and the
//! gradients w.r.t. input and grid (grid_sample) or theta (affine_grid), f32 and f64.

mod common;

use std::collections::BTreeMap;

use candle_core::{Result, Var};
use candle_port_ops::*;
use common::{assert_close, assert_gradients, ints, load_cases, Case};
use serde_json::Value;

fn options(case: &Case) -> GridSample {
    let p = case.params.as_object().expect("params");
    for key in p.keys() {
        assert!(
            ["mode", "padding_mode", "align_corners"].contains(&key.as_str()),
            "{}: unhandled parameter {key}",
            case.id
        );
    }
    let mode = match p.get("mode").and_then(Value::as_str) {
        None | Some("bilinear") => GridMode::Bilinear,
        Some("nearest") => GridMode::Nearest,
        Some("bicubic") => GridMode::Bicubic,
        Some(other) => panic!("{}: mode {other}", case.id),
    };
    let padding = match p.get("padding_mode").and_then(Value::as_str) {
        None | Some("zeros") => GridPadding::Zeros,
        Some("border") => GridPadding::Border,
        Some("reflection") => GridPadding::Reflection,
        Some(other) => panic!("{}: padding_mode {other}", case.id),
    };
    let align = p
        .get("align_corners")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    GridSample::new()
        .mode(mode)
        .padding_mode(padding)
        .align_corners(align)
}

#[test]
fn grid_matches_torch_forward_and_backward() -> Result<()> {
    let cases = load_cases("grid");
    assert!(!cases.is_empty(), "no grid vectors");
    let mut worst: BTreeMap<(String, &str), (f64, f64, usize)> = BTreeMap::new();
    for case in &cases {
        let x = case.input_var();
        let (label, fwd, bwd) = match case.op.as_str() {
            "grid_sample" => {
                let grid = Var::from_tensor(case.tensor("grid"))?;
                let o = options(case);
                let out = grid_sample(x.as_tensor(), grid.as_tensor(), &o)?;
                let fwd = assert_close(case, "output", &out, case.tensor("output"));
                let bwd = assert_gradients(case, &out, &[("input", &x), ("grid", &grid)]);
                (format!("grid_sample {:?}", o.mode).to_lowercase(), fwd, bwd)
            }
            "affine_grid" => {
                let size = ints(&case.params["size"], 4).expect("size");
                let align = case.params["align_corners"]
                    .as_bool()
                    .expect("align_corners");
                let out = affine_grid(x.as_tensor(), &size, align)?;
                let fwd = assert_close(case, "output", &out, case.tensor("output"));
                let bwd = assert_gradients(case, &out, &[("input", &x)]);
                ("affine_grid".to_string(), fwd, bwd)
            }
            other => panic!("{}: op {other} is not handled", case.id),
        };
        let entry = worst
            .entry((label, case.dtype_name()))
            .or_insert((0.0, 0.0, 0));
        *entry = (entry.0.max(fwd), entry.1.max(bwd), entry.2 + 1);
    }
    let handled: usize = worst.values().map(|w| w.2).sum();
    assert_eq!(handled, cases.len());
    eprintln!("grid vs torch: worst relative error per op and dtype ({handled} cases; backward = input and grid / theta)");
    for ((op, dtype), (fwd, bwd, n)) in &worst {
        eprintln!("  {op:24} {dtype}  forward {fwd:9.2e}  backward {bwd:9.2e}  ({n} cases)");
    }
    Ok(())
}
