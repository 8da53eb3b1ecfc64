//! Indexing: `index_select`, `gather`, `embedding` (`weight[indices]`) and `index.Tensor` with a
//! single index tensor (what `x[idx]` traces to).

use candle_core::{bail, Result};

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
        _ => return None,
    };
    Some(r.map(Value::Tensor))
}
