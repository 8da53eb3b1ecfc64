//! Measures what candle itself does with each ATen op, so that verify's op table
//! (`candle_port/verify/candle_ops.json`) is generated from test results instead of read from
//! candle's source (`scripts/gen_optable.py` turns these records into the table).
//!
//! A probe runs the candle op (or the composition of candle ops) a straightforward port uses for
//! one ATen op, in float64 on the CPU, with every float input a `Var`, and records one verdict:
//!
//! - `backward`: the forward runs, `backward()` returns a gradient for every input, and each
//!   gradient equals the central finite difference of candle's own forward (or, at a kink, the
//!   gradient torch defines there);
//! - `forward-only`: the forward runs, `backward()` fails (candle's message is the evidence);
//! - `no-op`: the forward itself fails (candle's message);
//! - `silent-cut`: `backward()` returns, but an input that the output depends on gets no gradient;
//! - `wrong-gradient`: a gradient differs from the finite difference (or torch's value);
//! - `no-gradient`: the output is not differentiable (integer, boolean, random or constant), and
//!   candle's forward runs.
//!
//! Ops candle has no function for at all are not probed here (there is nothing to call): the
//! generator checks candle's source for their absence instead.

use candle_core::{DType, Device, Result, Tensor, Var};
use serde::Serialize;
use serde_json::{json, Value as Json};

use crate::ops::activation::{self, SELU_ALPHA, SELU_SCALE};
use crate::ops::loss::{self, Reduction};
use crate::ops::{elementwise, index, linalg, reduce, rnn, shape, sort};

/// One measured verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    /// ATen op (overload packet, e.g. `max_pool2d`).
    pub op: String,
    /// Probe name: what was run.
    pub probe: String,
    /// `verdict` (decides the op's class), `caveat` (a candle op a port may reach for instead,
    /// or a context that breaks it or that the op's condition does not see) or `note` (a kink
    /// where candle's gradient differs from torch's).
    pub role: String,
    /// For a conditional op: the name of its condition in `conditions.py`.
    pub condition: Option<String>,
    /// The arguments of this case, as `conditions.py` reads them.
    pub case: Json,
    /// `backward`, `forward-only`, `no-op`, `silent-cut`, `wrong-gradient`, `no-gradient`.
    pub verdict: String,
    /// candle's message, or the worst relative gradient error against finite differences.
    pub evidence: String,
}

type Forward = dyn Fn(&[Tensor]) -> Result<Tensor>;
type Ops = &'static [&'static str];
type Unary = fn(&Tensor) -> Result<Tensor>;
type Binary = fn(&Tensor, &Tensor) -> Result<Tensor>;

struct Probe {
    ops: Vec<&'static str>,
    probe: &'static str,
    role: &'static str,
    condition: Option<&'static str>,
    case: Json,
    inputs: Vec<Input>,
    no_grad: bool,
    expected: Option<Vec<f64>>,
    f: Box<Forward>,
}

#[derive(Clone)]
enum Input {
    /// Values spread over [-2, 2], distinct.
    Any(Vec<usize>),
    /// Values in [0.5, 2.5].
    Pos(Vec<usize>),
    /// Values in (0.1, 0.9).
    Unit(Vec<usize>),
    /// Given values.
    Given(Vec<usize>, Vec<f64>),
}

/// Distinct, deterministic, tie-free values (a golden-ratio sequence).
fn spread(n: usize, lo: f64, hi: f64, salt: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let u = ((i + 1 + 7 * salt) as f64 * 0.618_033_988_749_895).fract();
            lo + (hi - lo) * (0.02 + 0.96 * u)
        })
        .collect()
}

fn make(input: &Input, salt: usize) -> Result<Tensor> {
    let (shape, values) = match input {
        Input::Any(s) => (s, spread(s.iter().product(), -2.0, 2.0, salt)),
        Input::Pos(s) => (s, spread(s.iter().product(), 0.5, 2.5, salt)),
        Input::Unit(s) => (s, spread(s.iter().product(), 0.1, 0.9, salt)),
        Input::Given(s, v) => (s, v.clone()),
    };
    Tensor::from_vec(values, shape.as_slice(), &Device::Cpu)
}

fn loss(out: &Tensor, weights: &Tensor) -> Result<Tensor> {
    out.mul(weights)?.sum_all()
}

fn scalar(t: &Tensor) -> Result<f64> {
    t.to_dtype(DType::F64)?.to_vec0::<f64>()
}

fn flat(t: &Tensor) -> Result<Vec<f64>> {
    t.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()
}

fn measure(p: &Probe) -> Vec<Record> {
    let (verdict, evidence) = match outcome(p) {
        Ok(v) => v,
        Err(e) => ("no-op".to_string(), crate::report::first_line(&e)),
    };
    p.ops
        .iter()
        .map(|op| Record {
            op: (*op).into(),
            probe: p.probe.into(),
            role: p.role.into(),
            condition: condition_for(op, p.condition),
            case: case_for(op, &p.case),
            verdict: verdict.clone(),
            evidence: evidence.clone(),
        })
        .collect()
}

/// The convolution probes measure several ATen spellings at once; each has its own condition
/// in `conditions.py` (`conv2d`, ...), and the generic `convolution` reads `transposed`.
fn condition_for(op: &str, given: Option<&str>) -> Option<String> {
    let given = given?;
    Some(match op {
        "conv1d" | "conv2d" | "conv_transpose2d" => op.into(),
        "convolution" | "_convolution" => "convolution".into(),
        _ => given.into(),
    })
}

fn case_for(op: &str, case: &Json) -> Json {
    let mut case = case.clone();
    if let (Some(obj), "convolution" | "_convolution") = (case.as_object_mut(), op) {
        let transposed = obj
            .get("__op__")
            .and_then(Json::as_str)
            .is_some_and(|o| o.starts_with("conv_transpose"));
        obj.insert("transposed".into(), Json::Bool(transposed));
    }
    case
}

