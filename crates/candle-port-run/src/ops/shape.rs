//! Views and layout: `view`/`reshape` (with `-1`), `permute`, `transpose`, `expand`, `slice`
//! (with step), `select`, `unsqueeze`, `squeeze`, `cat` and `stack` (mixed dtypes promoted as
//! torch does), `split`, `constant_pad_nd`, reflection and replication padding, `unfold` (by
//! `index_select`), `pixel_shuffle` and `pixel_unshuffle`, dtype conversion, `as_strided` (an
//! `index_select` the exporter resolves), `flip` and `roll` (candle's, shared with `measure.rs`:
//! [`flip`], [`roll`]), `broadcast_to` (as `expand`), and the identities (`alias`, `clone`,
//! `contiguous`, `dropout` in eval).

use candle_core::{bail, DType, Result, Tensor};

use crate::value::{dim, usizes, Args, Value};

/// Maps the shape ops; `None` for other ops.
pub fn run(name: &str, op: &str, args: &Args) -> Option<Result<Value>> {
    let r = match name {
        "view" | "_unsafe_view" | "reshape" => reshape(args),
        "permute" => (|| {
            let x = args.tensor(0, "self")?;
            let d = args
                .ints_or(1, "dims", &[])?
                .iter()
                .map(|&d| dim(d, x.rank()))
                .collect::<Result<Vec<_>>>()?;
            x.permute(d)
        })(),
        "transpose" => (|| {
            let x = args.tensor(0, "self")?;
            x.transpose(
                dim(args.int_or(1, "dim0", 0)?, x.rank())?,
                dim(args.int_or(2, "dim1", 1)?, x.rank())?,
            )
        })(),
        "expand" | "broadcast_to" => expand(args),
        "flip" => (|| {
            let x = args.tensor(0, "self")?;
            flip(&x, &dims_of(&args.ints_or(1, "dims", &[])?, x.rank())?)
        })(),
        "roll" => (|| {
            let x = args.tensor(0, "self")?;
            let shifts = args.ints_or(1, "shifts", &[])?;
            let dims = dims_of(&args.ints_or(2, "dims", &[])?, x.rank())?;
            roll(&x, &shifts, &dims)
        })(),
        "slice" => slice(args),
        "select" => (|| {
            let x = args.tensor(0, "self")?;
            let d = dim(args.int_or(1, "dim", 0)?, x.rank())?;
            let i = args.int_or(2, "index", 0)?;
            let i = if i < 0 { i + x.dims()[d] as i64 } else { i };
            x.narrow(d, i as usize, 1)?.squeeze(d)
        })(),
        "unsqueeze" => (|| {
            let x = args.tensor(0, "self")?;
            x.unsqueeze(dim(args.int_or(1, "dim", 0)?, x.rank() + 1)?)
        })(),
        "squeeze" => squeeze(args),
        "alias" | "clone" | "contiguous" | "lift_fresh_copy" => args.tensor(0, "self"),
        "detach" => args.tensor(0, "self").map(|x| x.detach()),
        "dropout" | "native_dropout" | "feature_dropout" => dropout(name, args),
        // a draw torch made (drop path, noise injection): candle cannot reproduce it
        "rand" | "randn" | "rand_like" | "randn_like" | "randint" | "randint_like"
        | "bernoulli" | "normal" | "uniform" | "exponential" | "multinomial" | "randperm" => {
            Err(candle_core::Error::Msg(format!(
                "{name} is random: torch's draw cannot be repeated in candle; verify in eval mode \
                 (--eval) if it is for training only (drop path, noise)"
            )))
        }
        "as_strided" | "as_strided_" => as_strided(args),
        "_to_copy" | "to" => to_dtype(args),
        "cat" | "stack" => (|| {
            // torch promotes (Informer's decoder input: float64 values and a float32 `zeros`)
            let xs = super::elementwise::promote_all(args.tensors(0, "tensors")?)?;
            let rank = xs.first().map(|x| x.rank()).unwrap_or(1);
            if name == "cat" {
                Tensor::cat(&xs, dim(args.int_or(1, "dim", 0)?, rank)?)
            } else {
                Tensor::stack(&xs, dim(args.int_or(1, "dim", 0)?, rank + 1)?)
            }
        })(),
        "split" | "split_with_sizes" | "unsafe_split" | "unsafe_split_with_sizes" => {
            return Some(split(op, args))
        }
        "unbind" => return Some(unbind(args)),
        "constant_pad_nd" => constant_pad(args),
        "reflection_pad1d" | "reflection_pad2d" | "replication_pad1d" | "replication_pad2d" => {
            index_pad(args, name.starts_with("reflection"))
        }
        "unfold" => unfold(args),
        "select_scatter" | "slice_scatter" => scatter_slice(name, args),
        "repeat" => repeat(args),
        // `x.copy_(src)`, functionalized: `src` in x's shape and dtype
        "copy" | "copy_" => (|| {
            let (x, src) = (args.tensor(0, "self")?, args.tensor(1, "src")?);
            src.broadcast_as(x.shape())?.to_dtype(x.dtype())
        })(),
        "pixel_shuffle" => (|| {
            let x = args.tensor(0, "self")?;
            candle_nn::ops::pixel_shuffle(&x, usize_arg(args.int_or(1, "upscale_factor", 1)?)?)
        })(),
        "pixel_unshuffle" => (|| {
            let x = args.tensor(0, "self")?;
            candle_nn::ops::pixel_unshuffle(&x, usize_arg(args.int_or(1, "downscale_factor", 1)?)?)
        })(),
        // contents undefined in torch: zeros, so what reads it runs (dropout's `bernoulli`
        // then says it is random, rather than its `expand` failing on no value)
        "empty" => (|| {
            let shape = usizes(&args.ints_or(0, "size", &[])?)?;
            Tensor::zeros(
                shape,
                dtype_kwarg_or(args, DType::F32)?,
                &candle_core::Device::Cpu,
            )
        })(),
        "zeros_like" | "ones_like" | "full_like" => full_like(name, args),
        // contents undefined in torch (written before read): zeros, as for `empty`
        "empty_like" => full_like("zeros_like", args),
        "new_zeros" | "new_ones" | "new_full" | "new_empty" | "new_empty_strided" => {
            new_full(name, args)
        }
        "channel_shuffle" | "native_channel_shuffle" => (|| {
            let x = args.tensor(0, "self")?;
            channel_shuffle(&x, usize_arg(args.int_or(1, "groups", 1)?)?)
        })(),
        // `x.zero_()` / `x.fill_(v)`, functionalized: a new tensor shaped as x
        "zero" => full_like("zeros_like", args),
        "fill" => full_like("full_like", args),
        _ => return None,
    };
    Some(r.map(Value::Tensor))
}

