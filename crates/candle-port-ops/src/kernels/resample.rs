//! One axis resampled by its taps, `y[.., j, ..] = sum_t w[t][j] * x[.., i[t][j], ..]`, and the
//! adjoint `gx[.., i[t][j], ..] += w[t][j] * g[.., j, ..]` as its backward.
//!
//! The taps are ATen's (linear, cubic, antialiased, area, nearest as one tap of weight 1), read
//! in ATen's tap order, so a non-finite input spreads only to the outputs that read it; a tap
//! on the zero slab (a window shorter than the longest) is one torch does not read and is
//! skipped. The forward and the adjoint are each other's backward, so the op differentiates
//! twice.

use std::sync::Arc;

use candle_core::backend::BackendStorage;
use candle_core::{bail, CpuStorage, CustomOp1, Layout, Result, Shape, Tensor, WithDType};
use rayon::prelude::*;

use super::{blocks_per_task, zero};
use crate::taps::Taps;

/// `x` resampled along `dim` by `taps` (contiguous or not; CPU, f32 or f64).
pub(crate) fn resample_axis(x: &Tensor, dim: usize, taps: &Taps) -> Result<Tensor> {
    let op = Resample {
        taps: Arc::new(taps.clone()),
        dim,
        adjoint: false,
    };
    x.contiguous()?.apply_op1(op)
}

struct Resample {
    taps: Arc<Taps>,
    dim: usize,
    /// Scatter the gradient back (`output` -> `input` samples) instead of gathering.
    adjoint: bool,
}

/// A contiguous tensor seen around one axis: `(before, len, after)`.
struct Around {
    before: usize,
    after: usize,
}

impl Resample {
    /// Sample counts along the axis, (read, written).
    fn counts(&self) -> (usize, usize) {
        if self.adjoint {
            (self.taps.output, self.taps.input)
        } else {
            (self.taps.input, self.taps.output)
        }
    }

    fn run<T: WithDType>(&self, x: &[T], around: &Around) -> Vec<T> {
        let (read, written) = self.counts();
        let (before, after) = (around.before, around.after);
        let taps = typed(&self.taps);
        let mut y = vec![T::zero(); before * written * after];
        if y.is_empty() {
            return y;
        }
        let (src_block, dst_block) = (read * after, written * after);
        let input = self.taps.input as u32;
        let per_task = blocks_per_task(dst_block.max(src_block));
        y.par_chunks_mut(dst_block)
            .zip(x.par_chunks(src_block))
            .with_min_len(per_task)
            .for_each(|(dst, src)| match (self.adjoint, after) {
                (true, 1) => {
                    zero(dst);
                    scatter_last(dst, src, &taps, input)
                }
                (false, 1) => gather_last(dst, src, &taps, input),
                (true, _) => {
                    zero(dst);
                    scatter(dst, src, &taps, input, after)
                }
                (false, _) => gather(dst, src, &taps, input, after),
            });
        y
    }
}

/// One tap of an axis in the input's type: for each output, the index read and its weight;
/// `slab` if some output reads the zero slab here (a tap torch does not read), so the loops
/// without it need no test.
pub(super) struct Tap<'a, T> {
    pub index: &'a [u32],
    pub weight: Vec<T>,
    pub slab: bool,
}

/// The taps of an axis in `T`.
pub(super) fn typed<T: WithDType>(taps: &Taps) -> Vec<Tap<'_, T>> {
    let input = taps.input as u32;
    taps.index
        .iter()
        .zip(&taps.weight)
        .map(|(i, w)| Tap {
            index: i.as_slice(),
            weight: w.iter().map(|&v| T::from_f64(v)).collect(),
            slab: i.iter().any(|&q| q >= input),
        })
        .collect()
}

/// One block of the forward along the last axis (`after == 1`): tap by tap over the whole
/// output line, so the inner loop is a plain stream (the sum per output in tap order, as
/// ATen's).
pub(super) fn gather_last<T: WithDType>(dst: &mut [T], src: &[T], taps: &[Tap<T>], input: u32) {
    for (t, tap) in taps.iter().enumerate() {
        let pairs = dst.iter_mut().zip(tap.index.iter().zip(&tap.weight));
        match (t, tap.slab) {
            (0, false) => pairs.for_each(|(o, (&i, &w))| *o = w * src[i as usize]),
            (_, false) => pairs.for_each(|(o, (&i, &w))| *o += w * src[i as usize]),
            _ => pairs.for_each(|(o, (&i, &w))| {
                if i < input {
                    let v = w * src[i as usize];
                    *o = if t == 0 { v } else { *o + v };
                }
            }),
        }
    }
}

/// One block of the adjoint along the last axis, tap by tap.
pub(super) fn scatter_last<T: WithDType>(dst: &mut [T], grad: &[T], taps: &[Tap<T>], input: u32) {
    for tap in taps {
        for (&g, (&i, &w)) in grad.iter().zip(tap.index.iter().zip(&tap.weight)) {
            if i < input {
                dst[i as usize] += w * g;
            }
        }
    }
}

