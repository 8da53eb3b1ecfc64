//! Sorting: `sort` (and `sort.stable`) and `topk`, on candle's `arg_sort_last_dim` and a
//! `gather` of the values ([`sort`], [`topk`], shared with `measure.rs`): the values' gradient
//! goes back through the gather; the indices are int64.

use candle_core::{DType, Result, Tensor};

use crate::value::{dim, Args, Value};

/// Maps the sorting ops; `None` for other ops.
pub fn run(name: &str, args: &Args) -> Option<Result<Value>> {
    let r = match name {
        // sort.stable takes stable, dim and descending by keyword only
        "sort" => (|| {
            let x = args.tensor(0, "self")?;
            let d = dim(args.int_or(1, "dim", -1)?, x.rank())?;
            sort(&x, d, args.bool_or(2, "descending", false)?)
        })(),
        "topk" => (|| {
            let x = args.tensor(0, "self")?;
            let k = usize::try_from(args.int_or(1, "k", 1)?)
                .map_err(|_| candle_core::Error::Msg("topk: k < 0".into()))?;
            let d = dim(args.int_or(2, "dim", -1)?, x.rank())?;
            topk(&x, k, d, args.bool_or(3, "largest", true)?)
        })(),
        _ => return None,
    };
    Some(r.map(|(values, indices)| Value::Tuple(vec![Some(values), Some(indices)])))
}

/// `torch.sort(x, d, descending)`: `(values, int64 indices)`, by candle's `arg_sort_last_dim` (a
/// stable sort on the CPU: ties keep their order, as torch's `stable=True`) with `d` moved last,
/// and the values gathered at the indices (gradient to the sorted positions, as torch's).
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[3.0f64, 1.0], [0.0, 2.0]], &Device::Cpu)?;
/// let (v, i) = candle_port_run::ops::sort::sort(&x, 0, true)?;
/// assert_eq!(v.to_vec2::<f64>()?, [[3.0, 2.0], [0.0, 1.0]]);
/// assert_eq!(i.to_vec2::<i64>()?, [[0, 1], [1, 0]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn sort(x: &Tensor, d: usize, descending: bool) -> Result<(Tensor, Tensor)> {
    let last = x.rank().saturating_sub(1);
    if x.rank() == 0 {
        return Ok((x.clone(), x.zeros_like()?.to_dtype(DType::I64)?));
    }
    let moved = x.transpose(d, last)?.contiguous()?;
    let at = moved.arg_sort_last_dim(!descending)?;
    let values = moved.gather(&at, last)?.transpose(d, last)?;
    let indices = at.to_dtype(DType::I64)?.transpose(d, last)?;
    Ok((values, indices))
}

/// `torch.topk(x, k, d, largest)`: the first `k` of [`sort`] (descending for `largest`), so in
/// sorted order whatever `sorted` says.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[3.0f64, 1.0, 2.0]], &Device::Cpu)?;
/// let (v, i) = candle_port_run::ops::sort::topk(&x, 2, 1, false)?;
/// assert_eq!((v.to_vec2::<f64>()?, i.to_vec2::<i64>()?), (vec![vec![1.0, 2.0]], vec![vec![1, 2]]));
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn topk(x: &Tensor, k: usize, d: usize, largest: bool) -> Result<(Tensor, Tensor)> {
    let (values, indices) = sort(x, d, largest)?;
    Ok((values.narrow(d, 0, k)?, indices.narrow(d, 0, k)?))
}