fn dims_of(dims: &[i64], rank: usize) -> Result<Vec<usize>> {
    dims.iter().map(|&d| dim(d, rank)).collect()
}

/// `torch.flip(x, dims)`: candle's `Tensor::flip` (an `index_select` per dim) of a contiguous
/// copy, since candle's `index_select` reads only a contiguous source.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[0.0f64, 1.0], [2.0, 3.0]], &Device::Cpu)?;
/// let y = candle_port_run::ops::shape::flip(&x.t()?, &[1])?;
/// assert_eq!(y.to_vec2::<f64>()?, [[2.0, 0.0], [3.0, 1.0]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn flip(x: &Tensor, dims: &[usize]) -> Result<Tensor> {
    x.contiguous()?.flip(dims)
}

/// `torch.roll(x, shifts, dims)`: candle's `Tensor::roll` (narrow and cat) once per shift; without
/// dims torch rolls the flattened tensor and restores the shape.
///
/// ```
/// use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[0.0f64, 1.0, 2.0], [3.0, 4.0, 5.0]], &Device::Cpu)?;
/// let y = candle_port_run::ops::shape::roll(&x, &[1], &[])?;
/// assert_eq!(y.to_vec2::<f64>()?, [[5.0, 0.0, 1.0], [2.0, 3.0, 4.0]]);
/// let y = candle_port_run::ops::shape::roll(&x, &[1, -1], &[0, 1])?;
/// assert_eq!(y.to_vec2::<f64>()?, [[4.0, 5.0, 3.0], [1.0, 2.0, 0.0]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn roll(x: &Tensor, shifts: &[i64], dims: &[usize]) -> Result<Tensor> {
    let shift = |s: i64, n: usize| -> Result<i32> {
        i32::try_from(s.rem_euclid(n.max(1) as i64))
            .map_err(|_| candle_core::Error::Msg(format!("roll: shift {s} too large")))
    };
    if dims.is_empty() {
        let [s] = shifts else {
            bail!("roll without dims takes one shift, got {shifts:?}")
        };
        let flat = x.flatten_all()?;
        return flat
            .roll(shift(*s, flat.elem_count())?, 0)?
            .reshape(x.shape());
    }
    if shifts.len() != dims.len() {
        bail!("roll: {} shifts for {} dims", shifts.len(), dims.len())
    }
    let mut y = x.clone();
    for (&s, &d) in shifts.iter().zip(dims) {
        y = y.roll(shift(s, x.dims()[d])?, d)?;
    }
    Ok(y)
}

