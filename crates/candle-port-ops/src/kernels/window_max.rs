//! The max over each pooling window in one pass, and torch's choice of element for the
//! gradient and the indices.
//!
//! Each window is the cartesian product of per-axis tap lists (padding folded onto in-bound
//! duplicates). The forward is the max alone, one pass as candle's own pool, NaN when the
//! window holds one. The element torch picks (the first maximum; the last NaN in a window
//! holding NaN, ATen's `v > best || isnan(v)`) is found from the input and that output only when
//! needed, by a second scan: the first element equal to the window's maximum, or its last NaN.
//! The backward adds each window's gradient at that element (a kernel whose own backward is a
//! `gather`, so the gradient differentiates again).

use std::sync::Arc;

use candle_core::backend::BackendStorage;
use candle_core::{
    bail, CpuStorage, CustomOp1, CustomOp2, CustomOp3, Layout, Result, Shape, Tensor, WithDType,
};
use rayon::prelude::*;

use super::{blocks_per_task, zero};

/// Pooling windows as per-axis tap lists, on up to three spatial axes (fewer are padded with
/// leading axes of one window `[0]`): axis `a` has `outputs[a]` windows of `kernel[a]` taps,
/// `taps[a][o * kernel[a] + j]` premultiplied by the axis's plane stride, so that a window
/// element's plane position is the sum of its three taps (row-major window order).
pub(crate) struct AxisWindows {
    taps: [Vec<u32>; 3],
    outputs: [usize; 3],
    kernel: [usize; 3],
    plane: usize,
}

impl AxisWindows {
    /// From `rows[axis][o][j]` (input positions) on spatial `sizes`; `None` past three axes, for
    /// ragged windows, or planes past u32.
    pub fn new(rows: &[Vec<Vec<usize>>], sizes: &[usize]) -> Option<Self> {
        if rows.is_empty() || rows.len() > 3 || rows.len() != sizes.len() {
            return None;
        }
        let plane: usize = sizes.iter().product();
        u32::try_from(plane).ok()?;
        let pad = 3 - rows.len();
        let mut out = AxisWindows {
            taps: [vec![0], vec![0], vec![0]],
            outputs: [1; 3],
            kernel: [1; 3],
            plane,
        };
        for (a, axis) in rows.iter().enumerate() {
            let stride: usize = sizes[a + 1..].iter().product();
            let k = axis.first().map_or(0, Vec::len);
            if axis.iter().any(|w| w.len() != k) {
                return None;
            }
            out.taps[pad + a] = axis
                .iter()
                .flatten()
                .map(|&q| (q * stride) as u32)
                .collect();
            out.outputs[pad + a] = axis.len();
            out.kernel[pad + a] = k;
        }
        Some(out)
    }

    fn windows(&self) -> usize {
        self.outputs.iter().product()
    }
}

/// Each window's maximum over `x` seen as `(n*c, plane)`: `(n*c, windows)`, with the
/// backward into the chosen element.
pub(crate) fn window_max(x: &Tensor, windows: &Arc<AxisWindows>) -> Result<Tensor> {
    x.contiguous()?.apply_op1(WindowMax {
        windows: windows.clone(),
    })
}

/// The plane position (u32) torch chooses in each window, given the windows' maxima `values`.
pub(crate) fn window_argmax(
    x: &Tensor,
    values: &Tensor,
    windows: &Arc<AxisWindows>,
) -> Result<Tensor> {
    let choose = WindowArgmax {
        windows: windows.clone(),
    };
    x.contiguous()?
        .apply_op2_no_bwd(&values.detach().contiguous()?, &choose)
}

struct WindowMax {
    windows: Arc<AxisWindows>,
}

struct WindowArgmax {
    windows: Arc<AxisWindows>,
}

