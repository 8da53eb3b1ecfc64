//! Indexing: `index_select`, `gather`, `embedding` (`weight[indices]`), `index.Tensor` (what
//! `x[idx]`, `x[:, idx]` and `h[arange(b), eos]` trace to: [`advanced_index`]) and its write
//! `index_put` (`x[i, j] = v`, `+=` with `accumulate`: [`index_put`]), and the writes `scatter` (a tensor or a number),
//! `scatter_add` and `index_add` (with `alpha`): candle's own ops ([`scatter`], [`scatter_add`],
//! [`index_add`], shared with `measure.rs`), whose measured wrong gradients for the destination
//! verify names from the op table.

use candle_core::{bail, DType, Result, Tensor};

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
            // a tied or transposed weight may be strided; candle's index_select reads contiguous only
            let w = args.tensor(0, "weight")?.contiguous()?;
            let ids = args.tensor(1, "indices")?;
            let flat = w.index_select(&ids.flatten_all()?, 0)?;
            let mut shape = ids.dims().to_vec();
            shape.push(w.dims()[1]);
            flat.reshape(shape)
        })(),
        "index" => (|| {
            let x = args.tensor(0, "self")?;
            advanced_index(&x, &index_list(args)?)
        })(),
        "index_put" => (|| {
            let x = args.tensor(0, "self")?;
            let values = args.tensor(2, "values")?;
            index_put(
                &x,
                &index_list(args)?,
                &values,
                args.bool_or(3, "accumulate", false)?,
            )
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

/// The `indices` list of `index.Tensor` / `index_put`: one entry per leading dim of `self`, `None`
/// for a dim taken whole (`x[:, idx]`).
fn index_list(args: &Args) -> Result<Vec<Option<Tensor>>> {
    let Some(list) = args.get(1, "indices").and_then(|j| j.as_array()) else {
        bail!("{}: missing indices list", args.node.op)
    };
    list.iter()
        .map(|j| {
            if j.is_null() {
                return Ok(None);
            }
            let name = j.get("ref").and_then(|r| r.as_str()).unwrap_or("");
            match args.env.get(name) {
                Some(v) => Ok(Some(v.tensor()?.clone())),
                None => bail!("index {name} was not computed"),
            }
        })
        .collect()
}

/// How torch's advanced indexing lays out `x[indices]`: `x` permuted so that the indexed dims
/// come first and flattened into one (`rows`), the flat row of each index position (`flat`,
/// int64, broadcast shape `batch`), the other dims (`rest`), and where torch puts `batch`: at the
/// first indexed dim when the indexed dims are adjacent, else in front (`at`).
struct Layout {
    order: Vec<usize>,
    rows: Tensor,
    flat: Tensor,
    batch: Vec<usize>,
    rest: Vec<usize>,
    at: usize,
}

fn layout(x: &Tensor, indices: &[Option<Tensor>]) -> Result<Layout> {
    if indices.len() > x.rank() {
        bail!(
            "{} indices for a tensor of rank {}",
            indices.len(),
            x.rank()
        )
    }
    let picked: Vec<(usize, &Tensor)> = indices
        .iter()
        .enumerate()
        .filter_map(|(d, t)| t.as_ref().map(|t| (d, t)))
        .collect();
    if picked.is_empty() {
        bail!("index without an index tensor")
    }
    if picked
        .iter()
        .any(|(_, t)| matches!(t.dtype(), DType::U8) && t.rank() > 0)
    {
        bail!("a boolean mask index: its result's shape depends on the values (no fixed-shape candle op)")
    }
    let mut batch: Vec<usize> = Vec::new();
    for (_, t) in &picked {
        batch = broadcast_shape(&batch, t.dims())?;
    }
    let dims = x.dims().to_vec();
    let mut flat: Option<Tensor> = None;
    for (d, t) in &picked {
        let n = dims[*d];
        let t = t.to_dtype(DType::I64)?.broadcast_as(batch.as_slice())?;
        // negative indices count from the end, as in torch
        let t = t.lt(0i64)?.where_cond(&t.affine(1.0, n as f64)?, &t)?;
        flat = Some(match flat {
            None => t,
            Some(f) => f.affine(n as f64, 0.0)?.add(&t)?,
        });
    }
    let Some(flat) = flat else {
        bail!("index without an index tensor")
    };
    let indexed: Vec<usize> = picked.iter().map(|(d, _)| *d).collect();
    let others: Vec<usize> = (0..x.rank()).filter(|d| !indexed.contains(d)).collect();
    let order: Vec<usize> = indexed.iter().chain(others.iter()).copied().collect();
    let n_rows: usize = indexed.iter().map(|&d| dims[d]).product();
    let rest: Vec<usize> = others.iter().map(|&d| dims[d]).collect();
    let mut rows_shape = vec![n_rows];
    rows_shape.extend_from_slice(&rest);
    // candle's index_select and index_add read a contiguous source only (torch's take any strides)
    let rows = x
        .permute(order.as_slice())?
        .contiguous()?
        .reshape(rows_shape)?;
    let adjacent = indexed.windows(2).all(|w| w[1] == w[0] + 1);
    let at = if adjacent { indexed[0] } else { 0 };
    Ok(Layout {
        order,
        rows,
        flat: flat.flatten_all()?.contiguous()?,
        batch,
        rest,
        at,
    })
}

fn broadcast_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| {
            let da = if i + a.len() >= n {
                a[i + a.len() - n]
            } else {
                1
            };
            let db = if i + b.len() >= n {
                b[i + b.len() - n]
            } else {
                1
            };
            match (da, db) {
                (x, y) if x == y => Ok(x),
                (1, y) => Ok(y),
                (x, 1) => Ok(x),
                _ => bail!("index tensors of shapes {a:?} and {b:?} do not broadcast"),
            }
        })
        .collect()
}