fn outcome(p: &Probe) -> Result<(String, String)> {
    let base: Vec<Tensor> = p
        .inputs
        .iter()
        .enumerate()
        .map(|(i, inp)| make(inp, i))
        .collect::<Result<_>>()?;
    let vars: Vec<Var> = base.iter().map(Var::from_tensor).collect::<Result<_>>()?;
    let xs: Vec<Tensor> = vars.iter().map(|v| v.as_tensor().clone()).collect();
    let out = (p.f)(&xs)?;
    if !out.dtype().is_float() {
        return Ok((
            "no-gradient".into(),
            format!("forward ok, {:?} output", out.dtype()),
        ));
    }
    if p.no_grad {
        // torch's gradient through these is zero (or none): candle must not invent one.
        let weights = out.ones_like()?;
        return match loss(&out, &weights)?.backward() {
            Err(e) => Ok(("forward-only".into(), crate::report::first_line(&e))),
            Ok(grads) => {
                for x in &xs {
                    if let Some(g) = grads.get(x) {
                        if flat(g)?.iter().any(|v| *v != 0.0) {
                            return Ok((
                                "wrong-gradient".into(),
                                "a non-zero gradient where torch's is zero".into(),
                            ));
                        }
                    }
                }
                Ok((
                    "no-gradient".into(),
                    "forward ok; backward() runs and gives no (or a zero) gradient, as torch"
                        .into(),
                ))
            }
        };
    }
    let n = out.elem_count();
    let weights = Tensor::from_vec(spread(n, 0.5, 1.5, 99), out.shape(), &Device::Cpu)?
        .to_dtype(out.dtype())?;
    let grads = match loss(&out, &weights)?.backward() {
        Ok(g) => g,
        Err(e) => return Ok(("forward-only".into(), crate::report::first_line(&e))),
    };
    let h = 1e-6;
    let mut worst: f64 = 0.0;
    for (i, x) in xs.iter().enumerate() {
        let numeric = match &p.expected {
            Some(e) if i == 0 => e.clone(),
            _ => {
                let values = flat(&base[i])?;
                let mut numeric = Vec::with_capacity(values.len());
                for j in 0..values.len() {
                    let eval = |delta: f64| -> Result<f64> {
                        let mut v = values.clone();
                        v[j] += delta;
                        let mut ins = base.clone();
                        ins[i] = Tensor::from_vec(v, base[i].shape(), &Device::Cpu)?;
                        scalar(&loss(&(p.f)(&ins)?, &weights)?)
                    };
                    numeric.push((eval(h)? - eval(-h)?) / (2.0 * h));
                }
                numeric
            }
        };
        let scale = numeric.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let Some(g) = grads.get(x) else {
            if scale > 0.0 {
                return Ok((
                    "silent-cut".into(),
                    format!("backward() returned no gradient for input {i}"),
                ));
            }
            continue;
        };
        let got = flat(g)?;
        let diff = got
            .iter()
            .zip(&numeric)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        worst = worst.max(diff / scale.max(1e-12));
    }
    let against = if p.expected.is_some() {
        "torch's gradient"
    } else {
        "finite differences"
    };
    if worst > 1e-6 {
        return Ok((
            "wrong-gradient".into(),
            format!("gradient {worst:.1e} (relative) off {against}"),
        ));
    }
    Ok((
        "backward".into(),
        format!("gradient within {worst:.0e} of {against}"),
    ))
}

fn probe(ops: &[&'static str], name: &'static str, inputs: Vec<Input>, f: Box<Forward>) -> Probe {
    Probe {
        ops: ops.to_vec(),
        probe: name,
        role: "verdict",
        condition: None,
        case: Json::Null,
        inputs,
        no_grad: false,
        expected: None,
        f,
    }
}

impl Probe {
    fn caveat(mut self) -> Self {
        self.role = "caveat";
        self
    }
    /// A gradient at a single point (a kink) that differs from torch's convention: a note,
    /// since it matters only on a set of measure zero.
    fn kink(mut self) -> Self {
        self.role = "note";
        self
    }
    fn when(mut self, condition: &'static str, case: Json) -> Self {
        self.condition = Some(condition);
        self.case = case;
        self
    }
    fn no_grad(mut self) -> Self {
        self.no_grad = true;
        self
    }
    fn expect(mut self, grad: Vec<f64>) -> Self {
        self.expected = Some(grad);
        self
    }
}

fn any(s: &[usize]) -> Input {
    Input::Any(s.to_vec())
}
fn pos(s: &[usize]) -> Input {
    Input::Pos(s.to_vec())
}
fn unit(s: &[usize]) -> Input {
    Input::Unit(s.to_vec())
}

fn ids(v: &[u32], shape: &[usize]) -> Result<Tensor> {
    Tensor::from_vec(v.to_vec(), shape, &Device::Cpu)
}

fn sigmoid(x: &Tensor) -> Result<Tensor> {
    candle_nn::ops::sigmoid(x)
}
/// torch's default softplus (beta 1, threshold 20), as the runner maps it.
fn softplus(x: &Tensor) -> Result<Tensor> {
    activation::softplus(x, 1.0, 20.0)
}
fn softmax(x: &Tensor, d: usize) -> Result<Tensor> {
    candle_nn::ops::softmax(x, d)
}
fn mask(shape: &[usize]) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let v: Vec<u8> = (0..n).map(|i| u8::from(i % 3 != 1)).collect();
    Tensor::from_vec(v, shape, &Device::Cpu)
}
fn normalize(x: &Tensor, dims: &[usize]) -> Result<Tensor> {
    let mut mean = x.clone();
    for &d in dims {
        mean = mean.mean_keepdim(d)?;
    }
    let c = x.broadcast_sub(&mean)?;
    let mut var = c.sqr()?;
    for &d in dims {
        var = var.mean_keepdim(d)?;
    }
    c.broadcast_div(&var.affine(1.0, 1e-5)?.sqrt()?)
}
fn sdpa(x: &[Tensor]) -> Result<Tensor> {
    let s = x[0].matmul(&x[1].t()?)?.affine(0.5, 0.0)?;
    softmax(&s, 2)?.matmul(&x[2])
}

/// candle_nn's LSTM over a (2, 3, 3) batch-major input, hidden size 2, from the given `(h0, c0)`:
/// the output, `h_n` and `c_n`, flattened into one tensor.
fn lstm(x: &[Tensor], reverse: bool) -> Result<Tensor> {
    let (out, h, c) = rnn::lstm_layer(
        &x[0],
        &x[1],
        &x[2],
        Some(&x[3]),
        Some(&x[4]),
        &x[5],
        &x[6],
        reverse,
    )?;
    Tensor::cat(&[out.flatten_all()?, h.flatten_all()?, c.flatten_all()?], 0)
}
fn lstm_inputs() -> Vec<Input> {
    vec![
        any(&[2, 3, 3]),
        any(&[8, 3]),
        any(&[8, 2]),
        any(&[8]),
        any(&[8]),
        any(&[2, 2]),
        any(&[2, 2]),
    ]
}