/// One block of the forward: each output row is its first tap's row scaled, plus the others.
fn gather<T: WithDType>(dst: &mut [T], src: &[T], taps: &[Tap<T>], input: u32, after: usize) {
    for (j, out) in dst.chunks_exact_mut(after).enumerate() {
        let mut first = true;
        for Tap { index, weight, .. } in taps {
            let i = index[j];
            if i >= input {
                continue;
            }
            let (w, row) = (
                weight[j],
                &src[i as usize * after..(i as usize + 1) * after],
            );
            if first {
                out.iter_mut().zip(row).for_each(|(o, &v)| *o = w * v);
                first = false;
            } else {
                out.iter_mut().zip(row).for_each(|(o, &v)| *o += w * v);
            }
        }
    }
}

/// One block of the adjoint: each gradient row added, scaled, to the rows its taps read.
fn scatter<T: WithDType>(dst: &mut [T], grad: &[T], taps: &[Tap<T>], input: u32, after: usize) {
    for (j, g) in grad.chunks_exact(after).enumerate() {
        for Tap { index, weight, .. } in taps {
            let i = index[j];
            if i >= input {
                continue;
            }
            let w = weight[j];
            let row = &mut dst[i as usize * after..(i as usize + 1) * after];
            row.iter_mut().zip(g).for_each(|(o, &v)| *o += w * v);
        }
    }
}

impl CustomOp1 for Resample {
    fn name(&self) -> &'static str {
        if self.adjoint {
            "candle-port-resample-backward"
        } else {
            "candle-port-resample"
        }
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let Some((start, end)) = layout.contiguous_offsets() else {
            bail!("{}: the input must be contiguous", self.name())
        };
        let dims = layout.dims();
        let (read, written) = self.counts();
        if self.dim >= dims.len() || dims[self.dim] != read {
            bail!(
                "{}: dim {} of {:?} must hold {read} samples",
                self.name(),
                self.dim,
                dims
            );
        }
        let around = Around {
            before: dims[..self.dim].iter().product(),
            after: dims[self.dim + 1..].iter().product(),
        };
        let out = match storage {
            CpuStorage::F32(x) => CpuStorage::F32(self.run(&x[start..end], &around)),
            CpuStorage::F64(x) => CpuStorage::F64(self.run(&x[start..end], &around)),
            other => bail!("{}: f32 or f64 only, got {:?}", self.name(), other.dtype()),
        };
        let mut shape = dims.to_vec();
        shape[self.dim] = written;
        Ok((out, Shape::from(shape)))
    }

    fn bwd(&self, _arg: &Tensor, _res: &Tensor, grad_res: &Tensor) -> Result<Option<Tensor>> {
        let back = Resample {
            taps: self.taps.clone(),
            dim: self.dim,
            adjoint: !self.adjoint,
        };
        Ok(Some(grad_res.contiguous()?.apply_op1(back)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Var};

    /// Two outputs from three inputs: out0 = 0.25 x0 + 0.75 x1, out1 = x2 (second tap on the
    /// zero slab).
    fn taps() -> Taps {
        let mut t = Taps::new(3, 2, 2);
        t.set(0, 0, 0, 0.25);
        t.set(1, 0, 1, 0.75);
        t.set(0, 1, 2, 1.0);
        t.index[1][1] = 3;
        t
    }

    #[test]
    fn forward_reads_only_the_taps() {
        let x = Tensor::new(&[[1f64, 10.], [2., 20.], [f64::NAN, 30.]], &Device::Cpu).unwrap();
        let y = resample_axis(&x, 0, &taps())
            .unwrap()
            .to_vec2::<f64>()
            .unwrap();
        assert_eq!(y[0], vec![1.75, 17.5]);
        assert!(y[1][0].is_nan());
        assert_eq!(y[1][1], 30.0);
    }

    #[test]
    fn backward_is_the_adjoint_and_differentiates_again() {
        let x = Var::new(&[[1f64, 2., 3.]], &Device::Cpu).unwrap();
        let y = resample_axis(x.as_tensor(), 1, &taps()).unwrap();
        let g = Tensor::new(&[[2f64, 5.]], &Device::Cpu).unwrap();
        let grads = (y * &g).unwrap().sum_all().unwrap().backward().unwrap();
        let gx = grads.get(&x).unwrap().to_vec2::<f64>().unwrap();
        assert_eq!(gx, vec![vec![0.5, 1.5, 5.0]]);
    }

    #[test]
    fn a_strided_input_is_made_contiguous_first() {
        let x = Tensor::new(&[[1f32, 2.], [3., 4.], [5., 6.]], &Device::Cpu).unwrap();
        let y = resample_axis(&x.t().unwrap(), 1, &taps()).unwrap();
        assert_eq!(
            y.to_vec2::<f32>().unwrap(),
            vec![vec![2.5, 5.], vec![3.5, 6.]]
        );
    }
}