/// `select_scatter(self, src, dim, index)` and `slice_scatter(self, src, dim, start, end, step 1)`:
/// `self` with `src` written at the index or slice (an in-place write to a view, functionalized:
/// `flow[:, 0] *= s`); candle's `slice_scatter`, whose backward splits the gradient.
fn scatter_slice(name: &str, a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let src = a.tensor(1, "src")?;
    let d = dim(a.int_or(2, "dim", 0)?, x.rank())?;
    let size = x.dims()[d] as i64;
    let at = |i: i64| if i < 0 { i + size } else { i };
    if name == "select_scatter" {
        let i = at(a.int_or(3, "index", 0)?);
        return x.slice_scatter(&src.unsqueeze(d)?, d, i as usize);
    }
    if a.int_or(5, "step", 1)? != 1 {
        bail!("slice_scatter with a step other than 1")
    }
    let start = a.opt_int(3, "start")?.map(at).unwrap_or(0).clamp(0, size);
    x.slice_scatter(&src, d, start as usize)
}

/// `F.channel_shuffle(x, g)`: `(N, C, *)` viewed as `(N, g, C / g, *)`, the two group dims
/// swapped, and flattened back (reshape and transpose, as the op table's probe).
fn channel_shuffle(x: &Tensor, groups: usize) -> Result<Tensor> {
    let dims = x.dims();
    if dims.len() < 2 || dims[1] % groups != 0 {
        bail!("channel_shuffle: {groups} groups for the shape {dims:?}")
    }
    let mut grouped = vec![dims[0], groups, dims[1] / groups];
    grouped.extend_from_slice(&dims[2..]);
    x.reshape(grouped)?
        .transpose(1, 2)?
        .contiguous()?
        .reshape(dims)
}

/// A positive factor from the graph (`upscale_factor`, ...), as a `usize`.
fn usize_arg(v: i64) -> Result<usize> {
    if v < 1 {
        bail!("factor {v} must be at least 1")
    }
    Ok(v as usize)
}

fn sizes(want: &[i64], count: usize) -> Result<Vec<usize>> {
    let known: i64 = want.iter().filter(|&&d| d >= 0).product();
    want.iter()
        .map(|&d| {
            if d < 0 {
                Ok(count / known.max(1) as usize)
            } else {
                Ok(d as usize)
            }
        })
        .collect()
}

fn reshape(a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let shape = sizes(&a.ints_or(1, "size", &[])?, x.elem_count())?;
    x.reshape(shape)
}

fn expand(a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let want = a.ints_or(1, "size", &[])?;
    let offset = want.len() - x.rank();
    let shape: Vec<usize> = want
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            if d < 0 {
                x.dims()[i - offset]
            } else {
                d as usize
            }
        })
        .collect();
    x.broadcast_as(shape)
}

fn slice(a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let d = dim(a.int_or(1, "dim", 0)?, x.rank())?;
    let n = x.dims()[d] as i64;
    let clip = |v: i64| if v < 0 { (v + n).max(0) } else { v.min(n) };
    let start = clip(a.int_or(2, "start", 0)?);
    let end = clip(a.int_or(3, "end", n)?).max(start);
    let step = a.int_or(4, "step", 1)?;
    let y = x.narrow(d, start as usize, (end - start) as usize)?;
    if step == 1 {
        return Ok(y);
    }
    let idx: Vec<u32> = (0..(end - start) as u32).step_by(step as usize).collect();
    // candle's index_select reads only a contiguous source (a narrowed window of a strided one is not)
    y.contiguous()?
        .index_select(&Tensor::new(idx, x.device())?, d)
}

