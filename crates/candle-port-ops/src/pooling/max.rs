//! Max pooling: one `gather` on the gradient path, the choice made without gradient.

use candle_core::{bail, DType, Result, Tensor};

use super::input::{batched, shape};
use super::options::{Kind, Pool};
use super::windows::{max_rows, WindowTable};
use crate::kernels;

/// Max over the windows of `table` on `x` (n, c, *spatial): `(values (n, c, *out), flat
/// indices u32)`.
///
/// On the CPU (f32, f64) this is one kernel pass ([`kernels::window_max`]). Elsewhere the choice
/// is made without gradient: `pick = argmax over each window` of a detached copy
/// (candle keeps the first maximum, as torch), corrected to the window's last NaN where a
/// window holds NaN (torch's `val > max || isnan(val)`), then `idx = table[pick + K * p]`.
/// The output is `x.reshape(n*c, plane).gather(idx, 1)`: gather's backward scatters the output
/// gradient to the chosen element only, which is torch's max-pool backward.
pub(crate) fn max_by_table(x: &Tensor, table: &WindowTable, out: &[usize]) -> Result<MaxPooled> {
    let (n, c) = (x.dim(0)?, x.dim(1)?);
    let nc = n * c;
    let plane: usize = x.dims()[2..].iter().product();
    let (p, k) = (table.windows, table.size);
    let out_shape = shape(n, c, out);
    if nc == 0 || p == 0 {
        let values = Tensor::zeros(out_shape.clone(), x.dtype(), x.device())?;
        let index = Tensor::zeros(out_shape, DType::U32, x.device())?;
        return Ok(MaxPooled::chosen(values, index));
    }
    if let Some(axes) = table.axes.as_ref().filter(|_| kernels::apply_to(x)) {
        let xf = x.reshape((nc, plane))?;
        let values = kernels::window_max(&xf, axes)?;
        return Ok(MaxPooled {
            values: values.reshape(out_shape.clone())?,
            index: Index::Later {
                x: xf,
                values,
                axes: axes.clone(),
                shape: out_shape,
            },
        });
    }
    let nan = has_nan(x)?;
    let xf = x.reshape((nc, plane))?;
    let index = match &table.tiles {
        Some(kernel) => {
            // Disjoint tiles: the windows are a reshape (and, in 2-D, a permute) of the input.
            let win = tiled_windows(&x.detach(), kernel, out)?.reshape((nc, p, k))?;
            let pick = choose(&win, 2, &table.positions.reshape((1, 1, k))?, nan)?;
            let pick = pick.broadcast_add(&table.base)?.flatten_all()?;
            table.flat.index_select(&pick, 0)?.reshape((nc, p))?
        }
        None => {
            // Any windows: index_select on a plane-major copy (plane, n*c) copies whole rows
            // (along the last dim candle's index_select goes element by element, slower).
            let xt = xf.detach().t()?.contiguous()?;
            let win = xt.index_select(&table.flat, 0)?.reshape((p, k, nc))?;
            let pick = choose(&win, 1, &table.positions.reshape((1, k, 1))?, nan)?;
            let pick = pick
                .broadcast_add(&table.base.reshape((p, 1))?)?
                .flatten_all()?;
            let index = table.flat.index_select(&pick, 0)?;
            index.reshape((p, nc))?.t()?.contiguous()?
        }
    };
    let values = xf.gather(&index, 1)?;
    Ok(MaxPooled::chosen(
        values.reshape(out_shape.clone())?,
        index.reshape(out_shape)?,
    ))
}

/// A max pool's values, and torch's indices (u32) when asked for: the CPU kernel finds them
/// only then, the composition has them already.
pub(crate) struct MaxPooled {
    pub values: Tensor,
    index: Index,
}

enum Index {
    Chosen(Tensor),
    Later {
        x: Tensor,
        values: Tensor,
        axes: std::sync::Arc<kernels::AxisWindows>,
        shape: Vec<usize>,
    },
}

impl MaxPooled {
    fn chosen(values: Tensor, index: Tensor) -> Self {
        MaxPooled {
            values,
            index: Index::Chosen(index),
        }
    }

    /// The chosen plane positions, shaped as the values.
    pub fn index(&self) -> Result<Tensor> {
        match &self.index {
            Index::Chosen(index) => Ok(index.clone()),
            Index::Later {
                x,
                values,
                axes,
                shape,
            } => kernels::window_argmax(x, values, axes)?.reshape(shape.as_slice()),
        }
    }

    /// `(values, indices as i64)`, as the `*_with_indices` ops return them.
    pub fn with_indices(self) -> Result<(Tensor, Tensor)> {
        let index = self.index()?.to_dtype(DType::I64)?;
        Ok((self.values, index))
    }
}

/// The window-local position of each window's maximum along `dim` of `win` (u32, `dim`
/// removed); with `nan`, a window holding NaN picks its last NaN (`positions` = `1..=K`,
/// shaped to broadcast along `dim`), as torch.
fn choose(win: &Tensor, dim: usize, positions: &Tensor, nan: bool) -> Result<Tensor> {
    let pick = win.argmax_keepdim(dim)?;
    let pick = if nan {
        // candle's argmax skips NaN (and keeps a leading one): pick the last NaN instead.
        let marks = win
            .ne(win)?
            .to_dtype(DType::U32)?
            .broadcast_mul(positions)?;
        let any = marks.max_keepdim(dim)?.gt(0u32)?;
        any.where_cond(&marks.argmax_keepdim(dim)?, &pick)?
    } else {
        pick
    };
    pick.squeeze(dim)
}

