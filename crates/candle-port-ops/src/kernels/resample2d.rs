//! The last two axes resampled together, `y[i, j] = sum_s h[s][i] * (sum_t w[t][j] * x[ih, jw])`,
//! as ATen's 2-D kernels round it: each input row interpolated along W (once, into a per-task
//! scratch plane that stays in cache), then the rows combined along H. No intermediate tensor
//! is allocated, which on the CPU is most of the cost of two axis passes (fresh pages). The
//! adjoint, its backward, goes the same way back. For few taps (bilinear, bicubic, nearest,
//! small windows); long windows go axis by axis ([`super::resample_axis`]).

use std::sync::Arc;

use candle_core::backend::BackendStorage;
use candle_core::{bail, CpuStorage, CustomOp1, Layout, Result, Shape, Tensor, WithDType};
use rayon::prelude::*;

use super::resample::{gather_last, scatter_last, typed, Tap};
use super::{blocks_per_task, zero};
use crate::taps::Taps;

/// Taps per output above which the axes go one by one.
pub(crate) const MAX_FUSED_TAPS: usize = 16;

/// `x` (.., H, W) resampled along its last two axes by `rows` (H) and `cols` (W).
pub(crate) fn resample_plane(x: &Tensor, rows: &Taps, cols: &Taps) -> Result<Tensor> {
    let op = Resample2d {
        rows: Arc::new(rows.clone()),
        cols: Arc::new(cols.clone()),
        adjoint: false,
    };
    x.contiguous()?.apply_op1(op)
}

struct Resample2d {
    rows: Arc<Taps>,
    cols: Arc<Taps>,
    /// Spread the gradient back (outputs -> inputs) instead of gathering.
    adjoint: bool,
}

/// One plane's sizes: (H, W) read and (H, W) written.
type Sizes = ((usize, usize), (usize, usize));

impl Resample2d {
    fn sizes(&self) -> Sizes {
        let (i, o) = (
            (self.rows.input, self.cols.input),
            (self.rows.output, self.cols.output),
        );
        if self.adjoint {
            (o, i)
        } else {
            (i, o)
        }
    }

    fn run<T: WithDType>(&self, x: &[T], planes: usize) -> Vec<T> {
        let ((rh, rw), (wh, ww)) = self.sizes();
        let (rows, cols) = (typed::<T>(&self.rows), typed::<T>(&self.cols));
        let mut y = vec![T::zero(); planes * wh * ww];
        if y.is_empty() {
            return y;
        }
        let (src_plane, dst_plane) = (rh * rw, wh * ww);
        let per_task = blocks_per_task(src_plane.max(dst_plane));
        y.par_chunks_mut(dst_plane)
            .zip(x.par_chunks(src_plane))
            .with_min_len(per_task)
            .for_each_init(
                // Per task: the plane's read rows interpolated along W (H_in x W_out).
                || vec![T::zero(); self.rows.input * self.cols.output],
                |lines, (dst, src)| {
                    if self.adjoint {
                        self.spread(dst, src, &rows, &cols, lines);
                    } else {
                        self.gather(dst, src, &rows, &cols, lines);
                    }
                },
            );
        y
    }

    /// One plane forward: every input row interpolated along W once into `lines`, then each
    /// output row the sum of its H taps' lines (the first assigned), ATen's
    /// `h0 * (w0 x00 + w1 x01) + h1 * (..)`.
    fn gather<T: WithDType>(
        &self,
        dst: &mut [T],
        src: &[T],
        rows: &[Tap<T>],
        cols: &[Tap<T>],
        lines: &mut [T],
    ) {
        let (h_in, w_in) = (self.rows.input as u32, self.cols.input as u32);
        let (w, wo) = (self.cols.input, self.cols.output);
        for (line, row) in lines.chunks_exact_mut(wo).zip(src.chunks_exact(w)) {
            gather_last(line, row, cols, w_in);
        }
        for (i, out) in dst.chunks_exact_mut(wo).enumerate() {
            let mut first = true;
            for Tap { index, weight, .. } in rows {
                let r = index[i];
                if r >= h_in {
                    continue;
                }
                let (wr, line) = (weight[i], &lines[r as usize * wo..(r as usize + 1) * wo]);
                if first {
                    out.iter_mut().zip(line).for_each(|(o, &v)| *o = wr * v);
                    first = false;
                } else {
                    out.iter_mut().zip(line).for_each(|(o, &v)| *o += wr * v);
                }
            }
        }
    }

