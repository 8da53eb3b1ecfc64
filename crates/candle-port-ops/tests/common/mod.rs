//! Shared-vector loading and comparison for the integration tests.
//!
//! The vectors are written by `scripts/vectors/make_vectors.py` (torch's numbers); the Python
//! runtime is checked against the same files (`tests/runtime/test_vectors.py`).
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;

use candle_core::{DType, Device, Tensor, Var};
use serde_json::Value;

/// Relative error bounds (max |a - b| / max |b|), the same as the Python side's `REL_TOL`.
pub const REL_TOL_F32: f64 = 1e-5;
pub const REL_TOL_F64: f64 = 1e-10;

/// One case of a family: the op name, its `torch.nn.functional` keyword arguments and tensors.
pub struct Case {
    pub id: String,
    pub op: String,
    pub dtype: DType,
    pub params: Value,
    pub tensors: HashMap<String, Tensor>,
    /// The case's entry in the table, as written (its `operands`, if any).
    pub entry: Value,
}

impl Case {
    pub fn tensor(&self, name: &str) -> &Tensor {
        self.tensors
            .get(name)
            .unwrap_or_else(|| panic!("{}: no tensor {name}", self.id))
    }

    pub fn has(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    pub fn tol(&self) -> f64 {
        match self.dtype {
            DType::F64 => REL_TOL_F64,
            _ => REL_TOL_F32,
        }
    }

    /// `f32` or `f64`, for tables of worst errors.
    pub fn dtype_name(&self) -> &'static str {
        match self.dtype {
            DType::F64 => "f64",
            _ => "f32",
        }
    }

    /// The input as a `Var`, so that the op's graph is recorded.
    pub fn input_var(&self) -> Var {
        Var::from_tensor(self.tensor("input")).expect("input var")
    }
}

pub fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("vectors")
}

/// The families whose runners take the `nonfinite` table's cases (its `family` key).
pub const NONFINITE_FAMILIES: &[&str] = &[
    "interpolate",
    "pooling",
    "grid",
    "transposed_conv",
    "volumetric",
    "conv1d",
];

/// Every case of `family` and the `nonfinite` table's cases for it (NaN and +-inf inputs), so
/// one runner holds the family's ops to both.
pub fn load_cases(family: &str) -> Vec<Case> {
    assert!(
        NONFINITE_FAMILIES.contains(&family),
        "{family}: not a family"
    );
    let mut cases = load_family(family);
    let nonfinite = load_table("nonfinite", |entry| {
        let of = entry["family"]
            .as_str()
            .expect("nonfinite case without family");
        assert!(NONFINITE_FAMILIES.contains(&of), "nonfinite: family {of}");
        of == family
    });
    assert!(!nonfinite.is_empty(), "{family}: no nonfinite cases");
    cases.extend(nonfinite);
    cases
}

/// Every case of `family` (`interpolate`, `pooling`, ...), in file order.
pub fn load_family(family: &str) -> Vec<Case> {
    load_table(family, |_| true)
}

/// The cases of the table `name` whose entry `keep` accepts, in file order.
fn load_table(name: &str, keep: impl Fn(&Value) -> bool) -> Vec<Case> {
    let family = name;
    let dir = vectors_dir();
    let table: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(format!("{family}.json"))).expect("read vectors json"),
    )
    .expect("parse vectors json");
    assert_eq!(table["format"], "candle-port-vectors");
    assert_eq!(table["version"], 1);
    let mut all =
        candle_core::safetensors::load(dir.join(format!("{family}.safetensors")), &Device::Cpu)
            .expect("load vectors safetensors");
    let cases = table["cases"].as_array().expect("cases");
    cases
        .iter()
        .filter(|case| keep(case))
        .map(|case| {
            let id = case["id"].as_str().expect("id").to_string();
            let names = case["tensors"].as_array().expect("tensor names");
            let tensors = names
                .iter()
                .map(|n| {
                    let n = n.as_str().expect("tensor name");
                    let t = all.remove(&format!("{id}.{n}")).expect("tensor in file");
                    (n.to_string(), t)
                })
                .collect();
            let dtype = match case["dtype"].as_str() {
                Some("float32") => DType::F32,
                Some("float64") => DType::F64,
                other => panic!("{id}: dtype {other:?}"),
            };
            Case {
                op: case["op"].as_str().expect("op").to_string(),
                params: case["params"].clone(),
                entry: case.clone(),
                id,
                dtype,
                tensors,
            }
        })
        .collect()
}

/// max |actual - expected| / max |expected| over finite entries; NaN and inf must coincide
/// (`Err` describes the first mismatch).
pub fn rel_err(actual: &Tensor, expected: &Tensor) -> Result<f64, String> {
    if actual.dims() != expected.dims() {
        return Err(format!(
            "shape {:?} != expected {:?}",
            actual.dims(),
            expected.dims()
        ));
    }
    let a: Vec<f64> = to_f64_vec(actual);
    let e: Vec<f64> = to_f64_vec(expected);
    let mut scale = f64::MIN_POSITIVE;
    for v in e.iter().filter(|v| v.is_finite()) {
        scale = scale.max(v.abs());
    }
    let mut worst = 0f64;
    for (i, (x, y)) in a.iter().zip(e.iter()).enumerate() {
        if y.is_nan() || x.is_nan() {
            if !(y.is_nan() && x.is_nan()) {
                return Err(format!("index {i}: got {x}, expected {y}"));
            }
        } else if y.is_infinite() || x.is_infinite() {
            if x != y {
                return Err(format!("index {i}: got {x}, expected {y}"));
            }
        } else {
            worst = worst.max((x - y).abs() / scale);
        }
    }
    Ok(worst)
}

