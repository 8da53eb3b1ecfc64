//! Indexing: `index_select`, `gather`, `embedding` (`weight[indices]`), `index.Tensor` with a
//! single index tensor (what `x[idx]` traces to), and the writes `scatter` (a tensor or a number),
//! `scatter_add` and `index_add` (with `alpha`): candle's own ops ([`scatter`], [`scatter_add`],
//! [`index_add`], shared with `measure.rs`), whose measured wrong gradients for the destination
//! verify names from the op table.

use candle_core::{bail, Result, Tensor};

use crate::value::{dim, Args, Value};

/// Maps the indexing ops; `None` for other ops.
pub fn run(name: &str, args: &Args) -> Option<Result<Value>> {
    let r = match name {
        "index_select" => (|| {
            // candle's index_select reads only a contiguous source (torch's takes any strides)
            let x = args.tensor(0, "self")?.contiguous()?;
            x.index_select(
                &args.tensor(2, "index")?.contiguous()?,
                dim(args.int_or(1, "dim", 0)?, x.rank())?,
            )
        })(),
        "gather" => (|| {
            let x = args.tensor(0, "self")?.contiguous()?;
            x.gather(
                &args.tensor(2, "index")?.contiguous()?,
                dim(args.int_or(1, "dim", 0)?, x.rank())?,
            )
        })(),
        "embedding" => (|| {
            let w = args.tensor(0, "weight")?;
            let ids = args.tensor(1, "indices")?;
            let flat = w.index_select(&ids.flatten_all()?, 0)?;
            let mut shape = ids.dims().to_vec();
            shape.push(w.dims()[1]);
            flat.reshape(shape)
        })(),
        "index" => (|| {
            let x = args.tensor(0, "self")?;
            let list = args
                .get(1, "indices")
                .and_then(|j| j.as_array())
                .cloned()
                .unwrap_or_default();
            if list.len() != 1 || list[0].is_null() {
                bail!(
                    "index with {} index tensors: only x[idx] on the first dim is mapped",
                    list.len()
                )
            }
            let name = list[0].get("ref").and_then(|r| r.as_str()).unwrap_or("");
            let ids = match args.env.get(name) {
                Some(v) => v.tensor()?.clone(),
                None => bail!("index {name} was not computed"),
            };
            let flat = x.index_select(&ids.flatten_all()?, 0)?;
            let mut shape = ids.dims().to_vec();
            shape.extend_from_slice(&x.dims()[1..]);
            flat.reshape(shape)
        })(),
        "scatter" | "scatter_add" => (|| {
            if args.get(4, "reduce").is_some() {
                bail!("{} with reduce: not mapped", args.node.op)
            }
            let x = args.tensor(0, "self")?;
            let d = dim(args.int_or(1, "dim", 0)?, x.rank())?;
            let index = args.tensor(2, "index")?;
            let src = if args.is_tensor(3, "src") {
                args.tensor(3, "src")?
            } else {
                let v = args.float_or(3, "value", 0.0)?;
                Tensor::full(v, index.shape(), x.device())?.to_dtype(x.dtype())?
            };
            if name == "scatter" {
                scatter(&x, d, &index, &src)
            } else {
                scatter_add(&x, d, &index, &src)
            }
        })(),
        "index_add" => (|| {
            let x = args.tensor(0, "self")?;
            let d = dim(args.int_or(1, "dim", 0)?, x.rank())?;
            let alpha = args.float_or(4, "alpha", 1.0)?;
            index_add(
                &x,
                d,
                &args.tensor(2, "index")?,
                &args.tensor(3, "source")?,
                alpha,
            )
        })(),
        _ => return None,
    };
    Some(r.map(Value::Tensor))
}

/// The part of `src` that `index` covers (torch reads only that; candle wants equal shapes).
fn covered(index: &Tensor, src: &Tensor) -> Result<Tensor> {
    let mut src = src.clone();
    for (d, (&i, &s)) in index
        .dims()
        .iter()
        .zip(src.dims().to_vec().iter())
        .enumerate()
    {
        if i < s {
            src = src.narrow(d, 0, i)?;
        }
    }
    src.contiguous()
}

/// `x.scatter(d, index, src)`: candle's `Tensor::scatter` (`src` cut to `index`'s shape, as torch
/// reads it). candle's backward passes the whole gradient to `x`, overwritten positions included
/// (torch: 0 there); `src`'s is right. Measured (`scatter`), and named by verify when `x` needs a
/// gradient.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::zeros((1, 3), candle_core::DType::F64, &Device::Cpu)?;
/// let i = Tensor::new(&[[2i64, 0]], &Device::Cpu)?;
/// let s = Tensor::new(&[[1.0f64, 2.0]], &Device::Cpu)?;
/// let y = candle_port_run::ops::index::scatter(&x, 1, &i, &s)?;
/// assert_eq!(y.to_vec2::<f64>()?, [[2.0, 0.0, 1.0]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn scatter(x: &Tensor, d: usize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    x.contiguous()?
        .scatter(&index.contiguous()?, &covered(index, src)?, d)
}

/// `x.scatter_add(d, index, src)`: candle's `Tensor::scatter_add`. candle's backward zeroes `x`'s
/// gradient at the scattered positions (torch: 1 there), and fails unless `index` is shaped like
/// `x` (the backward scatters a mask of `x`'s shape with it), also when only `src` needs a
/// gradient; `src`'s gradient is right. Measured (`scatter_add`, conditional on the shapes).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::zeros((1, 3), candle_core::DType::F64, &Device::Cpu)?;
/// let i = Tensor::new(&[[2i64, 2, 0]], &Device::Cpu)?;
/// let s = Tensor::new(&[[1.0f64, 2.0, 4.0]], &Device::Cpu)?;
/// let y = candle_port_run::ops::index::scatter_add(&x, 1, &i, &s)?;
/// assert_eq!(y.to_vec2::<f64>()?, [[4.0, 0.0, 3.0]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn scatter_add(x: &Tensor, d: usize, index: &Tensor, src: &Tensor) -> Result<Tensor> {
    x.contiguous()?
        .scatter_add(&index.contiguous()?, &covered(index, src)?, d)
}

/// `x.index_add(d, index, source, alpha=alpha)`: candle's `Tensor::index_add` of
/// `alpha * source` (both gradients right: measured `index_add`).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::zeros((3, 1), candle_core::DType::F64, &Device::Cpu)?;
/// let i = Tensor::new(&[2i64, 2], &Device::Cpu)?;
/// let s = Tensor::new(&[[1.0f64], [2.0]], &Device::Cpu)?;
/// let y = candle_port_run::ops::index::index_add(&x, 0, &i, &s, 2.0)?;
/// assert_eq!(y.to_vec2::<f64>()?, [[0.0], [0.0], [6.0]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn index_add(
    x: &Tensor,
    d: usize,
    index: &Tensor,
    source: &Tensor,
    alpha: f64,
) -> Result<Tensor> {
    let source = if alpha != 1.0 {
        source.affine(alpha, 0.0)?
    } else {
        source.contiguous()?
    };
    x.contiguous()?.index_add(&index.contiguous()?, &source, d)
}