    /// One plane of the adjoint: each gradient row added, with its H weights, to the `lines` of
    /// the rows it read; then each line spread along W into its input row.
    fn spread<T: WithDType>(
        &self,
        dst: &mut [T],
        grad: &[T],
        rows: &[Tap<T>],
        cols: &[Tap<T>],
        lines: &mut [T],
    ) {
        let (h_in, w_in) = (self.rows.input as u32, self.cols.input as u32);
        let (w, wo) = (self.cols.input, self.cols.output);
        lines.iter_mut().for_each(|l| *l = T::zero());
        zero(dst);
        for (i, g) in grad.chunks_exact(wo).enumerate() {
            for Tap { index, weight, .. } in rows {
                let r = index[i];
                if r >= h_in {
                    continue;
                }
                let wr = weight[i];
                let line = &mut lines[r as usize * wo..(r as usize + 1) * wo];
                line.iter_mut().zip(g).for_each(|(l, &v)| *l += wr * v);
            }
        }
        for (row, line) in dst.chunks_exact_mut(w).zip(lines.chunks_exact(wo)) {
            scatter_last(row, line, cols, w_in);
        }
    }
}

impl CustomOp1 for Resample2d {
    fn name(&self) -> &'static str {
        if self.adjoint {
            "candle-port-resample2d-backward"
        } else {
            "candle-port-resample2d"
        }
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let Some((start, end)) = layout.contiguous_offsets() else {
            bail!("{}: the input must be contiguous", self.name())
        };
        let dims = layout.dims();
        let ((rh, rw), (wh, ww)) = self.sizes();
        let n = dims.len();
        if n < 2 || dims[n - 2..] != [rh, rw] {
            bail!("{}: {dims:?} must end in ({rh}, {rw})", self.name());
        }
        let planes: usize = dims[..n - 2].iter().product();
        let out = match storage {
            CpuStorage::F32(x) => CpuStorage::F32(self.run(&x[start..end], planes)),
            CpuStorage::F64(x) => CpuStorage::F64(self.run(&x[start..end], planes)),
            other => bail!("{}: f32 or f64 only, got {:?}", self.name(), other.dtype()),
        };
        let mut shape = dims.to_vec();
        shape[n - 2] = wh;
        shape[n - 1] = ww;
        Ok((out, Shape::from(shape)))
    }

    fn bwd(&self, _arg: &Tensor, _res: &Tensor, grad_res: &Tensor) -> Result<Option<Tensor>> {
        let back = Resample2d {
            rows: self.rows.clone(),
            cols: self.cols.clone(),
            adjoint: !self.adjoint,
        };
        Ok(Some(grad_res.contiguous()?.apply_op1(back)?))
    }
}

#[cfg(test)]
mod tests {
    use super::super::resample_axis;
    use super::*;
    use candle_core::{Device, Var};

    fn linear(input: usize, output: usize, shift: f64) -> Taps {
        let mut t = Taps::new(input, output, 2);
        for j in 0..output {
            let s = (j as f64 * (input - 1) as f64 / (output - 1) as f64 + shift)
                .min((input - 1) as f64);
            let i0 = s.floor() as i64;
            t.set(0, j, i0, 1.0 - (s - i0 as f64));
            t.set(1, j, (i0 + 1).min(input as i64 - 1), s - i0 as f64);
        }
        t
    }

    #[test]
    fn equals_the_two_axis_passes_forward_and_backward() {
        let (rows, cols) = (linear(5, 9, 0.0), linear(4, 7, 0.25));
        let x = Var::from_tensor(&Tensor::rand(-1f64, 1., (2, 3, 5, 4), &Device::Cpu).unwrap())
            .unwrap();
        let g = Tensor::rand(-1f64, 1., (2, 3, 9, 7), &Device::Cpu).unwrap();
        let fused = resample_plane(x.as_tensor(), &rows, &cols).unwrap();
        let passes =
            resample_axis(&resample_axis(x.as_tensor(), 3, &cols).unwrap(), 2, &rows).unwrap();
        let diff = (&fused - &passes)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap();
        assert!(diff.to_scalar::<f64>().unwrap() < 1e-14);
        let gf = (fused * &g).unwrap().sum_all().unwrap().backward().unwrap();
        let gp = (passes * &g)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        let (a, b) = (gf.get(&x).unwrap(), gp.get(&x).unwrap());
        let diff = (a - b).unwrap().abs().unwrap().max_all().unwrap();
        assert!(diff.to_scalar::<f64>().unwrap() < 1e-14);
    }
}
