//! Train the bundled example U-Net in candle with plain SGD and MSE loss, from weights, inputs and
//! targets exported by torch, so that `examples/train_both.py` can compare it with torch step by
//! step.
//!
//! ```text
//! unet-candle --weights W.safetensors --out OUT.safetensors [--dtype f32|f64] [--steps N] [--lr LR]
//! unet-candle --weights W.safetensors --native [--dtype f32|f64]
//! ```
//! W holds torch's `state_dict` names plus `input` and `target`. OUT gets `loss` (float64, one per
//! step, taken before that step's update) and `grad.<name>` (every parameter's gradient at step 0).
//! `--native` builds the same model with candle's own `upsample_bilinear2d` and `max_pool2d`: its
//! first backward fails, which it reports with exit code 3. Other errors exit with 1.

mod model;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use candle_core::{bail, DType, Device, Error, Result, Tensor};
use candle_nn::{Optimizer, SGD};

use model::{OpSet, Store, UNet};

/// Exit code of `--native` when the backward fails (the expected outcome).
const EXIT_NATIVE_BACKWARD_FAILED: u8 = 3;

struct Args {
    weights: PathBuf,
    out: Option<PathBuf>,
    dtype: DType,
    steps: usize,
    lr: f64,
    native: bool,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args> {
    let mut weights = None;
    let mut parsed = Args {
        weights: PathBuf::new(),
        out: None,
        dtype: DType::F64,
        steps: 20,
        lr: 0.05,
        native: false,
    };
    while let Some(flag) = args.next() {
        let mut value = || match args.next() {
            Some(v) => Ok(v),
            None => Err(Error::Msg(format!("{flag} needs a value"))),
        };
        match flag.as_str() {
            "--weights" => weights = Some(PathBuf::from(value()?)),
            "--out" => parsed.out = Some(PathBuf::from(value()?)),
            "--dtype" => {
                parsed.dtype = match value()?.as_str() {
                    "f32" => DType::F32,
                    "f64" => DType::F64,
                    other => bail!("--dtype must be f32 or f64, not {other:?}"),
                }
            }
            "--steps" => {
                let v = value()?;
                parsed.steps = v
                    .parse()
                    .map_err(|_| Error::Msg(format!("--steps needs an integer, not {v:?}")))?;
            }
            "--lr" => {
                let v = value()?;
                parsed.lr = v
                    .parse()
                    .map_err(|_| Error::Msg(format!("--lr needs a number, not {v:?}")))?;
            }
            "--native" => parsed.native = true,
            other => bail!("unknown argument {other:?} (see the header of src/main.rs)"),
        }
    }
    parsed.weights = match weights {
        Some(w) => w,
        None => bail!("--weights FILE is required (written by examples/train_both.py)"),
    };
    if parsed.out.is_none() && !parsed.native {
        bail!("--out FILE is required to train")
    }
    if parsed.steps == 0 {
        bail!("--steps must be at least 1")
    }
    Ok(parsed)
}

/// The error without the backtrace candle attaches when RUST_BACKTRACE is set.
fn message(err: &Error) -> String {
    match err {
        Error::WithBacktrace { inner, .. } => message(inner),
        other => other.to_string(),
    }
}

struct Data {
    model: UNet,
    params: Vec<(String, candle_core::Var)>,
    input: Tensor,
    target: Tensor,
}

fn load(args: &Args, ops: OpSet) -> Result<Data> {
    let mut tensors = candle_core::safetensors::load(&args.weights, &Device::Cpu)?;
    let mut take = |name: &str| match tensors.remove(name) {
        Some(t) => t.to_dtype(args.dtype),
        None => bail!("{}: no tensor {name:?}", args.weights.display()),
    };
    let input = take("input")?;
    let target = take("target")?;
    let mut store = Store::new(tensors, args.dtype);
    let model = UNet::new(&mut store, ops)?;
    store.check_all_taken()?;
    let params = store.params().to_vec();
    Ok(Data {
        model,
        params,
        input,
        target,
    })
}

fn train(args: &Args) -> Result<()> {
    let data = load(args, OpSet::Port)?;
    let vars = data.params.iter().map(|(_, v)| v.clone()).collect();
    let mut sgd = SGD::new(vars, args.lr)?;
    let mut losses = Vec::with_capacity(args.steps);
    let mut saved: HashMap<String, Tensor> = HashMap::new();
    for step in 0..args.steps {
        let out = data.model.forward(&data.input)?;
        let loss = candle_nn::loss::mse(&out, &data.target)?;
        let grads = loss.backward()?;
        if step == 0 {
            for (name, var) in &data.params {
                match grads.get(var) {
                    Some(g) => saved.insert(format!("grad.{name}"), g.clone()),
                    None => bail!("no gradient reached parameter {name}"),
                };
            }
        }
        let value = loss.to_dtype(DType::F64)?.to_scalar::<f64>()?;
        println!("step {step:>3}  loss {value:.17e}");
        losses.push(value);
        sgd.step(&grads)?;
    }
    saved.insert(
        "loss".to_string(),
        Tensor::new(losses.as_slice(), &Device::Cpu)?,
    );
    match &args.out {
        Some(out) => candle_core::safetensors::save(&saved, out),
        None => bail!("--out FILE is required to train"),
    }
}

/// Forward with candle's native ops (it works), then the first backward (it fails).
fn native(args: &Args) -> Result<ExitCode> {
    let data = load(args, OpSet::Native)?;
    let out = data.model.forward(&data.input)?;
    let loss = candle_nn::loss::mse(&out, &data.target)?;
    let value = loss.to_dtype(DType::F64)?.to_scalar::<f64>()?;
    println!("native step   0  loss {value:.17e} (forward runs)");
    match loss.backward() {
        Ok(_) => bail!("candle's native ops trained: loss.backward() succeeded, unexpectedly"),
        Err(err) => {
            eprintln!("error: loss.backward() failed at step 0: {}", message(&err));
            eprintln!(
                "candle's upsample_bilinear2d has no backward, so this port cannot train: \
                 resize with candle-port-ops' interpolate, as unet-candle does by default"
            );
            Ok(ExitCode::from(EXIT_NATIVE_BACKWARD_FAILED))
        }
    }
}

fn run() -> Result<ExitCode> {
    let args = parse_args(std::env::args().skip(1))?;
    let start = Instant::now();
    let code = if args.native {
        native(&args)?
    } else {
        train(&args)?;
        ExitCode::SUCCESS
    };
    eprintln!("unet-candle: {:.2} s", start.elapsed().as_secs_f64());
    Ok(code)
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", message(&err));
            ExitCode::FAILURE
        }
    }
}