/// The permutation that moves `batch` (in front after the gather) to torch's place `at`.
fn batch_to(at: usize, n_batch: usize, n_rest: usize) -> Vec<usize> {
    let mut perm: Vec<usize> = (n_batch..n_batch + at).collect();
    perm.extend(0..n_batch);
    perm.extend(n_batch + at..n_batch + n_rest);
    perm
}

/// `x[indices]` (`aten.index.Tensor`): torch's advanced indexing with any number of index
/// tensors (broadcast together; `None` takes a dim whole), by one `index_select` of `x`'s
/// indexed dims flattened into one, so it differentiates as `index_select` does. A strided `x`
/// (a permuted activation: SAM's relative positions) is made contiguous first.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::arange(0f64, 24.0, &Device::Cpu)?.reshape((2, 3, 4))?;
/// let b = Tensor::new(&[0i64, 1], &Device::Cpu)?;
/// let t = Tensor::new(&[2i64, -1], &Device::Cpu)?;
/// // h[arange(2), eos]: one row per batch element
/// let y = candle_port_run::ops::index::advanced_index(&x, &[Some(b), Some(t.clone())])?;
/// assert_eq!(y.to_vec2::<f64>()?, [[8.0, 9.0, 10.0, 11.0], [20.0, 21.0, 22.0, 23.0]]);
/// // x[:, t]: the batch dims stay where the indexed dim was
/// let y = candle_port_run::ops::index::advanced_index(&x, &[None, Some(t)])?;
/// assert_eq!(y.dims(), &[2, 2, 4]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn advanced_index(x: &Tensor, indices: &[Option<Tensor>]) -> Result<Tensor> {
    let l = layout(x, indices)?;
    let mut shape = l.batch.clone();
    shape.extend_from_slice(&l.rest);
    let y = l.rows.index_select(&l.flat, 0)?.reshape(shape)?;
    if l.at == 0 {
        return Ok(y);
    }
    y.permute(batch_to(l.at, l.batch.len(), l.rest.len()))
}