/// Every probe, in a fixed order.
fn probes() -> Vec<Probe> {
    let s23 = [2usize, 3];
    let s234 = [2usize, 3, 4];
    let unary: Vec<(Ops, &'static str, Unary, bool)> = vec![
        (&["abs"], "abs", |x| x.abs(), false),
        (&["neg"], "neg", |x| x.neg(), false),
        (&["exp"], "exp", |x| x.exp(), false),
        (&["expm1"], "exp(x) - 1", elementwise::expm1, false),
        (&["log"], "log", |x| x.log(), true),
        (&["log1p"], "log(x + 1)", elementwise::log1p, true),
        (
            &["log2"],
            "log(x) / ln 2",
            |x| x.log()?.affine(1.0 / std::f64::consts::LN_2, 0.0),
            true,
        ),
        (&["sqrt"], "sqrt", |x| x.sqrt(), true),
        (&["rsqrt"], "sqrt(x).recip()", |x| x.sqrt()?.recip(), true),
        (&["reciprocal"], "recip", |x| x.recip(), true),
        (&["square"], "sqr", |x| x.sqr(), false),
        (&["sin"], "sin", |x| x.sin(), false),
        (&["cos"], "cos", |x| x.cos(), false),
        (&["tanh"], "tanh", |x| x.tanh(), false),
        (&["erf"], "erf", |x| x.erf(), false),
        (&["sigmoid"], "candle_nn::ops::sigmoid", sigmoid, false),
        (&["silu"], "silu", |x| x.silu(), false),
        (
            &["gelu"],
            "0.5 x (1 + erf(x / sqrt 2))",
            |x| {
                x.affine(std::f64::consts::FRAC_1_SQRT_2, 0.0)?
                    .erf()?
                    .affine(0.5, 0.5)?
                    .mul(x)
            },
            false,
        ),
        (&["relu"], "relu", |x| x.relu(), false),
        (
            &["relu6"],
            "clamp(x, 0, 6)",
            |x| x.affine(3.0, 0.0)?.clamp(0.0, 6.0),
            false,
        ),
        (
            &["hardtanh"],
            "clamp(x, -1, 1)",
            |x| x.clamp(-1.0, 1.0),
            false,
        ),
        (&["clamp"], "clamp(x, -1, 1)", |x| x.clamp(-1.0, 1.0), false),
        (&["clamp_min"], "maximum(x, -1)", |x| x.maximum(-1.0), false),
        (&["clamp_max"], "minimum(x, 1)", |x| x.minimum(1.0), false),
        (
            &["hardsigmoid"],
            "clamp(x / 6 + 0.5, 0, 1)",
            |x| x.affine(2.0, 0.0)?.affine(1.0 / 6.0, 0.5)?.clamp(0.0, 1.0),
            false,
        ),
        (
            &["hardswish"],
            "x * clamp(x / 6 + 0.5, 0, 1)",
            |x| {
                let y = x.affine(2.0, 0.0)?;
                y.mul(&y.affine(1.0 / 6.0, 0.5)?.clamp(0.0, 1.0)?)
            },
            false,
        ),
        (
            &["leaky_relu"],
            "relu(x) - 0.1 relu(-x)",
            |x| x.relu()?.sub(&x.neg()?.relu()?.affine(0.1, 0.0)?),
            false,
        ),
        (
            &["elu"],
            "Tensor::elu",
            |x| activation::elu(x, 1.0, 1.0, 1.0),
            false,
        ),
        (
            &["elu"],
            "scale * Tensor::elu(x, alpha) (selu's arguments)",
            |x| activation::elu(x, SELU_ALPHA, SELU_SCALE, 1.0),
            false,
        ),
        (
            &["elu"],
            "max(0, x) + a (exp(x s) - 1) on min(0, x) (input scale s = 0.5)",
            |x| activation::elu(x, 2.0, 1.0, 0.5),
            false,
        ),
        (
            &["celu"],
            "elu with input scale 1 / a (a = 2)",
            |x| activation::celu(x, 2.0),
            false,
        ),
        (
            &["selu"],
            "scale * Tensor::elu(x, alpha)",
            |x| activation::elu(x, SELU_ALPHA, SELU_SCALE, 1.0),
            false,
        ),
        (
            &["softplus"],
            "where(x > 20, x, log(1 + exp(x)))",
            softplus,
            false,
        ),
        (
            &["softplus"],
            "where(b x > t, x, log(1 + exp(b x)) / b), b 2, t 1",
            |x| activation::softplus(x, 2.0, 1.0),
            false,
        ),
        (&["mish"], "candle_nn::ops::mish", activation::mish, false),
        (
            &["logsigmoid", "log_sigmoid", "log_sigmoid_forward"],
            "-softplus(-x)",
            activation::log_sigmoid,
            false,
        ),
        (
            &["hardshrink"],
            "x * (|x| > 0.5)",
            |x| activation::hardshrink(x, 0.5),
            false,
        ),
        (&["pow"], "powf(2.5)", |x| x.powf(2.5), true),
        (
            &[
                "clone",
                "contiguous",
                "alias",
                "copy",
                "_copy_from",
                "lift_fresh_copy",
            ],
            "copy",
            |x| x.copy(),
            false,
        ),
        (
            &["_to_copy", "to", "type_as"],
            "to_dtype",
            |x| x.to_dtype(DType::F64),
            false,
        ),
        (
            &[
                "view",
                "reshape",
                "_reshape_alias",
                "_unsafe_view",
                "flatten",
                "unflatten",
                "reshape_as",
                "view_as",
            ],
            "reshape",
            |x| x.reshape((3, 2)),
            false,
        ),
        (
            &["permute", "transpose", "t", "swapaxes", "movedim"],
            "transpose / permute",
            |x| x.t()?.contiguous(),
            false,
        ),
        (
            &["expand", "expand_as", "broadcast_to"],
            "broadcast_as",
            |x| x.unsqueeze(0)?.broadcast_as((4, 2, 3)),
            false,
        ),
        (
            &["squeeze", "unsqueeze"],
            "unsqueeze / squeeze",
            |x| x.unsqueeze(1)?.squeeze(1),
            false,
        ),
        (
            &[
                "split",
                "split_with_sizes",
                "chunk",
                "unsafe_split",
                "tensor_split",
                "narrow",
                "slice",
            ],
            "narrow / chunk",
            |x| x.chunk(3, 1)?[1].clone().add(&x.narrow(1, 2, 1)?),
            false,
        ),
        (
            &["select", "unbind"],
            "get_on_dim",
            |x| x.get_on_dim(0, 1),
            false,
        ),
        (&["repeat", "tile"], "repeat", |x| x.repeat((2, 1)), false),
        (&["flip"], "flip", |x| shape::flip(x, &[1]), false),
        (&["roll"], "roll", |x| shape::roll(x, &[1], &[1]), false),
        (
            &["roll"],
            "roll of the flattened tensor (no dims)",
            |x| shape::roll(x, &[2], &[]),
            false,
        ),
        (&["cumsum"], "cumsum", |x| reduce::cumsum(x, 1), false),
        (
            &["sort"],
            "gather at arg_sort_last_dim",
            |x| Ok(sort::sort(x, 1, false)?.0),
            false,
        ),
        (
            &["sort"],
            "gather at arg_sort_last_dim, dim 0 moved last, descending",
            |x| Ok(sort::sort(x, 0, true)?.0),
            false,
        ),
        (
            &["topk"],
            "gather at arg_sort_last_dim(desc) + narrow",
            |x| Ok(sort::topk(x, 2, 1, true)?.0),
            false,
        ),
        (
            &["pad", "constant_pad_nd"],
            "pad_with_zeros",
            |x| x.pad_with_zeros(1, 1, 2),
            false,
        ),
        (
            &["replication_pad1d", "replication_pad2d"],
            "pad_with_same",
            |x| x.pad_with_same(1, 2, 1),
            false,
        ),
        (
            &["reflection_pad1d", "reflection_pad2d"],
            "narrow + flip + cat",
            |x| Tensor::cat(&[&x.narrow(1, 1, 1)?, x, &x.narrow(1, 1, 1)?], 1),
            false,
        ),
        (
            &["_weight_norm", "_weight_norm_interface"],
            "g * v / ||v|| (the norm over every dim but 0)",
            |x| {
                let norm = x.sqr()?.sum_keepdim(1)?.sqrt()?;
                x.broadcast_mul(&x.narrow(1, 0, 1)?.broadcast_div(&norm)?)
            },
            false,
        ),
        (
            &["glu"],
            "a * sigmoid(b)",
            |x| x.narrow(0, 0, 1)?.mul(&sigmoid(&x.narrow(0, 1, 1)?)?),
            false,
        ),
        (
            &["frac"],
            "x - sign(x) floor(|x|)",
            elementwise::frac,
            false,
        ),
        (
            &[
                "dropout",
                "native_dropout",
                "feature_dropout",
                "alpha_dropout",
            ],
            "x * mask / (1 - p), mask drawn once",
            |x| x.broadcast_mul(&mask(&[2, 3])?.to_dtype(DType::F64)?.affine(2.0, 0.0)?),
            false,
        ),
        (&["sum"], "sum_keepdim", |x| x.sum_keepdim(1), false),
        (&["mean"], "mean_keepdim", |x| x.mean_keepdim(1), false),
        (&["amax"], "max_keepdim", |x| x.max_keepdim(1), false),
        (&["amin"], "min_keepdim", |x| x.min_keepdim(1), false),
        (
            &["max"],
            "gather at argmax_keepdim",
            |x| Ok(reduce::max_dim(x, 1, true, true)?.0),
            false,
        ),
        (
            &["min"],
            "gather at argmin_keepdim",
            |x| Ok(reduce::max_dim(x, 1, true, false)?.0),
            false,
        ),
        (
            &["prod"],
            "products of the halves, log2(n) levels",
            |x| reduce::prod(x, 1),
            false,
        ),
        (
            &["var", "var_mean"],
            "sum((x - mean)^2) / (n - 1)",
            |x| reduce::var(x, &[1], 1.0),
            false,
        ),
        (
            &["std", "std_mean"],
            "sqrt(sum((x - mean)^2) / (n - 1))",
            |x| reduce::var(x, &[1], 1.0)?.sqrt(),
            false,
        ),
        (
            &["logsumexp"],
            "log_sum_exp",
            |x| reduce::logsumexp(x, &[1], true),
            false,
        ),
        (
            &["norm", "frobenius_norm", "linalg_vector_norm"],
            "sqrt(sum(x^2))",
            |x| x.sqr()?.sum_all()?.sqrt(),
            false,
        ),
        (
            &["_softmax", "softmax", "_safe_softmax"],
            "candle_nn::ops::softmax",
            |x| softmax(x, 1),
            false,
        ),
        (
            &["_log_softmax", "log_softmax"],
            "candle_nn::ops::log_softmax",
            |x| candle_nn::ops::log_softmax(x, 1),
            false,
        ),
    ];
    let mut all: Vec<Probe> = unary
        .into_iter()
        .map(|(ops, name, f, positive)| {
            let input = if positive { pos(&s23) } else { any(&s23) };
            probe(
                ops,
                name,
                vec![input],
                Box::new(move |x: &[Tensor]| f(&x[0])),
            )
        })
        .collect();

    let binary: Vec<(Ops, &'static str, Binary)> = vec![
        (&["add"], "broadcast_add", |a, b| a.broadcast_add(b)),
        (&["sub"], "broadcast_sub", |a, b| a.broadcast_sub(b)),
        (&["rsub"], "b - a", |a, b| b.sub(a)),
        (&["mul"], "broadcast_mul", |a, b| a.broadcast_mul(b)),
        (&["div"], "broadcast_div", |a, b| {
            a.broadcast_div(&b.affine(1.0, 3.0)?)
        }),
        (&["maximum"], "maximum", |a, b| a.maximum(b)),
        (
            &["logaddexp"],
            "m + log(exp(a - m) + exp(b - m)), m = max(a, b)",
            elementwise::logaddexp,
        ),
        (&["minimum"], "minimum", |a, b| a.minimum(b)),
        (&["where", "masked_fill"], "where_cond", |a, b| {
            mask(&[2, 3])?.where_cond(a, b)
        }),
        (&["lerp"], "a + 0.3 (b - a)", |a, b| {
            a.add(&b.sub(a)?.affine(0.3, 0.0)?)
        }),
        (&["xlogy"], "where(a == 0, 0, a log(b))", |a, b| {
            elementwise::xlogy(a, &b.affine(1.0, 3.0)?)
        }),
        (&["remainder"], "a - floor(a / b) b", |a, b| {
            elementwise::remainder(a, &b.affine(0.25, 1.0)?)
        }),
        (&["fmod"], "a - trunc(a / b) b", |a, b| {
            elementwise::fmod(a, &b.affine(0.25, 1.0)?)
        }),
        (&["mse_loss"], "mean((a - b)^2)", |a, b| {
            loss::mse_loss(a, b, Reduction::Mean)
        }),
        (&["l1_loss"], "mean|a - b|", |a, b| {
            a.sub(b)?.abs()?.mean_all()
        }),
        (
            &["smooth_l1_loss"],
            "where(|d| < 1, d^2 / 2, |d| - 1/2)",
            |a, b| {
                loss::smooth_l1_loss(
                    &a.affine(3.0, 0.0)?,
                    &b.affine(3.0, 0.0)?,
                    Reduction::Mean,
                    1.0,
                )
            },
        ),
        (&["stack"], "stack", |a, b| Tensor::stack(&[a, b], 0)),
        (
            &["cat", "concat", "concatenate", "hstack", "vstack"],
            "cat",
            |a, b| Tensor::cat(&[a, b], 1),
        ),
        (&["dot"], "dot", |a, b| {
            a.flatten_all()?.dot(&b.flatten_all()?)
        }),
        (&["outer"], "broadcast_mul of a column and a row", |a, b| {
            a.flatten_all()?
                .unsqueeze(1)?
                .broadcast_mul(&b.flatten_all()?.unsqueeze(0)?)
        }),
        (
            &["_prelu_kernel", "prelu"],
            "relu(x) - w relu(-x)",
            |a, b| a.relu()?.sub(&a.neg()?.relu()?.mul(b)?),
        ),
    ];
    all.extend(binary.into_iter().map(|(ops, name, f)| {
        probe(
            ops,
            name,
            vec![any(&s23), any(&s23)],
            Box::new(move |x: &[Tensor]| f(&x[0], &x[1])),
        )
    }));
    all.extend([
        probe(&["addcmul"], "a + 0.5 b c", vec![any(&s23), any(&s23), any(&s23)], Box::new(|x| {
            x[0].add(&x[1].mul(&x[2])?.affine(0.5, 0.0)?)
        })),
        probe(&["addcdiv"], "a + 0.5 b / c", vec![any(&s23), any(&s23), pos(&s23)], Box::new(|x| {
            x[0].add(&x[1].div(&x[2])?.affine(0.5, 0.0)?)
        })),
        probe(&["meshgrid"], "meshgrid (reshape + repeat), both grids", vec![any(&[3]), any(&[4])], Box::new(|x| {
            let grids = Tensor::meshgrid(&[&x[0], &x[1]], false)?;
            grids[0].add(&grids[1].affine(2.0, 0.0)?)
        })),
        probe(&["mm", "matmul", "einsum"], "matmul", vec![any(&[3, 4]), any(&[4, 2])], Box::new(|x| x[0].matmul(&x[1]))),
        probe(&["bmm"], "batched matmul", vec![any(&s234), any(&[2, 4, 2])], Box::new(|x| x[0].matmul(&x[1]))),
        probe(&["matmul"], "broadcast_matmul (batched lhs, 2-D rhs)", vec![any(&s234), any(&[4, 2])], Box::new(|x| {
            x[0].broadcast_matmul(&x[1])
        })).caveat(),
        probe(&["addmm", "linear"], "x matmul w^T + b", vec![any(&[3, 4]), any(&[2, 4]), any(&[2])], Box::new(|x| {
            x[0].matmul(&x[1].t()?)?.broadcast_add(&x[2])
        })),
        probe(&["baddbmm"], "c + a matmul b", vec![any(&[2, 3, 2]), any(&s234), any(&[2, 4, 2])], Box::new(|x| {
            x[0].add(&x[1].matmul(&x[2])?)
        })),
        probe(&["cdist", "_cdist_forward", "_euclidean_dist"], "sqrt(sum((a_i - b_j)^2)) (p = 2)",
              vec![any(&[2, 3, 2]), any(&[2, 4, 2])], Box::new(|x| linalg::cdist(&x[0], &x[1], 2.0))),
        probe(&["cdist", "_cdist_forward"], "sum |a_i - b_j| (p = 1)",
              vec![any(&[3, 2]), any(&[4, 2])], Box::new(|x| linalg::cdist(&x[0], &x[1], 1.0))),
        probe(&["mv"], "mv", vec![any(&[3, 4]), any(&[4])], Box::new(|x| linalg::mv(&x[0], &x[1]))),
        probe(&["addmv"], "0.5 c + 2 mv(a, b)", vec![any(&[3, 4]), any(&[4]), any(&[3])],
              Box::new(|x| linalg::addmv(&x[2], &x[0], &x[1], 0.5, 2.0))),
        probe(&["index_select", "index", "embedding"], "index_select", vec![any(&[4, 3])], Box::new(|x| {
            x[0].index_select(&ids(&[3, 0, 0, 2], &[4])?, 0)
        })),
        probe(&["gather", "take_along_dim"], "gather", vec![any(&s23)], Box::new(|x| {
            x[0].gather(&ids(&[2, 0, 0, 1, 1, 2], &[2, 3])?, 1)
        })),
        probe(&["index_add"], "index_add", vec![any(&[4, 3]), any(&s23)], Box::new(|x| {
            index::index_add(&x[0], 0, &ids(&[3, 1], &[2])?, &x[1], 2.0)
        })),
        probe(&["select_scatter", "slice_scatter"], "slice_scatter", vec![any(&[2, 4]), any(&[2, 2])], Box::new(|x| {
            x[0].slice_scatter(&x[1], 1, 1)
        })),
        probe(&["scatter"], "scatter (destination and source both need gradients)", vec![any(&s23), any(&[2, 2])],
              Box::new(|x| index::scatter(&x[0], 1, &ids(&[0, 2, 1, 0], &[2, 2])?, &x[1]))),
        probe(&["scatter_add"], "scatter_add, index shaped like the destination", vec![any(&s23), any(&s23)], Box::new(|x| {
            index::scatter_add(&x[0], 1, &ids(&[0, 2, 1, 0, 1, 2], &[2, 3])?, &x[1])
        })).when("scatter_add", json!({"input": [2, 3], "index": [2, 3]})),
        probe(&["scatter_add"], "scatter_add, index smaller than the destination", vec![any(&s23), any(&[2, 2])], Box::new(|x| {
            index::scatter_add(&x[0], 1, &ids(&[0, 2, 1, 0], &[2, 2])?, &x[1])
        })).when("scatter_add", json!({"input": [2, 3], "index": [2, 2]})),
        probe(&["batch_norm", "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
                "_native_batch_norm_legit_no_training", "instance_norm"],
              "(x - mean) / sqrt(var + eps) * w + b over batch and space", vec![any(&[2, 2, 3]), any(&[1, 2, 1]), any(&[1, 2, 1])],
              Box::new(|x| normalize(&x[0], &[0, 2])?.broadcast_mul(&x[1])?.broadcast_add(&x[2]))),
        probe(&["layer_norm", "native_layer_norm"], "composed layer norm", vec![any(&s234), any(&[4]), any(&[4])],
              Box::new(|x| normalize(&x[0], &[2])?.broadcast_mul(&x[1])?.broadcast_add(&x[2]))),
        probe(&["layer_norm", "native_layer_norm"], "candle_nn::ops::layer_norm (fused)", vec![any(&s234), any(&[4]), any(&[4])],
              Box::new(|x| candle_nn::ops::layer_norm(&x[0], &x[1], &x[2], 1e-5))).caveat(),
        probe(&["group_norm", "native_group_norm"], "composed group norm", vec![any(&[2, 4, 3]), any(&[1, 4, 1]), any(&[1, 4, 1])],
              Box::new(|x| normalize(&x[0].reshape((2, 2, 6))?, &[2])?.reshape((2, 4, 3))?.broadcast_mul(&x[1])?
                  .broadcast_add(&x[2]))),
        probe(&["rms_norm", "_fused_rms_norm"], "x / sqrt(mean(x^2) + eps) * w", vec![any(&s234), any(&[4])], Box::new(|x| {
            x[0].broadcast_div(&x[0].sqr()?.mean_keepdim(2)?.affine(1.0, 1e-5)?.sqrt()?)?.broadcast_mul(&x[1])
        })),
        probe(&["rms_norm", "_fused_rms_norm"], "candle_nn::ops::rms_norm (fused)", vec![any(&s234), any(&[4])],
              Box::new(|x| candle_nn::ops::rms_norm(&x[0], &x[1], 1e-5))).caveat(),
        probe(&["_softmax", "softmax", "_safe_softmax"], "candle_nn::ops::softmax_last_dim (fused)", vec![any(&s23)],
              Box::new(|x| candle_nn::ops::softmax_last_dim(&x[0]))).caveat(),
        probe(&["gelu"], "gelu_erf (candle's own)", vec![any(&s23)], Box::new(|x| x[0].gelu_erf())).caveat(),
        probe(&["relu"], "relu at 0 (torch: 0)", vec![Input::Given(vec![3], vec![-1.0, 0.0, 1.0])],
              Box::new(|x| x[0].relu())).kink().expect(vec![0.0, 0.0, 1.0]),
        probe(&["clamp", "hardtanh", "relu6"], "clamp at a bound (torch: 0)", vec![Input::Given(vec![3], vec![-1.0, 0.0, 1.0])],
              Box::new(|x| x[0].clamp(-1.0, 1.0))).kink().expect(vec![0.0, 1.0, 0.0]),
        probe(&["_scaled_dot_product_attention_math", "_scaled_dot_product_efficient_attention",
                "_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_for_cpu",
                "scaled_dot_product_attention"], "matmul + softmax + matmul", vec![any(&s234), any(&s234), any(&s234)],
              Box::new(sdpa)),
        probe(&["binary_cross_entropy"], "-(t log p + (1 - t) log(1 - p))", vec![unit(&s23), unit(&s23)], Box::new(|x| {
            loss::binary_cross_entropy(&x[0], &x[1], None, Reduction::Mean)
        })),
        probe(&["binary_cross_entropy_with_logits"], "(1 - t) x + softplus(-x)", vec![any(&s23), unit(&s23)], Box::new(|x| {
            x[1].affine(-1.0, 1.0)?.mul(&x[0])?.add(&softplus(&x[0].neg()?)?)?.mean_all()
        })),
        probe(&["cross_entropy_loss", "nll_loss"], "candle_nn::loss::cross_entropy", vec![any(&s23)],
              Box::new(|x| candle_nn::loss::cross_entropy(&x[0], &ids(&[2, 0], &[2])?))),
        probe(&["nll_loss_forward"], "-w[t] x[n, t] gathered, mean over the kept weights (one target ignored)",
              vec![any(&[3, 3])], Box::new(|x| {
                  let target = Tensor::new(&[2i64, 0, -100], &Device::Cpu)?;
                  let weight = Tensor::new(&[0.5f64, 1.0, 2.0], &Device::Cpu)?;
                  Ok(loss::nll_loss(&x[0], &target, Some(&weight), Reduction::Mean, -100)?.0)
              })),
        probe(&["pixel_shuffle", "pixel_unshuffle", "channel_shuffle"], "reshape + permute", vec![any(&[1, 4, 2, 3])],
              Box::new(|x| x[0].reshape((1, 1, 2, 2, 2, 3))?.permute((0, 1, 4, 2, 5, 3))?.reshape((1, 1, 4, 6)))),
        probe(&["unfold"], "Tensor::unfold", vec![any(&[2, 5])], Box::new(|x| x[0].unfold(1, 2, 1))),
        probe(&["conv_transpose1d", "convolution", "_convolution"], "conv_transpose1d", vec![any(&[2, 2, 5]), any(&[2, 3, 3])],
              Box::new(|x| x[0].conv_transpose1d(&x[1], 0, 0, 1, 1, 1)))
            .when("convolution", json!({"__op__": "conv_transpose1d", "input": [2, 2, 5], "weight": [2, 3, 3],
                                        "stride": [1], "padding": [0], "output_padding": [0], "dilation": [1]})),
        probe(&["upsample_bilinear2d"], "upsample_bilinear2d", vec![any(&[1, 2, 3, 3])],
              Box::new(|x| x[0].upsample_bilinear2d(6, 6, false))),
        // candle_nn::rnn::LSTM (step/seq_init), one layer and direction; the reverse direction
        // runs the reversed sequence
        probe(&["lstm", "mkldnn_rnn_layer"], "lstm (candle_nn::rnn::LSTM, seq_init from h0, c0)", lstm_inputs(),
              Box::new(|x| lstm(x, false))),
        probe(&["lstm", "mkldnn_rnn_layer"], "lstm, reverse direction", lstm_inputs(), Box::new(|x| lstm(x, true))),
    ]);
    all.extend(no_grad_probes());
    all.extend(conditional_probes());
    all
}