fn to_f64_vec(t: &Tensor) -> Vec<f64> {
    t.to_dtype(DType::F64)
        .and_then(|t| t.flatten_all())
        .and_then(|t| t.to_vec1::<f64>())
        .expect("tensor to f64 vec")
}

/// Assert `actual` is within the case's bound of `expected`; returns the error for reporting.
pub fn assert_close(case: &Case, what: &str, actual: &Tensor, expected: &Tensor) -> f64 {
    match rel_err(actual, expected) {
        Ok(err) => {
            assert!(
                err <= case.tol(),
                "{} {what}: relative error {err:e} > {:e}",
                case.id,
                case.tol()
            );
            err
        }
        Err(msg) => panic!("{} {what}: {msg}", case.id),
    }
}

/// Parameter as a list of `n` usizes (torch accepts an int or a tuple).
pub fn ints(v: &Value, n: usize) -> Option<Vec<usize>> {
    match v {
        Value::Null => None,
        Value::Number(x) => Some(vec![x.as_u64().expect("int") as usize; n]),
        Value::Array(xs) => Some(
            xs.iter()
                .map(|x| x.as_u64().expect("int") as usize)
                .collect(),
        ),
        other => panic!("not an int or list: {other}"),
    }
}

/// Parameter as a list of `n` f64s (a scale factor: a number or a list).
pub fn floats(v: &Value, n: usize) -> Option<Vec<f64>> {
    match v {
        Value::Null => None,
        Value::Number(x) => Some(vec![x.as_f64().expect("float"); n]),
        Value::Array(xs) => Some(xs.iter().map(|x| x.as_f64().expect("float")).collect()),
        other => panic!("not a number or list: {other}"),
    }
}

/// d/dx of `sum(y * g)`, or `None` when candle's graph has no path from `x` (a cut).
pub fn grad_of(x: &Var, y: &Tensor, g: &Tensor) -> candle_core::Result<Option<Tensor>> {
    let grads = (y * g)?.sum_all()?.backward()?;
    Ok(grads.get(x.as_tensor()).cloned())
}

/// Assert that the input gradient of `sum(out * grad_output)` is torch's `grad_input` within the
/// case's bound (panics when the backward fails or never reaches `x`); returns the error.
pub fn assert_input_gradient(case: &Case, x: &Var, out: &Tensor) -> f64 {
    let grad = grad_of(x, out, case.tensor("grad_output"))
        .unwrap_or_else(|e| panic!("{}: backward: {e}", case.id))
        .unwrap_or_else(|| panic!("{}: no gradient reached the input", case.id));
    assert_close(case, "grad_input", &grad, case.tensor("grad_input"))
}

/// The operands of a case (`weight`, `bias`, `grid`, ...), in the table's order.
pub fn operand_names(case: &Case) -> Vec<String> {
    case.entry["operands"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().expect("operand name").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Assert the gradients of `sum(out * grad_output)` w.r.t. every `(name, var)` equal torch's
/// (`grad_input` for `input`, else `grad_<name>`); a var the graph never reaches must have an
/// all-zero torch gradient (torch's nearest grid_sample). Returns the worst error.
pub fn assert_gradients(case: &Case, out: &Tensor, vars: &[(&str, &Var)]) -> f64 {
    let grads = (out * case.tensor("grad_output"))
        .and_then(|t| t.sum_all())
        .and_then(|t| t.backward())
        .unwrap_or_else(|e| panic!("{}: backward: {e}", case.id));
    let mut worst = 0f64;
    for (name, var) in vars {
        let key = format!("grad_{name}");
        if *name != "input" && !case.has(&key) && case.entry["operand_grads"] == false {
            continue; // a non-finite case stores no operand gradient (cases_nonfinite.py)
        }
        let expected = case.tensor(&key);
        let got = match grads.get(var.as_tensor()) {
            Some(g) => g.clone(),
            None => expected.zeros_like().expect("zeros"),
        };
        worst = worst.max(assert_close(case, &key, &got, expected));
    }
    worst
}

const CONV_KEYS: &[&str] = &["stride", "padding", "output_padding", "groups", "dilation"];

/// The case's `Conv` for an `nd`-dimensional convolution (torch's keyword arguments; any other
/// key fails the test): the transposed and 3-D convolution vectors share it.
pub fn conv_of(case: &Case, nd: usize) -> candle_port_ops::Conv {
    let p = case.params.as_object().expect("params object");
    for key in p.keys() {
        assert!(
            CONV_KEYS.contains(&key.as_str()),
            "{}: unhandled parameter {key}",
            case.id
        );
    }
    let get = |k: &str| ints(p.get(k).unwrap_or(&Value::Null), nd);
    let mut c = candle_port_ops::Conv::new();
    if let Some(s) = get("stride") {
        c = c.stride(&s);
    }
    if let Some(v) = get("padding") {
        c = c.padding(&v);
    }
    if let Some(v) = get("output_padding") {
        c = c.output_padding(&v);
    }
    if let Some(v) = get("dilation") {
        c = c.dilation(&v);
    }
    if let Some(g) = p.get("groups").and_then(Value::as_u64) {
        c = c.groups(g as usize);
    }
    c
}