/// `x.repeat(sizes)`: more sizes than dims prepend dims of 1, as torch does.
fn repeat(a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let sizes = usizes(&a.ints_or(1, "repeats", &[])?)?;
    if sizes.len() < x.rank() {
        bail!("repeat with {} sizes for {} dims", sizes.len(), x.rank())
    }
    let mut shape = vec![1; sizes.len() - x.rank()];
    shape.extend_from_slice(x.dims());
    x.reshape(shape)?.repeat(sizes)
}

fn squeeze(a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let dims = match a.opt_ints(1, "dim")? {
        Some(d) => d
            .iter()
            .map(|&d| dim(d, x.rank()))
            .collect::<Result<Vec<_>>>()?,
        None => (0..x.rank()).filter(|&d| x.dims()[d] == 1).collect(),
    };
    let mut y = x;
    for d in dims.into_iter().rev() {
        if y.dims()[d] == 1 {
            y = y.squeeze(d)?;
        }
    }
    Ok(y)
}

/// `as_strided(x, size, stride, offset)` reads x's torch storage, which candle does not have:
/// the exporter resolves the read positions against x's strides in torch and passes them as
/// `__index` (flat logical indices of x), so this is an `index_select` and differentiates.
fn as_strided(a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let size: Vec<usize> = a
        .ints_or(1, "size", &[])?
        .iter()
        .map(|&d| d as usize)
        .collect();
    let Some(index) = a.opt_tensor(usize::MAX, "__index")? else {
        bail!("as_strided reads torch storage outside its input's elements: no candle equivalent")
    };
    x.flatten_all()?.index_select(&index, 0)?.reshape(size)
}

fn dropout(name: &str, a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "input")?;
    let p = a.float_or(1, "p", 0.0)?;
    let train = a.bool_or(2, "train", false)?;
    if train && p > 0.0 {
        bail!("{name} in training mode is random; verify in eval mode (--eval)")
    }
    Ok(x)
}

fn dtype_of(name: &str) -> Result<DType> {
    Ok(match name {
        "float32" => DType::F32,
        "float64" => DType::F64,
        "float16" => DType::F16,
        "bfloat16" => DType::BF16,
        "int64" => DType::I64,
        "uint8" | "bool" => DType::U8,
        "uint32" => DType::U32,
        other => bail!("candle has no dtype {other}"),
    })
}

fn to_dtype(a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    match a
        .node
        .kwargs
        .get("dtype")
        .and_then(|d| d.get("dtype"))
        .and_then(|d| d.as_str())
    {
        Some(name) => x.to_dtype(dtype_of(name)?),
        None => Ok(x),
    }
}

fn split(op: &str, a: &Args) -> Result<Value> {
    let x = a.tensor(0, "self")?;
    let d = dim(a.int_or(2, "dim", 0)?, x.rank())?;
    let n = x.dims()[d];
    let parts = if op.contains("split_with_sizes") {
        usizes(&a.ints_or(1, "split_sizes", &[])?)?
    } else {
        let size = (a.int_or(1, "split_size", n as i64)? as usize).max(1);
        (0..n).step_by(size).map(|s| size.min(n - s)).collect()
    };
    let mut start = 0;
    let mut out = Vec::with_capacity(parts.len());
    for len in parts {
        out.push(Some(x.narrow(d, start, len)?));
        start += len;
    }
    Ok(Value::Tuple(out))
}

fn select_along(x: &Tensor, d: usize, idx: Vec<u32>) -> Result<Tensor> {
    let n = idx.len();
    x.contiguous()?
        .index_select(&Tensor::from_vec(idx, n, x.device())?, d)
}

/// Reflection / replication padding as an `index_select` along each padded dim (differentiable;
/// candle has `pad_with_same` but no reflection).
fn index_pad(a: &Args, reflect: bool) -> Result<Tensor> {
    let mut y = a.tensor(0, "self")?;
    let pad = a.ints_or(1, "padding", &[])?;
    for (i, pair) in pad.chunks(2).enumerate() {
        let d = y.rank() - 1 - i;
        let n = y.dims()[d] as i64;
        let (l, r) = (pair[0], pair.get(1).copied().unwrap_or(0));
        if l < 0 || r < 0 || (reflect && (l >= n || r >= n)) {
            bail!("padding {pair:?} does not fit a dimension of size {n}");
        }
        let at = |i: i64| -> u32 {
            let i = if reflect {
                if i < 0 {
                    -i
                } else if i >= n {
                    2 * (n - 1) - i
                } else {
                    i
                }
            } else {
                i.clamp(0, n - 1)
            };
            i as u32
        };
        y = select_along(&y, d, (-l..n + r).map(at).collect())?;
    }
    Ok(y)
}

