//! The bundled example U-Net in candle, checked against torch with candle-port-parity, so that
//! `examples/train_both.py` can compare it with torch step by step (`candle-port compare`).
//!
//! ```text
//! unet-candle --parity DIR [--native]
//! ```
//! DIR is a parity directory written by `candle-port reference examples/unet.py:UNet ...
//! --steps N --optimizer sgd`: torch's weights, input, upstream gradient and steps. The port is
//! built from torch's weights under torch's names, runs forward, backward and the same SGD steps,
//! and writes its side into DIR. `--native` builds the same model with candle's own
//! `upsample_bilinear2d` and `max_pool2d`: its first backward fails, which it reports with exit
//! code 3. Other errors exit with 1.

mod model;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use candle_core::{bail, Error, Result};
use candle_port_parity::Parity;

use model::{OpSet, UNet};

/// Exit code of `--native` when the backward fails (the expected outcome).
const EXIT_NATIVE_BACKWARD_FAILED: u8 = 3;

struct Args {
    parity: PathBuf,
    native: bool,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args> {
    let mut parity = None;
    let mut native = false;
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--parity" => match args.next() {
                Some(v) => parity = Some(PathBuf::from(v)),
                None => bail!("--parity needs a directory"),
            },
            "--native" => native = true,
            other => bail!("unknown argument {other:?} (see the header of src/main.rs)"),
        }
    }
    match parity {
        Some(parity) => Ok(Args { parity, native }),
        None => bail!(
            "--parity DIR is required (written by candle-port reference; examples/train_both.py)"
        ),
    }
}

/// The error without the backtrace candle attaches when RUST_BACKTRACE is set.
fn message(err: &Error) -> String {
    match err {
        Error::WithBacktrace { inner, .. } => message(inner),
        other => other.to_string(),
    }
}

fn run() -> Result<ExitCode> {
    let args = parse_args(std::env::args().skip(1))?;
    let start = Instant::now();
    let parity = Parity::open(&args.parity)?;
    let ops = if args.native {
        OpSet::Native
    } else {
        OpSet::Port
    };
    let model = parity.build(|vb| UNet::new(vb, ops))?;
    let summary = parity.check(|xs| model.forward(&xs[0]))?;
    eprintln!("unet-candle: {:.2} s", start.elapsed().as_secs_f64());
    if let Some(err) = &summary.forward_error {
        bail!("the forward failed: {err}")
    }
    for (step, loss) in summary.losses.iter().enumerate() {
        println!("step {step:>3}  loss {loss:.17e}");
    }
    if args.native {
        return match &summary.backward_error {
            None => bail!("candle's native ops trained: loss.backward() succeeded, unexpectedly"),
            Some(err) => {
                println!("native step   0  forward runs");
                eprintln!(
                    "error: loss.backward() failed at step 0: {}",
                    err.lines().next().unwrap_or(err)
                );
                eprintln!(
                    "candle's upsample_bilinear2d has no backward, so this port cannot train: \
                     resize with candle-port-ops' interpolate, as unet-candle does by default"
                );
                Ok(ExitCode::from(EXIT_NATIVE_BACKWARD_FAILED))
            }
        };
    }
    summary.ensure_trains()?;
    Ok(ExitCode::SUCCESS)
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