/// The disjoint `kernel` tiles of `x` (n, c, *spatial) as (n*c, *out, K), row-major inside
/// each tile (the remainder past the last tile dropped, as torch's floor mode).
fn tiled_windows(x: &Tensor, kernel: &[usize], out: &[usize]) -> Result<Tensor> {
    let nc = x.dim(0)? * x.dim(1)?;
    match (kernel, out) {
        ([k], [o]) => x.narrow(2, 0, o * k)?.reshape((nc, *o, *k)),
        ([kh, kw], [oh, ow]) => {
            let x = x.narrow(2, 0, oh * kh)?.narrow(3, 0, ow * kw)?;
            let x = x
                .reshape((nc, *oh, *kh, *ow, *kw))?
                .permute((0, 1, 3, 2, 4))?;
            x.contiguous()?.reshape((nc, oh * ow, kh * kw))
        }
        _ => candle_core::bail!("pooling: tiles are 1-D or 2-D"),
    }
}

/// Whether `x` may hold NaN (its sum is NaN; `inf - inf` only costs the correction).
fn has_nan(x: &Tensor) -> Result<bool> {
    let s = x
        .detach()
        .sum_all()?
        .to_dtype(DType::F64)?
        .to_scalar::<f64>()?;
    Ok(s.is_nan())
}

pub(crate) fn max_pool(x: &Tensor, p: &Pool, nd: usize, op: &str) -> Result<MaxPooled> {
    let (_, _, sizes) = batched(x, nd, op)?;
    let axes = p.axes(op, Kind::Max, &sizes)?;
    let mut rows = Vec::with_capacity(nd);
    for axis in &axes {
        match max_rows(axis) {
            Some(r) => rows.push(r),
            None => bail!(
                "{op}: a window holds no element of the input (dilation {:?} steps over it; torch returns -inf there), not supported",
                p.dilation
            ),
        }
    }
    let table = WindowTable::new(&rows, &sizes, x.device())?;
    let out: Vec<usize> = axes.iter().map(|a| a.output).collect();
    max_by_table(x, &table, &out)
}

/// `F.max_pool1d`: `out[n, c, i] = max_j x[n, c, i*s - p + j*d]` for `j < k` over the positions
/// inside the input (the padding is -inf).
///
/// Input (N, C, L), output (N, C, L_out) with
/// `L_out = floor((L + 2p - d(k-1) - 1 + (ceil_mode ? s-1 : 0)) / s) + 1`, less one in ceil mode
/// when the last window would start past the input and the left padding. Ties pick the first
/// maximum, a window with NaN gives NaN (its last NaN), as torch; the gradient goes to the chosen
/// element only. Errors as torch for padding above half the kernel and empty outputs.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::{max_pool1d, Pool};
/// let x = Tensor::new(&[[[1f32, 3., 2., 5., 4.]]], &Device::Cpu)?;
/// let y = max_pool1d(&x, &Pool::new(&[2]).stride(&[1]))?;
/// assert_eq!(y.to_vec3::<f32>()?, vec![vec![vec![3., 3., 5., 5.]]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn max_pool1d(x: &Tensor, p: &Pool) -> Result<Tensor> {
    Ok(max_pool(x, p, 1, "max_pool1d")?.values)
}

/// `F.max_pool2d`: `out[n, c, i, j] = max_{a, b} x[n, c, i*s_h - p_h + a*d_h, j*s_w - p_w + b*d_w]`
/// over the positions inside the input (the padding is -inf).
///
/// Input (N, C, H, W), output (N, C, H_out, W_out), each size as in [`max_pool1d`]. Ties pick
/// the first maximum in row-major window order, NaN wins (the window's last NaN), the gradient
/// goes to the chosen element only, as torch.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::{max_pool2d, Pool};
/// let x = Tensor::arange(0f32, 16., &Device::Cpu)?.reshape((1, 1, 4, 4))?;
/// let y = max_pool2d(&x, &Pool::new(&[2]))?;
/// assert_eq!(y.flatten_all()?.to_vec1::<f32>()?, vec![5., 7., 13., 15.]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn max_pool2d(x: &Tensor, p: &Pool) -> Result<Tensor> {
    Ok(max_pool(x, p, 2, "max_pool2d")?.values)
}

/// [`max_pool1d`] with torch's indices: the position in L of each chosen element, `i64`.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::{max_pool1d_with_indices, Pool};
/// let x = Tensor::new(&[[[1f32, 3., 2., 5., 4.]]], &Device::Cpu)?;
/// let (_, i) = max_pool1d_with_indices(&x, &Pool::new(&[2]))?;
/// assert_eq!(i.to_vec3::<i64>()?, vec![vec![vec![1, 3]]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn max_pool1d_with_indices(x: &Tensor, p: &Pool) -> Result<(Tensor, Tensor)> {
    max_pool(x, p, 1, "max_pool1d_with_indices")?.with_indices()
}

/// [`max_pool2d`] with torch's indices: `h * W + w` of each chosen element in its plane, `i64`.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::{max_pool2d_with_indices, Pool};
/// let x = Tensor::arange(0f32, 16., &Device::Cpu)?.reshape((1, 1, 4, 4))?;
/// let (_, i) = max_pool2d_with_indices(&x, &Pool::new(&[2]))?;
/// assert_eq!(i.flatten_all()?.to_vec1::<i64>()?, vec![5, 7, 13, 15]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn max_pool2d_with_indices(x: &Tensor, p: &Pool) -> Result<(Tensor, Tensor)> {
    max_pool(x, p, 2, "max_pool2d_with_indices")?.with_indices()
}