/// One plane's maxima: candle's scan (`if best < v`), plus a NaN flag.
fn plane_max<T: WithDType>(w: &AxisWindows, src: &[T], out: &mut [T]) {
    let [td, th, tw] = &w.taps;
    let [kd, kh, kw] = w.kernel;
    let mut slot = 0;
    for wd in td.chunks_exact(kd) {
        for wh in th.chunks_exact(kh) {
            for ww in tw.chunks_exact(kw) {
                let mut best = src[(wd[0] + wh[0] + ww[0]) as usize];
                let mut nan = false;
                for &a in wd {
                    for &b in wh {
                        let row = a + b;
                        for &c in ww {
                            let v = src[(row + c) as usize];
                            #[allow(clippy::eq_op)] // v != v: NaN, for any float WithDType
                            {
                                nan |= v != v;
                            }
                            if best < v {
                                best = v;
                            }
                        }
                    }
                }
                out[slot] = if nan { T::from_f64(f64::NAN) } else { best };
                slot += 1;
            }
        }
    }
}

/// One plane's chosen positions: the first element equal to the maximum, or the last NaN.
fn plane_argmax<T: WithDType>(w: &AxisWindows, src: &[T], values: &[T], idx: &mut [u32]) {
    let [td, th, tw] = &w.taps;
    let [kd, kh, kw] = w.kernel;
    let mut slot = 0;
    for wd in td.chunks_exact(kd) {
        for wh in th.chunks_exact(kh) {
            for ww in tw.chunks_exact(kw) {
                let best = values[slot];
                let mut at = wd[0] + wh[0] + ww[0];
                #[allow(clippy::eq_op)] // best != best: NaN
                if best != best {
                    // The last NaN, in scan order (rare: a branchy scan is fine).
                    for &a in wd {
                        for &b in wh {
                            for &c in ww {
                                let q = a + b + c;
                                let v = src[q as usize];
                                #[allow(clippy::eq_op)]
                                if v != v {
                                    at = q;
                                }
                            }
                        }
                    }
                } else {
                    // The first equal element: scanned backwards with selects, so the last
                    // match standing is the first, and no branch depends on the data.
                    for &a in wd.iter().rev() {
                        for &b in wh.iter().rev() {
                            for &c in ww.iter().rev() {
                                let q = a + b + c;
                                at = if src[q as usize] == best { q } else { at };
                            }
                        }
                    }
                }
                idx[slot] = at;
                slot += 1;
            }
        }
    }
}

/// The contiguous data range of a `(planes, windows)` operand (the maxima, the gradient).
fn per_window(
    name: &str,
    what: &str,
    layout: &Layout,
    planes: usize,
    windows: usize,
) -> Result<(usize, usize)> {
    let Some(range) = layout.contiguous_offsets() else {
        bail!("{name}: the {what} must be contiguous")
    };
    if layout.dims() != [planes, windows] {
        bail!(
            "{name}: {what} of shape {:?} for {planes} planes of {windows} windows",
            layout.dims()
        );
    }
    Ok(range)
}

/// The input as `(planes, plane)` and its contiguous data range.
fn planes_of(name: &str, layout: &Layout, w: &AxisWindows) -> Result<(usize, usize, usize)> {
    let Some((start, end)) = layout.contiguous_offsets() else {
        bail!("{name}: the input must be contiguous")
    };
    let (planes, plane) = layout.shape().dims2()?;
    if plane != w.plane {
        bail!(
            "{name}: windows over planes of {} on a plane of {plane}",
            w.plane
        );
    }
    Ok((planes, start, end))
}

impl CustomOp1 for WindowMax {
    fn name(&self) -> &'static str {
        "candle-port-window-max"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let w = &self.windows;
        let (planes, start, end) = planes_of(self.name(), layout, w)?;
        fn run<T: WithDType>(w: &AxisWindows, x: &[T], planes: usize) -> Vec<T> {
            let p = w.windows();
            let mut out = vec![T::zero(); planes * p];
            if !out.is_empty() {
                out.par_chunks_mut(p)
                    .zip(x.par_chunks(w.plane))
                    .with_min_len(blocks_per_task(w.plane.max(p)))
                    .for_each(|(out, src)| plane_max(w, src, out));
            }
            out
        }
        let out = match storage {
            CpuStorage::F32(x) => CpuStorage::F32(run(w, &x[start..end], planes)),
            CpuStorage::F64(x) => CpuStorage::F64(run(w, &x[start..end], planes)),
            other => bail!("{}: f32 or f64 only, got {:?}", self.name(), other.dtype()),
        };
        Ok((out, Shape::from((planes, w.windows()))))
    }

    fn bwd(&self, arg: &Tensor, res: &Tensor, grad_res: &Tensor) -> Result<Option<Tensor>> {
        let spread = WindowMaxGrad {
            windows: self.windows.clone(),
        };
        let gx = arg.contiguous()?.apply_op3(
            &res.detach().contiguous()?,
            &grad_res.contiguous()?,
            spread,
        )?;
        Ok(Some(gx))
    }
}

