//! Average pooling: one matmul per axis with a window matrix weighted by torch's divisor.

use candle_core::{DType, Result, Tensor};

use super::input::{batched, shape};
use super::options::{Kind, Pool};
use super::windows::{avg_bounds, mean_matrix};
use crate::kernels;
use crate::taps::{all_finite, Taps};

/// `x` (n, c, *spatial) summed over windows: `mats[a]` is axis a's (in, out) window matrix.
///
/// 1-D: `x @ M`. 2-D: `x @ M_w` along W, then H brought last by a transpose (a copy) and
/// `@ M_h`, then transposed back: plain 2-D matmuls only (candle 0.11's CPU batched matmul is
/// wrong for a broadcast left operand, and its batched backward is slow). Backward: `A^T` per
/// axis, torch's even spread of each window's gradient.
pub(crate) fn window_sums(x: &Tensor, mats: &[Tensor]) -> Result<Tensor> {
    let (n, c) = (x.dim(0)?, x.dim(1)?);
    if mats.len() == 3 {
        // 3-D: the 2-D sums of each depth slice, then D brought last and `@ M_d`.
        let (d, h, w) = (x.dim(2)?, x.dim(3)?, x.dim(4)?);
        let (d_out, ho, wo) = (mats[0].dim(1)?, mats[1].dim(1)?, mats[2].dim(1)?);
        let y = window_sums(&x.reshape((n, c * d, h, w))?, &mats[1..])?;
        let y = y
            .reshape((n * c, d, ho * wo))?
            .transpose(1, 2)?
            .contiguous()?;
        let y = y.reshape((n * c * ho * wo, d))?.matmul(&mats[0])?;
        return y
            .reshape((n * c, ho * wo, d_out))?
            .transpose(1, 2)?
            .reshape((n, c, d_out, ho, wo));
    }
    let w_mat = &mats[mats.len() - 1];
    let (w, wo) = w_mat.dims2()?;
    let rows = x.elem_count() / w;
    let y = x.reshape((rows, w))?.matmul(w_mat)?;
    if mats.len() == 1 {
        return y.reshape((n, c, wo));
    }
    let (h, ho) = mats[0].dims2()?;
    let y = y.reshape((n * c, h, wo))?.transpose(1, 2)?.contiguous()?;
    let y = y.reshape((n * c * wo, h))?.matmul(&mats[0])?;
    y.reshape((n * c, wo, ho))?
        .transpose(1, 2)?
        .reshape((n, c, ho, wo))
}

/// Mean over windows: `window_sums` with each axis's matrix weighted by its share of torch's
/// divisor (`1 / count` per axis, or `1 / divisor_override` on the last axis), so no division
/// op (whose backward would also differentiate the constant divisor). f16 / bf16 input is
/// computed in f32 and rounded once at the end, as ATen accumulates these in f32.
pub(crate) fn mean_by_matrices(
    x: &Tensor,
    bounds: &[Vec<(usize, usize)>],
    counts: &[Vec<usize>],
    overridden: Option<usize>,
) -> Result<Tensor> {
    let (n, c) = (x.dim(0)?, x.dim(1)?);
    let out: Vec<usize> = bounds.iter().map(Vec::len).collect();
    if n * c == 0 || out.contains(&0) {
        return Tensor::zeros(shape(n, c, &out), x.dtype(), x.device());
    }
    let dtype = x.dtype();
    let compute = match dtype {
        DType::F16 | DType::BF16 => DType::F32,
        other => other,
    };
    let sizes = &x.dims()[2..];
    let last = bounds.len() - 1;
    let factors: Vec<Vec<f64>> = (0..bounds.len())
        .map(|a| match overridden {
            Some(d) if a == last => vec![d as f64; out[a]],
            Some(_) => vec![1.0; out[a]],
            None => counts[a].iter().map(|&k| k as f64).collect(),
        })
        .collect();
    let x = x.to_dtype(compute)?;
    if kernels::apply_to(&x) {
        // The CPU kernels: each window's own elements, weighted by torch's divisor.
        let taps: Vec<Option<Taps>> = (0..bounds.len())
            .map(|a| Some(window_taps(sizes[a], &bounds[a], &factors[a])))
            .collect();
        let y = kernels::resample_axes(&x, &taps)?.unwrap_or(x.clone());
        return y.to_dtype(dtype);
    }
    if let Some(kernel) = tile_kernels(bounds, &factors) {
        return mean_of_tiles(&x, &kernel, &factors)?.to_dtype(dtype);
    }
    if !all_finite(&x)? {
        return mean_by_taps(&x, bounds, &factors)?.to_dtype(dtype);
    }
    let mats = (0..bounds.len())
        .map(|a| mean_matrix(&bounds[a], &factors[a], sizes[a], compute, x.device()))
        .collect::<Result<Vec<_>>>()?;
    window_sums(&x, &mats)?.to_dtype(dtype)
}

/// Each axis's kernel when its windows are disjoint tiles `[o*k, o*k + k)` (kernel == stride, no
/// padding reached) with one divisor factor, so the means are a reshape and a sum.
fn tile_kernels(bounds: &[Vec<(usize, usize)>], factors: &[Vec<f64>]) -> Option<Vec<usize>> {
    bounds
        .iter()
        .zip(factors)
        .map(|(axis, factor)| {
            let k = axis.first().map(|(lo, hi)| hi - lo)?;
            let tiles = k > 0
                && axis
                    .iter()
                    .enumerate()
                    .all(|(o, &b)| b == (o * k, o * k + k));
            let uniform = factor.iter().all(|&f| f == factor[0]);
            (tiles && uniform).then_some(k)
        })
        .collect()
}