fn no_grad_probes() -> Vec<Probe> {
    let s23 = [2usize, 3];
    let ops: Vec<(Ops, &'static str, Unary)> = vec![
        (&["eq", "ne", "ge", "gt", "le", "lt"], "cmp", |x| x.ge(0.0)),
        (
            &["isfinite", "isinf", "isnan"],
            "eq(x, x) / abs(x) == inf",
            |x| x.eq(x),
        ),
        (
            &[
                "logical_and",
                "logical_or",
                "logical_not",
                "logical_xor",
                "bitwise_and",
                "bitwise_or",
                "bitwise_not",
                "bitwise_xor",
                "__and__",
                "__or__",
                "__xor__",
            ],
            "u8 masks: mul / maximum / eq 0 / ne",
            |x| {
                let a = x.ge(0.0)?;
                a.mul(&x.lt(1.0)?)?.maximum(&a)?.eq(0u8)
            },
        ),
        (&["all", "any"], "min / max of x != 0 (a u8 mask)", |x| {
            reduce::all_any(x, &[1], false, true)
        }),
        (&["count_nonzero"], "sum of x != 0 as int64", |x| {
            reduce::count_nonzero(x, &[1])
        }),
        (&["argmax", "argmin"], "argmax_keepdim", |x| {
            x.argmax_keepdim(1)
        }),
        (&["floor"], "floor", |x| x.floor()),
        (&["floor_divide"], "floor(a / b)", |x| {
            elementwise::floor_divide(x, &Tensor::new(0.7f64, x.device())?)
        }),
        (&["ceil"], "ceil", |x| x.ceil()),
        (&["round"], "round", |x| x.round()),
        (&["trunc"], "where(x >= 0, floor, ceil)", |x| {
            x.ge(0.0)?.where_cond(&x.floor()?, &x.ceil()?)
        }),
        (&["sign"], "sign", |x| x.sign()),
        (&["detach"], "detach", |x| Ok(x.detach())),
        (&["_local_scalar_dense", "item"], "to_vec0", |x| {
            Tensor::new(x.sum_all()?.to_vec0::<f64>()?, &Device::Cpu)
        }),
        (
            &[
                "zeros",
                "zeros_like",
                "new_zeros",
                "empty",
                "empty_like",
                "empty_strided",
                "new_empty",
                "new_empty_strided",
            ],
            "zeros_like",
            |x| x.zeros_like(),
        ),
        (&["ones", "ones_like", "new_ones"], "ones_like", |x| {
            x.ones_like()
        }),
        (
            &[
                "full",
                "full_like",
                "new_full",
                "fill",
                "scalar_tensor",
                "tensor",
            ],
            "Tensor::full",
            |_| Tensor::full(0.5f64, (2, 3), &Device::Cpu),
        ),
        (&["arange", "linspace", "logspace"], "arange_step", |_| {
            Tensor::arange_step(0.0f64, 1.0, 0.25, &Device::Cpu)
        }),
        (&["eye"], "Tensor::eye", |_| {
            Tensor::eye(3, DType::F64, &Device::Cpu)
        }),
        (
            &["rand", "rand_like", "randint", "randint_like", "bernoulli"],
            "rand_like",
            |x| x.rand_like(0.0, 1.0),
        ),
        (&["randn", "randn_like"], "randn_like", |x| {
            x.randn_like(0.0, 1.0)
        }),
        (&["randperm"], "arg_sort_last_dim of rand", |_| {
            Tensor::rand(0.0f64, 1.0, 5, &Device::Cpu)?.arg_sort_last_dim(true)
        }),
    ];
    ops.into_iter()
        .map(|(ops, name, f)| {
            probe(
                ops,
                name,
                vec![any(&s23)],
                Box::new(move |x: &[Tensor]| f(&x[0])),
            )
            .no_grad()
        })
        .collect()
}

