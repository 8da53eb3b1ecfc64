//! Host-built constants: index tables of the max pools and 0/1 window matrices and divisors of
//! the average pools. They depend on sizes and arguments only and carry no gradient.

use candle_core::{bail, DType, Device, Result, Tensor};

use super::options::Axis;

/// The input positions that window `o` of `axis` reads, `K = kernel` of them. Positions
/// outside the input become the window's first (before it) or last (after it) in-bound
/// position: duplicates never change a max, a first-maximum scan over them is the first maximum
/// of the in-bound elements, and the last NaN stays the last. `None` if a window holds no
/// in-bound position (torch then returns -inf with an index outside the window).
pub(crate) fn max_rows(axis: &Axis) -> Option<Vec<Vec<usize>>> {
    let n = axis.input as i64;
    (0..axis.output)
        .map(|o| {
            let start = axis.start(o);
            let pos: Vec<i64> = (0..axis.kernel)
                .map(|j| start + (j * axis.dilation) as i64)
                .collect();
            let first = *pos.iter().find(|&&q| (0..n).contains(&q))?;
            let last = *pos.iter().rev().find(|&&q| (0..n).contains(&q))?;
            Some(pos.iter().map(|&q| q.clamp(first, last) as usize).collect())
        })
        .collect()
}

/// ATen's adaptive windows `[floor(i * n / out), ceil((i + 1) * n / out))`.
pub(crate) fn adaptive_bounds(n: usize, out: usize) -> Vec<(usize, usize)> {
    (0..out)
        .map(|i| ((i * n) / out, ((i + 1) * n).div_ceil(out)))
        .collect()
}

/// Adaptive max windows padded to the longest one by repeating their last element.
pub(crate) fn adaptive_max_rows(n: usize, out: usize) -> Vec<Vec<usize>> {
    let bounds = adaptive_bounds(n, out);
    let len = bounds.iter().map(|(s, e)| e - s).max().unwrap_or(0);
    bounds
        .iter()
        .map(|&(s, e)| (0..len).map(|j| (s + j).min(e - 1)).collect())
        .collect()
}

/// Flat indices (`h * W + w` per plane) of every window element: `flat` holds `P * K` of them,
/// window-major, row-major inside the window; `base` = `K * (0..P)`; `positions` = `1..=K`.
/// `tiles` holds each axis's kernel when the windows are disjoint tiles `[o*k, o*k + k)`
/// (kernel == stride, no padding or dilation), so they are a reshape of the input.
pub(crate) struct WindowTable {
    pub flat: Tensor,
    /// The windows per axis, for the CPU kernel (`None`: ragged windows).
    pub axes: Option<std::sync::Arc<crate::kernels::AxisWindows>>,
    pub base: Tensor,
    pub positions: Tensor,
    pub windows: usize,
    pub size: usize,
    pub tiles: Option<Vec<usize>>,
}

/// Each axis's kernel if every window `o` of it reads exactly `o*k .. o*k + k`.
fn tiles(rows: &[Vec<Vec<usize>>]) -> Option<Vec<usize>> {
    rows.iter()
        .map(|axis| {
            let k = axis.first().map_or(0, Vec::len);
            let tiled = axis
                .iter()
                .enumerate()
                .all(|(o, w)| w.iter().enumerate().all(|(j, &q)| q == o * k + j));
            (k > 0 && tiled).then_some(k)
        })
        .collect()
}

impl WindowTable {
    /// Combine per-axis windows (`rows[axis][o][j]`) on an input of spatial `sizes`.
    pub fn new(rows: &[Vec<Vec<usize>>], sizes: &[usize], device: &Device) -> Result<Self> {
        if rows.is_empty() || rows.len() > 3 || rows.len() != sizes.len() {
            bail!("pooling: index tables are built for 1-D, 2-D and 3-D windows only");
        }
        // Row-major plane strides, then the windows as the cartesian product over the axes
        // (window-major, row-major inside each window).
        let mut strides = vec![1usize; sizes.len()];
        for a in (0..sizes.len() - 1).rev() {
            strides[a] = strides[a + 1] * sizes[a + 1];
        }
        let mut windows_taps: Vec<Vec<usize>> = vec![vec![0]];
        for (axis, stride) in rows.iter().zip(&strides) {
            let mut next = Vec::with_capacity(windows_taps.len() * axis.len());
            for prefix in &windows_taps {
                for w in axis {
                    let mut taps = Vec::with_capacity(prefix.len() * w.len());
                    for &p in prefix {
                        taps.extend(w.iter().map(|&q| p + q * stride));
                    }
                    next.push(taps);
                }
            }
            windows_taps = next;
        }
        let windows = windows_taps.len();
        let size = windows_taps.first().map_or(0, Vec::len);
        let flat: Vec<u32> = windows_taps.iter().flatten().map(|&q| q as u32).collect();
        if sizes.iter().product::<usize>() > u32::MAX as usize {
            bail!("pooling: planes of more than 2^32 elements are not supported");
        }
        let base: Vec<u32> = (0..windows).map(|p| (p * size) as u32).collect();
        let positions: Vec<u32> = (1..=size).map(|j| j as u32).collect();
        Ok(WindowTable {
            flat: Tensor::from_vec(flat, windows * size, device)?,
            axes: crate::kernels::AxisWindows::new(rows, sizes).map(std::sync::Arc::new),
            base: Tensor::from_vec(base, windows, device)?,
            positions: Tensor::from_vec(positions, size, device)?,
            windows,
            size,
            // Tiles are reshaped in 1-D and 2-D only.
            tiles: if rows.len() <= 2 { tiles(rows) } else { None },
        })
    }
}

/// The in-bound part `[lo, hi)` of each average-pool window of `axis` and torch's divisor
/// factor along it: with `count_include_pad` the window clipped to the padded input,
/// `min(start + k, n + p) - start`, else the in-bound count `hi - lo`.
pub(crate) fn avg_bounds(
    axis: &Axis,
    count_include_pad: bool,
) -> (Vec<(usize, usize)>, Vec<usize>) {
    let n = axis.input as i64;
    let (mut bounds, mut counts) = (Vec::new(), Vec::new());
    for o in 0..axis.output {
        let start = axis.start(o);
        let end = (start + axis.kernel as i64).min(n + axis.padding as i64);
        let (lo, hi) = (start.max(0), end.min(n));
        bounds.push((lo as usize, hi.max(lo) as usize));
        counts.push(if count_include_pad {
            end - start
        } else {
            (hi - lo).max(0)
        } as usize);
    }
    (bounds, counts)
}

/// The (in, out) window matrix of one axis: column `o` holds `1 / factor[o]` at the inputs
/// `[lo, hi)` of window `o`, so that `x @ matrix` averages the windows along x's last axis with
/// this axis's share of torch's divisor (torch's divisor is a product of per-axis factors, or
/// the override). A zero factor (an empty window, whose sum is 0) counts as 1.
pub(crate) fn mean_matrix(
    bounds: &[(usize, usize)],
    factor: &[f64],
    n: usize,
    dtype: DType,
    device: &Device,
) -> Result<Tensor> {
    let out = bounds.len();
    let mut m = vec![0f64; n * out];
    for (o, (&(lo, hi), &f)) in bounds.iter().zip(factor).enumerate() {
        let weight = if f == 0.0 { 1.0 } else { 1.0 / f };
        for q in lo..hi {
            m[q * out + o] = weight;
        }
    }
    Tensor::from_vec(m, (n, out), device)?.to_dtype(dtype)
}