/// Means over disjoint tiles: `x` cut to whole tiles; per axis, seen as `(.., o, k, rest)` and
/// summed over `k` by `k - 1` adds of strided views (candle's `sum` over a dim, and the window
/// matrices, measured 5-20x slower forward in benches/speed.rs), then scaled by
/// `1 / divisor` (torch's divisor: the product of the per-axis factors). Each window reads only
/// its own elements, so inf and NaN land where torch's do.
fn mean_of_tiles(x: &Tensor, kernel: &[usize], factors: &[Vec<f64>]) -> Result<Tensor> {
    let mut y = x.clone();
    for (a, &k) in kernel.iter().enumerate().rev() {
        let d = 2 + a;
        let dims = y.dims().to_vec();
        let o = dims[d] / k;
        if o * k != dims[d] {
            y = y.narrow(d, 0, o * k)?;
        }
        let rest: usize = dims[d + 1..].iter().product();
        let mut split = dims[..d].to_vec();
        split.extend([o, k]);
        split.push(rest);
        let tiles = y.contiguous()?.reshape(split)?;
        let mut sums = tiles.narrow(d + 1, 0, 1)?;
        for i in 1..k {
            sums = (sums + tiles.narrow(d + 1, i, 1)?)?;
        }
        let mut out = dims.clone();
        out[d] = o;
        y = sums.reshape(out)?;
    }
    let divisor: f64 = factors
        .iter()
        .map(|f| if f[0] == 0.0 { 1.0 } else { f[0] })
        .product();
    y * (1.0 / divisor)
}

/// The same means by taps, for an input holding inf or NaN: each window
/// adds only its own elements (a window matrix would add `0 * inf = NaN` into every window of the
/// line), last axis first, as ATen's kernels sum a window row by row.
fn mean_by_taps(
    x: &Tensor,
    bounds: &[Vec<(usize, usize)>],
    factors: &[Vec<f64>],
) -> Result<Tensor> {
    let mut y = x.clone();
    for a in (0..bounds.len()).rev() {
        let taps = window_taps(x.dim(2 + a)?, &bounds[a], &factors[a]);
        y = taps.apply(&y, 2 + a, false)?;
    }
    Ok(y)
}

/// One axis's windows as taps weighted by `1 / factor` (an empty window's 0 counts as 1).
fn window_taps(input: usize, bounds: &[(usize, usize)], factors: &[f64]) -> Taps {
    let weight: Vec<f64> = factors
        .iter()
        .map(|&f| if f == 0.0 { 1.0 } else { 1.0 / f })
        .collect();
    Taps::windows(input, bounds, &weight)
}

pub(crate) fn avg_pool(x: &Tensor, p: &Pool, nd: usize, op: &str) -> Result<Tensor> {
    let (_, _, sizes) = batched(x, nd, op)?;
    let axes = p.axes(op, Kind::Avg, &sizes)?;
    let (bounds, counts): (Vec<_>, Vec<_>) = axes
        .iter()
        .map(|a| avg_bounds(a, p.count_include_pad))
        .unzip();
    mean_by_matrices(x, &bounds, &counts, p.divisor_override)
}

/// `F.avg_pool1d`: `out[n, c, i] = sum_{q in window i} x[n, c, q] / D_i`, window
/// `i` = `[i*s - p, i*s - p + k)` on the zero-padded input.
///
/// `D_i` is torch's divisor: `divisor_override` if set (torch's `avg_pool1d` has none; it is
/// honoured here), else with `count_include_pad` the window clipped to the padded input
/// `min(i*s - p + k, L + p) - (i*s - p)`, else the number of in-bound elements. Output size as
/// [`max_pool1d`](crate::max_pool1d) with dilation 1 (which must be 1). f16 / bf16 are summed in f32.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::{avg_pool1d, Pool};
/// let x = Tensor::new(&[[[1f64, 2., 3., 4.]]], &Device::Cpu)?;
/// let y = avg_pool1d(&x, &Pool::new(&[2]).padding(&[1]).count_include_pad(false))?;
/// assert_eq!(y.to_vec3::<f64>()?, vec![vec![vec![1., 2.5, 4.]]]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn avg_pool1d(x: &Tensor, p: &Pool) -> Result<Tensor> {
    avg_pool(x, p, 1, "avg_pool1d")
}

/// `F.avg_pool2d`: `out[n, c, i, j] = sum_{(a, b) in window (i, j)} x[n, c, a, b] / D_ij`, windows
/// `[i*s_h - p_h, +k_h) x [j*s_w - p_w, +k_w)` on the zero-padded input.
///
/// `D_ij` = `divisor_override`, else the product of the per-axis factors of [`avg_pool1d`]
/// (torch's `(hend - hstart) * (wend - wstart)`). Computed as `M_h^T x M_w` with per-axis window
/// matrices holding `1 / factor` at each window's in-bound inputs, so the gradient is each
/// window's `G / D` spread over its in-bound elements, as torch's. Equal to torch up to float
/// rounding (other summation order, divisor applied as reciprocal weights): within 2e-7
/// relative in f32 and 5e-16 in f64 on the shared test vectors.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::{avg_pool2d, Pool};
/// let x = Tensor::ones((1, 1, 3, 3), candle_core::DType::F64, &Device::Cpu)?;
/// let y = avg_pool2d(&x, &Pool::new(&[3]).stride(&[1]).padding(&[1]))?;
/// let corner = y.flatten_all()?.to_vec1::<f64>()?[0]; // 4 inputs, divisor 9 (padding counts)
/// assert!((corner - 4. / 9.).abs() < 1e-15);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn avg_pool2d(x: &Tensor, p: &Pool) -> Result<Tensor> {
    avg_pool(x, p, 2, "avg_pool2d")
}