/// The backward of [`WindowMax`]: `(x, values, grad) -> gx`, each window's gradient added at
/// its chosen element, found by the same scan as [`window_argmax`] (no index tensor built).
/// Its own backward, into `grad`, is a `gather` at the chosen elements.
struct WindowMaxGrad {
    windows: Arc<AxisWindows>,
}

impl CustomOp3 for WindowMaxGrad {
    fn name(&self) -> &'static str {
        "candle-port-window-max-backward"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
        values: &CpuStorage,
        values_layout: &Layout,
        grad: &CpuStorage,
        grad_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let w = &self.windows;
        let (planes, start, end) = planes_of(self.name(), layout, w)?;
        let p = w.windows();
        let (vs, ve) = per_window(self.name(), "maxima", values_layout, planes, p)?;
        let (gs, ge) = per_window(self.name(), "gradient", grad_layout, planes, p)?;
        fn run<T: WithDType>(w: &AxisWindows, x: &[T], v: &[T], g: &[T], planes: usize) -> Vec<T> {
            let p = w.windows();
            let mut gx = vec![T::zero(); planes * w.plane];
            if !gx.is_empty() && p > 0 {
                gx.par_chunks_mut(w.plane)
                    .zip(
                        x.par_chunks(w.plane)
                            .zip(v.par_chunks(p).zip(g.par_chunks(p))),
                    )
                    .with_min_len(blocks_per_task(w.plane.max(p)))
                    .for_each_init(
                        || vec![0u32; p],
                        |idx, (gx, (src, (values, grad)))| {
                            zero(gx);
                            plane_argmax(w, src, values, idx);
                            for (&q, &g) in idx.iter().zip(grad) {
                                gx[q as usize] += g;
                            }
                        },
                    );
            }
            gx
        }
        let gx = match (storage, values, grad) {
            (CpuStorage::F32(x), CpuStorage::F32(v), CpuStorage::F32(g)) => {
                CpuStorage::F32(run(w, &x[start..end], &v[vs..ve], &g[gs..ge], planes))
            }
            (CpuStorage::F64(x), CpuStorage::F64(v), CpuStorage::F64(g)) => {
                CpuStorage::F64(run(w, &x[start..end], &v[vs..ve], &g[gs..ge], planes))
            }
            (other, _, _) => bail!("{}: f32 or f64 only, got {:?}", self.name(), other.dtype()),
        };
        Ok((gx, Shape::from((planes, w.plane))))
    }

    fn bwd(
        &self,
        x: &Tensor,
        values: &Tensor,
        _grad: &Tensor,
        _res: &Tensor,
        grad_res: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let index = window_argmax(x, values, &self.windows)?;
        let into_grad = grad_res.contiguous()?.gather(&index, 1)?;
        Ok((None, None, Some(into_grad)))
    }
}

