//! CPU kernels: the crate's resampling and max-pool choice as single passes, candle custom ops
//! with their own backward.
//!
//! The ops are defined as compositions of candle ops that have a backward (`index_select`,
//! `matmul`, `gather` ...): those run on every device and differentiate in candle, but each is
//! several passes over the data where torch's kernel makes one. On the CPU, for f32 and f64, the
//! hot ops run instead as [`candle_core::CustomOp1`]s whose forward is one pass in ATen's order
//! (the same taps, the same first-maximum and last-NaN rule) and whose `bwd` is a second kernel
//! (the adjoint), itself differentiable. The numbers are torch's either way: the shared vectors
//! run both paths ([`composition_only`]).
//!
//! Work is split on candle's rayon pool (`RAYON_NUM_THREADS`), in blocks of whole planes.

mod resample;
mod resample2d;
mod window_max;

use resample::resample_axis;
use resample2d::{resample_plane, MAX_FUSED_TAPS};
pub(crate) use window_max::{window_argmax, window_max, AxisWindows};

use std::cell::Cell;

use candle_core::{DType, Result, Tensor, WithDType};

use crate::taps::Taps;

thread_local! {
    static COMPOSITION_ONLY: Cell<bool> = const { Cell::new(false) };
}

/// Run `f` with the CPU kernels off on this thread: every op inside runs as its composition of
/// candle ops, the code path CUDA and Metal devices take. For tests and for comparing the two;
/// the results agree to rounding, non-finite input included. Nests; restores the previous
/// setting on return and on panic.
///
/// ```
/// use candle_core::{Device, Tensor};
/// use candle_port_ops::{interpolate, kernels::composition_only, Interpolate, Mode};
/// let x = Tensor::new(&[[[1f32, 3.]]], &Device::Cpu)?;
/// let opts = Interpolate::scale(&[2.0], Mode::Linear);
/// let kernel = interpolate(&x, &opts)?;
/// let composed = composition_only(|| interpolate(&x, &opts))?;
/// assert_eq!(kernel.to_vec3::<f32>()?, composed.to_vec3::<f32>()?);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn composition_only<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            COMPOSITION_ONLY.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(COMPOSITION_ONLY.with(|c| c.replace(true)));
    f()
}

/// Whether `x` takes the CPU kernels: a CPU tensor of f32 or f64, kernels not switched off.
pub(crate) fn apply_to(x: &Tensor) -> bool {
    x.device().is_cpu()
        && matches!(x.dtype(), DType::F32 | DType::F64)
        && !COMPOSITION_ONLY.with(Cell::get)
}

/// `x` (n, c, *spatial) resampled along each spatial axis that has taps (`axes[k]` for dim
/// `k + 2`), the last axis first as ATen: the last two together when both have few taps, the
/// others one by one. `None` when no axis has taps.
pub(crate) fn resample_axes(x: &Tensor, axes: &[Option<Taps>]) -> Result<Option<Tensor>> {
    let n = axes.len();
    let mut left = n;
    let mut y = None;
    if n >= 2 {
        if let (Some(rows), Some(cols)) = (&axes[n - 2], &axes[n - 1]) {
            if rows.index.len() * cols.index.len() <= MAX_FUSED_TAPS {
                y = Some(resample_plane(x, rows, cols)?);
                left = n - 2;
            }
        }
    }
    for k in (0..left).rev() {
        if let Some(taps) = &axes[k] {
            let from = y.as_ref().unwrap_or(x);
            y = Some(resample_axis(from, k + 2, taps)?);
        }
    }
    Ok(y)
}

/// Write zeros over a block an adjoint is about to add into. The block comes from `vec![0; n]`,
/// whose fresh pages are calloc's: an add reads each page first (mapping the shared zero page)
/// and then writes it (a second, copy-on-write fault). Writing first faults once per page
/// (the stem max pool's forward+backward went from 98 to 95 ms).
fn zero<T: WithDType>(block: &mut [T]) {
    block.fill(T::zero());
}

/// Elements per rayon task: below this, splitting costs more than it saves.
const MIN_TASK_ELEMENTS: usize = 1 << 15;

/// How many `block`-element blocks make one rayon task.
fn blocks_per_task(block: usize) -> usize {
    MIN_TASK_ELEMENTS.div_ceil(block.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn the_switch_nests_and_restores() {
        let x = Tensor::zeros(2, DType::F32, &Device::Cpu).unwrap();
        assert!(apply_to(&x));
        composition_only(|| {
            assert!(!apply_to(&x));
            composition_only(|| assert!(!apply_to(&x)));
            assert!(!apply_to(&x));
        });
        assert!(apply_to(&x));
        let caught = std::panic::catch_unwind(|| composition_only(|| panic!("inside")));
        assert!(caught.is_err());
        assert!(apply_to(&x), "a panic inside leaves the kernels on");
    }

    #[test]
    fn only_cpu_floats_take_the_kernels() {
        let half = Tensor::zeros(2, DType::F16, &Device::Cpu).unwrap();
        assert!(!apply_to(&half));
        let f64s = Tensor::zeros(2, DType::F64, &Device::Cpu).unwrap();
        assert!(apply_to(&f64s));
    }
}
