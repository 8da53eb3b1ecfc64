//! Matrix products: `t`, `mm`, `bmm`, `matmul`, `mv`, `dot`, `addmm` (`beta * bias + alpha * a @ b`),
//! `baddbmm` and `linear` (`x @ w^T + b`), all on candle's `matmul`/`broadcast_matmul`.

use candle_core::{Result, Tensor};

use crate::value::{Args, Value};

/// Maps the matrix products; `None` for other ops.
pub fn run(name: &str, args: &Args) -> Option<Result<Value>> {
    let r = match name {
        "t" => args
            .tensor(0, "self")
            .and_then(|x| if x.rank() < 2 { Ok(x) } else { x.t() }),
        "mm" | "bmm" => (|| args.tensor(0, "self")?.matmul(&args.tensor(1, "mat2")?))(),
        "matmul" => (|| {
            args.tensor(0, "self")?
                .broadcast_matmul(&args.tensor(1, "other")?)
        })(),
        // spectral norm's power iteration: `W v`, `u . (W v)`
        "mv" => (|| {
            let v = args.tensor(1, "vec")?;
            args.tensor(0, "self")?.matmul(&v.unsqueeze(1)?)?.squeeze(1)
        })(),
        "dot" => (|| {
            let (a, b) = (args.tensor(0, "self")?, args.tensor(1, "tensor")?);
            a.mul(&b)?.sum_all()
        })(),
        "addmm" | "baddbmm" => addmm(args),
        "linear" => linear(args),
        _ => return None,
    };
    Some(r.map(Value::Tensor))
}

fn scaled(t: Tensor, s: f64) -> Result<Tensor> {
    if s == 1.0 {
        Ok(t)
    } else {
        t.affine(s, 0.0)
    }
}

fn addmm(a: &Args) -> Result<Tensor> {
    let bias = a.tensor(0, "self")?;
    let prod = a.tensor(1, "mat1")?.matmul(&a.tensor(2, "mat2")?)?;
    let beta = a.float_or(3, "beta", 1.0)?;
    let alpha = a.float_or(4, "alpha", 1.0)?;
    scaled(prod, alpha)?.broadcast_add(&scaled(bias, beta)?)
}

fn linear(a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "input")?;
    let y = x.broadcast_matmul(&a.tensor(1, "weight")?.t()?)?;
    match a.opt_tensor(2, "bias")? {
        Some(b) => y.broadcast_add(&b),
        None => Ok(y),
    }
}