impl CustomOp2 for WindowArgmax {
    fn name(&self) -> &'static str {
        "candle-port-window-argmax"
    }

    fn cpu_fwd(
        &self,
        storage: &CpuStorage,
        layout: &Layout,
        values: &CpuStorage,
        values_layout: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let w = &self.windows;
        let (planes, start, end) = planes_of(self.name(), layout, w)?;
        let p = w.windows();
        let (vs, ve) = per_window(self.name(), "maxima", values_layout, planes, p)?;
        fn run<T: WithDType>(w: &AxisWindows, x: &[T], values: &[T], planes: usize) -> Vec<u32> {
            let p = w.windows();
            let mut idx = vec![0u32; planes * p];
            if !idx.is_empty() {
                idx.par_chunks_mut(p)
                    .zip(x.par_chunks(w.plane).zip(values.par_chunks(p)))
                    .with_min_len(blocks_per_task(w.plane.max(p)))
                    .for_each(|(idx, (src, values))| plane_argmax(w, src, values, idx));
            }
            idx
        }
        let idx = match (storage, values) {
            (CpuStorage::F32(x), CpuStorage::F32(v)) => run(w, &x[start..end], &v[vs..ve], planes),
            (CpuStorage::F64(x), CpuStorage::F64(v)) => run(w, &x[start..end], &v[vs..ve], planes),
            (other, _) => bail!("{}: f32 or f64 only, got {:?}", self.name(), other.dtype()),
        };
        Ok((CpuStorage::U32(idx), Shape::from((planes, p))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Var};

    /// Two windows over a plane of 4: {0, 1, 2} and {2, 3, 3} (a padded duplicate).
    fn table() -> Arc<AxisWindows> {
        Arc::new(AxisWindows::new(&[vec![vec![0, 1, 2], vec![2, 3, 3]]], &[4]).unwrap())
    }

    #[test]
    fn first_maximum_and_last_nan_as_torch() {
        let nan = f32::NAN;
        let x = Tensor::new(&[[5f32, 5., 1., 2.], [nan, 0., nan, 9.]], &Device::Cpu).unwrap();
        let v = window_max(&x, &table()).unwrap();
        let i = window_argmax(&x, &v, &table()).unwrap();
        assert_eq!(i.to_vec2::<u32>().unwrap(), vec![vec![0, 3], vec![2, 2]]);
        let v = v.to_vec2::<f32>().unwrap();
        assert_eq!(v[0], vec![5., 2.]);
        assert!(v[1][0].is_nan() && v[1][1].is_nan());
    }

    #[test]
    fn the_gradient_goes_to_the_chosen_element_only() {
        let x = Var::new(&[[1f64, 7., 7., 3.]], &Device::Cpu).unwrap();
        let v = window_max(x.as_tensor(), &table()).unwrap();
        let g = Tensor::new(&[[2f64, 5.]], &Device::Cpu).unwrap();
        let grads = (v * &g).unwrap().sum_all().unwrap().backward().unwrap();
        let gx = grads.get(&x).unwrap().to_vec2::<f64>().unwrap();
        assert_eq!(gx, vec![vec![0., 2., 5., 0.]]);
    }

    #[test]
    fn the_gradient_differentiates_again() {
        // d/dg of sum(gx * r) with gx = backward(g): r at each window's chosen element.
        let x = Tensor::new(&[[1f64, 7., 7., 3.]], &Device::Cpu).unwrap();
        let v = window_max(&x, &table()).unwrap();
        let g = Var::new(&[[2f64, 5.]], &Device::Cpu).unwrap();
        let spread = WindowMaxGrad { windows: table() };
        let gx = x.apply_op3(&v, g.as_tensor(), spread).unwrap();
        assert_eq!(gx.to_vec2::<f64>().unwrap(), vec![vec![0., 2., 5., 0.]]);
        let r = Tensor::new(&[[10f64, 20., 30., 40.]], &Device::Cpu).unwrap();
        let grads = (gx * r).unwrap().sum_all().unwrap().backward().unwrap();
        let gg = grads.get(&g).unwrap().to_vec2::<f64>().unwrap();
        assert_eq!(gg, vec![vec![20., 30.]]);
    }

    #[test]
    fn two_axes_scan_each_window_row_major() {
        // A 3x3 plane, windows of rows {0, 1} x columns {1, 2}: positions 1, 2, 4, 5 in order.
        let w = Arc::new(AxisWindows::new(&[vec![vec![0, 1]], vec![vec![1, 2]]], &[3, 3]).unwrap());
        let x = Tensor::new(&[[0f32, 4., 1., 0., 4., 4., 9., 9., 9.]], &Device::Cpu).unwrap();
        let v = window_max(&x, &w).unwrap();
        let i = window_argmax(&x, &v, &w).unwrap();
        assert_eq!(v.to_vec2::<f32>().unwrap(), vec![vec![4.]]);
        assert_eq!(i.to_vec2::<u32>().unwrap(), vec![vec![1]]);
        assert!(
            AxisWindows::new(&[vec![vec![0, 1], vec![1]]], &[2]).is_none(),
            "ragged"
        );
    }

    #[test]
    fn windows_over_another_plane_size_are_an_error() {
        let x = Tensor::zeros((1, 3), candle_core::DType::F32, &Device::Cpu).unwrap();
        assert!(window_max(&x, &table()).is_err());
    }
}