fn conditional_probes() -> Vec<Probe> {
    let conv = |name,
                input: &[usize],
                weight: &[usize],
                stride: usize,
                padding: usize,
                groups: usize| {
        let case = json!({"__op__": "convolution", "input": input, "weight": weight, "stride": [stride, stride],
                          "padding": [padding, padding], "dilation": [1, 1], "groups": groups, "transposed": false});
        probe(
            &["convolution", "_convolution", "conv2d"],
            name,
            vec![any(input), any(weight)],
            Box::new(move |x: &[Tensor]| x[0].conv2d(&x[1], padding, stride, 1, groups)),
        )
        .when("convolution", case)
    };
    let pool = |ops: &'static [&'static str],
                name,
                condition,
                input: &'static [usize],
                k: usize,
                s: usize,
                max: bool| {
        let op = if ops[0].contains("1d") {
            "max_pool1d"
        } else {
            ops[0]
        };
        let case = json!({"__op__": op, "input": input, "kernel_size": [k, k], "stride": [s, s], "padding": [0, 0]});
        let f: Box<Forward> = if max {
            Box::new(move |x: &[Tensor]| x[0].max_pool2d_with_stride(k, s))
        } else {
            Box::new(move |x: &[Tensor]| x[0].avg_pool2d_with_stride(k, s))
        };
        probe(ops, name, vec![any(input)], f).when(condition, case)
    };
    const MAX: &[&str] = &["max_pool2d", "max_pool2d_with_indices"];
    const AVG: &[&str] = &["avg_pool2d"];
    let nearest = |name, input: &'static [usize], h: usize, w: usize| {
        let case = json!({"__op__": "upsample_nearest2d", "input": input, "output": [input[0], input[1], h, w]});
        probe(
            &["upsample_nearest2d"],
            name,
            vec![any(input)],
            Box::new(move |x: &[Tensor]| x[0].upsample_nearest2d(h, w)),
        )
        .when("nearest_upscale", case)
    };
    let adaptive = |ops: &'static [&'static str], name, condition, out: usize, max: bool| {
        let case = json!({"__op__": ops[0], "input": [1, 2, 4, 4], "output": [1, 2, out, out]});
        let k = 4 / out;
        let f: Box<Forward> = match (max, out) {
            (false, 1) => Box::new(|x: &[Tensor]| x[0].mean_keepdim(3)?.mean_keepdim(2)),
            (true, 1) => Box::new(|x: &[Tensor]| x[0].max_keepdim(3)?.max_keepdim(2)),
            (false, _) => Box::new(move |x: &[Tensor]| x[0].avg_pool2d_with_stride(k, k)),
            (true, _) => Box::new(move |x: &[Tensor]| x[0].max_pool2d_with_stride(k, k)),
        };
        probe(ops, name, vec![any(&[1, 2, 4, 4])], f).when(condition, case)
    };
    const AAVG: &[&str] = &["adaptive_avg_pool2d", "_adaptive_avg_pool2d"];
    const AMAX: &[&str] = &["adaptive_max_pool2d"];
    // conv1d's input gradient alone (the weight a constant, as in a frozen feature extractor):
    // candle computes it with conv_transpose1d, whose CPU col2im path (padding 0, dilation 1 and a
    // derived output padding of 0, i.e. (L - k) % stride == 0) is wrong for batch > 1 with more
    // than one output channel per group. Cases the condition flags for the weight gradient but
    // whose input gradient is right are caveats: the condition does not see a frozen weight.
    let conv1d_input = |name,
                        input: &'static [usize],
                        weight: &'static [usize],
                        stride: usize,
                        padding: usize,
                        groups: usize| {
        let case = json!({"__op__": "conv1d", "input": input, "weight": weight, "stride": [stride],
                          "padding": [padding], "dilation": [1], "groups": groups});
        probe(
            &["conv1d", "convolution", "_convolution"],
            name,
            vec![any(input)],
            Box::new(move |x: &[Tensor]| {
                let w = make(&any(weight), 1)?;
                x[0].conv1d(&w, padding, stride, 1, groups)
            }),
        )
        .when("conv1d", case)
    };
    vec![
        conv("conv2d", &[2, 3, 6, 6], &[4, 3, 3, 3], 1, 1, 1),
        conv("conv2d, groups 2", &[2, 4, 5, 5], &[4, 2, 3, 3], 1, 1, 2),
        conv("conv2d, stride 2, equal H/W residuals", &[1, 2, 7, 7], &[2, 2, 3, 3], 2, 1, 1),
        conv("conv2d, stride 2, H/W residuals differ", &[1, 2, 7, 8], &[2, 2, 3, 3], 2, 1, 1),
        probe(&["conv1d", "convolution", "_convolution"], "conv1d, batch 1", vec![any(&[1, 2, 7]), any(&[3, 2, 3])],
              Box::new(|x| x[0].conv1d(&x[1], 1, 1, 1, 1)))
            .when("conv1d", json!({"__op__": "conv1d", "input": [1, 2, 7], "weight": [3, 2, 3], "stride": [1], "padding": [1]})),
        probe(&["conv1d", "convolution", "_convolution"], "conv1d, batch 2, 2 input channels", vec![any(&[2, 2, 7]), any(&[3, 2, 3])],
              Box::new(|x| x[0].conv1d(&x[1], 1, 1, 1, 1)))
            .when("conv1d", json!({"__op__": "conv1d", "input": [2, 2, 7], "weight": [3, 2, 3], "stride": [1], "padding": [1]})),
        // the backward's weight gradient convolves with the transposed output gradient as its kernel:
        // wrong once that kernel is not contiguous (batch > 1 and > 1 output channel per group)
        probe(&["conv1d", "convolution", "_convolution"], "conv1d, batch 2, 1 input channel, 3 output channels", vec![any(&[2, 1, 7]), any(&[3, 1, 3])],
              Box::new(|x| x[0].conv1d(&x[1], 1, 1, 1, 1)))
            .when("conv1d", json!({"__op__": "conv1d", "input": [2, 1, 7], "weight": [3, 1, 3], "stride": [1], "padding": [1]})),
        probe(&["conv1d", "convolution", "_convolution"], "conv1d, batch 2, 1 output channel", vec![any(&[2, 2, 7]), any(&[1, 2, 3])],
              Box::new(|x| x[0].conv1d(&x[1], 1, 1, 1, 1)))
            .when("conv1d", json!({"__op__": "conv1d", "input": [2, 2, 7], "weight": [1, 2, 3], "stride": [1], "padding": [1]})),
        probe(&["conv1d", "convolution", "_convolution"], "conv1d, batch 2, depthwise (1 output channel per group)", vec![any(&[2, 2, 7]), any(&[2, 1, 3])],
              Box::new(|x| x[0].conv1d(&x[1], 1, 1, 1, 2)))
            .when("conv1d", json!({"__op__": "conv1d", "input": [2, 2, 7], "weight": [2, 1, 3], "stride": [1], "padding": [1], "groups": 2})),
        probe(&["conv1d", "convolution", "_convolution"], "conv1d, batch 2, groups 2 with 2 output channels each", vec![any(&[2, 2, 7]), any(&[4, 1, 3])],
              Box::new(|x| x[0].conv1d(&x[1], 1, 1, 1, 2)))
            .when("conv1d", json!({"__op__": "conv1d", "input": [2, 2, 7], "weight": [4, 1, 3], "stride": [1], "padding": [1], "groups": 2})),
        conv1d_input("conv1d input gradient (weight frozen), batch 2, padding 0", &[2, 1, 10], &[2, 1, 3], 1, 0, 1),
        conv1d_input("conv1d input gradient (weight frozen), batch 1, padding 0", &[1, 1, 10], &[2, 1, 3], 1, 0, 1),
        conv1d_input("conv1d input gradient (weight frozen), batch 2, padding 0, 1 output channel", &[2, 2, 10], &[1, 2, 3], 1, 0, 1),
        conv1d_input("conv1d input gradient (weight frozen), batch 2, padding 0, depthwise (groups 4)", &[2, 4, 10], &[4, 1, 3], 1, 0, 4),
        conv1d_input("conv1d input gradient (weight frozen), batch 2, padding 0, groups 4 with 2 output channels each", &[2, 4, 10], &[8, 1, 3], 1, 0, 4),
        conv1d_input("conv1d input gradient (weight frozen), batch 2, stride 2, L 11 (output padding 0)", &[2, 1, 11], &[2, 1, 3], 2, 0, 1),
        conv1d_input("conv1d input gradient (weight frozen), batch 2, padding 1", &[2, 1, 10], &[2, 1, 3], 1, 1, 1).caveat(),
        conv1d_input("conv1d input gradient (weight frozen), batch 2, stride 2, L 10 (output padding 1)", &[2, 1, 10], &[2, 1, 3], 2, 0, 1).caveat(),
        probe(&["conv_transpose2d", "convolution", "_convolution"], "conv_transpose2d, output_padding 1 < stride 2", vec![any(&[1, 2, 3, 3]), any(&[2, 2, 3, 3])],
              Box::new(|x| x[0].conv_transpose2d(&x[1], 1, 1, 2, 1)))
            .when("conv_transpose2d", json!({"__op__": "conv_transpose2d", "input": [1, 2, 3, 3], "weight": [2, 2, 3, 3],
                                             "stride": [2, 2], "padding": [1, 1], "output_padding": [1, 1], "dilation": [1, 1]})),
        probe(&["conv_transpose2d", "convolution", "_convolution"], "conv_transpose2d, output_padding 1 >= stride 1 (dilation 2)", vec![any(&[1, 2, 3, 3]), any(&[2, 2, 3, 3])],
              Box::new(|x| x[0].conv_transpose2d(&x[1], 0, 1, 1, 2)))
            .when("conv_transpose2d", json!({"__op__": "conv_transpose2d", "input": [1, 2, 3, 3], "weight": [2, 2, 3, 3],
                                             "stride": [1, 1], "padding": [0, 0], "output_padding": [1, 1], "dilation": [2, 2]})),
        pool(MAX, "max_pool2d, kernel == stride, divisible", "max_pool", &[1, 2, 4, 4], 2, 2, true),
        pool(MAX, "max_pool2d, kernel == stride, not divisible", "max_pool", &[1, 1, 5, 7], 2, 2, true),
        pool(MAX, "max_pool2d, kernel 3 != stride 2", "max_pool", &[1, 2, 5, 5], 3, 2, true),
        pool(MAX, "max_pool2d, kernel 1 (identity)", "max_pool", &[1, 2, 3, 3], 1, 1, true),
        pool(AVG, "avg_pool2d, kernel == stride, divisible", "avg_pool", &[1, 2, 4, 4], 2, 2, false),
        pool(AVG, "avg_pool2d, kernel == stride, not divisible", "avg_pool", &[1, 1, 5, 7], 2, 2, false),
        pool(AVG, "avg_pool2d, kernel 3 != stride 2", "avg_pool", &[1, 2, 5, 5], 3, 2, false),
        adaptive(AAVG, "adaptive_avg_pool2d to 1x1 (mean)", "adaptive_avg_pool", 1, false),
        adaptive(AAVG, "adaptive_avg_pool2d 4 -> 2 (avg_pool2d 2)", "adaptive_avg_pool", 2, false),
        adaptive(AMAX, "adaptive_max_pool2d to 1x1 (max)", "adaptive_max_pool", 1, true),
        nearest("upsample_nearest2d x2", &[1, 2, 3, 3], 6, 6),
        nearest("upsample_nearest2d 3 -> 5 (non-integer)", &[1, 2, 3, 3], 5, 5),
        nearest("upsample_nearest2d 3x3 -> 6x9 (non-uniform)", &[1, 2, 3, 3], 6, 9),
        probe(&["upsample_nearest2d"], "upsample_nearest2d x2 beside another consumer of its input",
              vec![any(&[1, 1, 2, 2])], Box::new(|x| {
                  // candle-measured.md: written this way round, the +3 is lost
                  let up = x[0].upsample_nearest2d(4, 4)?.sum_all()?;
                  up.add(&x[0].sum_all()?.affine(3.0, 0.0)?)
              })).caveat(),
        probe(&["upsample_nearest1d"], "upsample_nearest1d x2 beside another consumer of its input",
              vec![any(&[1, 1, 3])], Box::new(|x| {
                  let up = x[0].upsample_nearest1d(6)?.sum_all()?;
                  up.add(&x[0].sum_all()?.affine(3.0, 0.0)?)
              })).caveat(),
        probe(&["upsample_nearest1d"], "upsample_nearest1d x2", vec![any(&[1, 2, 3])], Box::new(|x| x[0].upsample_nearest1d(6)))
            .when("nearest_upscale", json!({"__op__": "upsample_nearest1d", "input": [1, 2, 3], "output": [1, 2, 6]})),
        probe(&["upsample_nearest1d"], "upsample_nearest1d 3 -> 5", vec![any(&[1, 2, 3])], Box::new(|x| x[0].upsample_nearest1d(5)))
            .when("nearest_upscale", json!({"__op__": "upsample_nearest1d", "input": [1, 2, 3], "output": [1, 2, 5]})),
        probe(&["max_pool1d", "max_pool1d_with_indices"], "max_pool1d as max_pool2d (1, k), kernel == stride",
              vec![any(&[1, 2, 1, 6])], Box::new(|x| x[0].max_pool2d_with_stride((1, 2), (1, 2))))
            .when("max_pool", json!({"__op__": "max_pool1d", "input": [1, 2, 6], "kernel_size": [2], "stride": [2], "padding": [0]})),
        probe(&["max_pool1d", "max_pool1d_with_indices"], "max_pool1d as max_pool2d (1, k), kernel 3 != stride 2",
              vec![any(&[1, 2, 1, 7])], Box::new(|x| x[0].max_pool2d_with_stride((1, 3), (1, 2))))
            .when("max_pool", json!({"__op__": "max_pool1d", "input": [1, 2, 7], "kernel_size": [3], "stride": [2], "padding": [0]})),
        probe(&["avg_pool1d"], "avg_pool1d as avg_pool2d (1, k), kernel == stride", vec![any(&[1, 2, 1, 6])],
              Box::new(|x| x[0].avg_pool2d_with_stride((1, 2), (1, 2))))
            .when("avg_pool", json!({"__op__": "avg_pool1d", "input": [1, 2, 6], "kernel_size": [2], "stride": [2], "padding": [0]})),
        probe(&["avg_pool1d"], "avg_pool1d as avg_pool2d (1, k), kernel 3 != stride 2", vec![any(&[1, 2, 1, 7])],
              Box::new(|x| x[0].avg_pool2d_with_stride((1, 3), (1, 2))))
            .when("avg_pool", json!({"__op__": "avg_pool1d", "input": [1, 2, 7], "kernel_size": [3], "stride": [2], "padding": [0]})),
        probe(&["adaptive_avg_pool1d"], "adaptive_avg_pool1d to 1 (mean)", vec![any(&[1, 2, 4])], Box::new(|x| x[0].mean_keepdim(2)))
            .when("adaptive_avg_pool", json!({"__op__": "adaptive_avg_pool1d", "input": [1, 2, 4], "output": [1, 2, 1]})),
        probe(&["adaptive_max_pool1d"], "adaptive_max_pool1d to 1 (max)", vec![any(&[1, 2, 4])], Box::new(|x| x[0].max_keepdim(2)))
            .when("adaptive_max_pool", json!({"__op__": "adaptive_max_pool1d", "input": [1, 2, 4], "output": [1, 2, 1]})),
    ]
}

/// Run every probe; one record per (ATen op, probe).
///
/// ```
/// let records = candle_port_run::measure::measure_all().expect("probes run");
/// assert!(records.iter().any(|r| r.op == "upsample_bilinear2d" && r.verdict == "forward-only"));
/// ```
pub fn measure_all() -> Result<Vec<Record>> {
    Ok(probes().iter().flat_map(measure).collect())
}