/// `x[indices] = values` (`aten.index_put`; `x[indices] += values` with `accumulate`), out of
/// place: the positions written take `values` (summed with `accumulate`), the rest keep `x`.
/// `x`'s gradient is zero at overwritten positions (torch's too), `values`' is the gradient read
/// back at its positions. A position indexed twice without `accumulate` keeps the last write (as
/// torch's CPU kernel does; its docs leave it unspecified), with `accumulate` the sum.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::zeros((2, 3), candle_core::DType::F64, &Device::Cpu)?;
/// let i = Tensor::new(&[1i64, 0], &Device::Cpu)?;
/// let j = Tensor::new(&[2i64, 0], &Device::Cpu)?;
/// let v = Tensor::new(&[5.0f64, 7.0], &Device::Cpu)?;
/// let y = candle_port_run::ops::index::index_put(&x, &[Some(i), Some(j)], &v, false)?;
/// assert_eq!(y.to_vec2::<f64>()?, [[7.0, 0.0, 0.0], [0.0, 0.0, 5.0]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn index_put(
    x: &Tensor,
    indices: &[Option<Tensor>],
    values: &Tensor,
    accumulate: bool,
) -> Result<Tensor> {
    let l = layout(x, indices)?;
    let n_batch = l.batch.len();
    // values broadcast to x[indices]'s shape, then batch moved in front and flattened
    let mut read_shape: Vec<usize> = l.rest[..l.at].to_vec();
    read_shape.extend_from_slice(&l.batch);
    read_shape.extend_from_slice(&l.rest[l.at..]);
    let mut values = values.to_dtype(x.dtype())?.broadcast_as(read_shape)?;
    if l.at > 0 {
        let mut back: Vec<usize> = (l.at..l.at + n_batch).collect();
        back.extend(0..l.at);
        back.extend(l.at + n_batch..n_batch + l.rest.len());
        values = values.permute(back)?;
    }
    let mut flat_shape = vec![l.flat.elem_count()];
    flat_shape.extend_from_slice(&l.rest);
    let values = values.contiguous()?.reshape(flat_shape)?;
    let rows = if accumulate {
        l.rows
            .add(&l.rows.zeros_like()?.index_add(&l.flat, &values, 0)?)?
    } else {
        // a position written twice keeps the last write, as torch's CPU kernel does
        let ids = l.flat.to_vec1::<i64>()?;
        let mut seen = std::collections::HashSet::new();
        let mut last: Vec<u32> = Vec::new();
        for (i, id) in ids.iter().enumerate().rev() {
            if seen.insert(*id) {
                last.push(i as u32);
            }
        }
        last.reverse();
        let n = last.len();
        let last = Tensor::from_vec(last, n, x.device())?;
        let flat = l.flat.index_select(&last, 0)?;
        let kept = l
            .rows
            .zeros_like()?
            .index_add(&flat, &values.index_select(&last, 0)?, 0)?;
        // torch's backward gives every value the gradient at its position, a value overwritten
        // by a later one included: the sum of all writes carries the gradient, the last ones the value
        let all = l.rows.zeros_like()?.index_add(&l.flat, &values, 0)?;
        let written = all.add(&kept.sub(&all)?.detach())?;
        let hit = Tensor::zeros(l.rows.dim(0)?, x.dtype(), x.device())?
            .index_add(&flat, &Tensor::ones(n, x.dtype(), x.device())?, 0)?
            .gt(0.0)?;
        let mut keep_shape = vec![l.rows.dim(0)?];
        keep_shape.extend(std::iter::repeat_n(1, l.rest.len()));
        let hit = hit.reshape(keep_shape)?.broadcast_as(l.rows.shape())?;
        hit.where_cond(&written, &l.rows)?
    };
    let mut permuted: Vec<usize> = l.order.iter().map(|&d| x.dims()[d]).collect();
    permuted.truncate(l.order.len());
    let y = rows.reshape(permuted)?;
    let mut inverse = vec![0; l.order.len()];
    for (i, &d) in l.order.iter().enumerate() {
        inverse[d] = i;
    }
    y.permute(inverse)
}