/// `Tensor.unfold(dim, size, step)`: windows along `dim` as a new last dim, by `index_select`
/// (candle's own `unfold` has no working backward: measured in `measure.rs`).
fn unfold(a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let d = dim(a.int_or(1, "dimension", 0)?, x.rank())?;
    let size = a.int_or(2, "size", 1)? as usize;
    let step = a.int_or(3, "step", 1)? as usize;
    let n = x.dims()[d];
    if size > n || step == 0 {
        bail!("unfold: size {size} and step {step} do not fit a dimension of size {n}");
    }
    let count = (n - size) / step + 1;
    let idx = (0..count)
        .flat_map(|i| (0..size).map(move |j| (i * step + j) as u32))
        .collect();
    let y = select_along(&x, d, idx)?;
    let mut shape = x.dims().to_vec();
    shape[d] = count;
    shape.insert(d + 1, size);
    let y = y.reshape(shape)?;
    let mut order: Vec<usize> = (0..y.rank()).filter(|&i| i != d + 1).collect();
    order.push(d + 1);
    y.permute(order)
}

fn constant_pad(a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let pad = a.ints_or(1, "pad", &[])?;
    let value = a.float_or(2, "value", 0.0)?;
    let mut y = x;
    for (i, pair) in pad.chunks(2).enumerate() {
        let d = y.rank() - 1 - i;
        let (l, r) = (pair[0], pair.get(1).copied().unwrap_or(0));
        if l < 0 || r < 0 {
            let n = y.dims()[d] as i64;
            let (s, e) = ((-l).max(0), n - (-r).max(0));
            y = y.narrow(d, s as usize, (e - s) as usize)?;
        }
        let (l, r) = (l.max(0) as usize, r.max(0) as usize);
        if value == 0.0 {
            y = y.pad_with_zeros(d, l, r)?;
        } else if l + r > 0 {
            let mut parts = Vec::new();
            let block = |k: usize| -> Result<Tensor> {
                let mut shape = y.dims().to_vec();
                shape[d] = k;
                Tensor::full(value, shape, y.device())?.to_dtype(y.dtype())
            };
            if l > 0 {
                parts.push(block(l)?);
            }
            parts.push(y.clone());
            if r > 0 {
                parts.push(block(r)?);
            }
            y = Tensor::cat(&parts, d)?;
        }
    }
    Ok(y)
}

fn full_like(name: &str, a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let value = match name {
        "zeros_like" => 0.0,
        "ones_like" => 1.0,
        _ => a.float_or(1, "fill_value", 0.0)?,
    };
    Tensor::full(value, x.shape(), x.device())?.to_dtype(dtype_kwarg_or(a, x.dtype())?)
}

/// `x.new_zeros(size)` and its kin: a tensor of `size` in `x`'s dtype (or the `dtype` given) and
/// device; `new_empty` is filled with zeros (its values are never read before written).
fn new_full(name: &str, a: &Args) -> Result<Tensor> {
    let x = a.tensor(0, "self")?;
    let shape = usizes(&a.ints_or(1, "size", &[])?)?;
    let value = match name {
        "new_ones" => 1.0,
        "new_full" => a.float_or(2, "fill_value", 0.0)?,
        _ => 0.0,
    };
    Tensor::full(value, shape, x.device())?.to_dtype(dtype_kwarg_or(a, x.dtype())?)
}

/// The node's `dtype` keyword as a candle dtype, else `default`.
pub(crate) fn dtype_kwarg_or(a: &Args, default: DType) -> Result<DType> {
    match a
        .node
        .kwargs
        .get("dtype")
        .and_then(|d| d.get("dtype"))
        .and_then(|d| d.as_str())
    {
        Some(n) => dtype_of(n),
        None => Ok(default),
    }
}

fn unbind(a: &Args) -> Result<Value> {
    let x = a.tensor(0, "self")?;
    let d = dim(a.int_or(1, "dim", 0)?, x.rank())?;
    (0..x.dims()[d])
        .map(|i| Ok(Some(x.narrow(d, i, 1)?.squeeze(d)?)))
        .collect::<Result<Vec<_>>>()
        .map(Value::Tuple)
}
