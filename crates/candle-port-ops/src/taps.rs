//! Sparse (tap) application of a per-axis resampling, for inputs holding inf or NaN.
//!
//! The fast compositions multiply by a dense `(out, in)` matrix: an entry that is 0 still
//! multiplies every input, so one inf (`0 * inf = NaN`) or NaN fills a whole output line with
//! NaN, where torch's kernels read only their taps. When the input is not all finite, an axis is
//! applied instead as torch applies it: `out[j] = sum_t weight[t][j] * x[index[t][j]]` over
//! exactly the taps torch reads (`index_select` per tap, `broadcast_mul`, add). A tap torch does
//! not read (windows of different widths padded to one length) points at a zero slab appended to
//! the axis, so it adds `0 * 0`. The Python runtime does the same (`runtime/_taps.py`).

use candle_core::{DType, Result, Tensor};

/// Where each output of one axis reads: `taps` parallel lists of `output` indices and weights.
/// An index equal to `input` is the zero slab (a tap torch does not read).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Taps {
    pub input: usize,
    pub output: usize,
    pub index: Vec<Vec<u32>>,
    pub weight: Vec<Vec<f64>>,
}

impl Taps {
    /// `taps` taps of `output` outputs, all on the zero slab until set.
    pub fn new(input: usize, output: usize, taps: usize) -> Self {
        Self {
            input,
            output,
            index: vec![vec![input as u32; output]; taps],
            weight: vec![vec![0.0; output]; taps],
        }
    }

    /// Store tap `t` of output `j`, one torch reads; an index outside the input (a tap past a
    /// border, which torch clamps) is clamped.
    pub fn set(&mut self, t: usize, j: usize, index: i64, weight: f64) {
        self.index[t][j] = index.clamp(0, self.input as i64 - 1) as u32;
        self.weight[t][j] = weight;
    }

    /// Window taps: output `j` reads inputs `[lo, hi)` of `bounds[j]` with weight
    /// `weight[j]`; shorter windows read the zero slab in their spare taps.
    pub fn windows(input: usize, bounds: &[(usize, usize)], weight: &[f64]) -> Self {
        let width = bounds
            .iter()
            .map(|(lo, hi)| hi - lo)
            .max()
            .unwrap_or(0)
            .max(1);
        let mut taps = Self::new(input, bounds.len(), width);
        for (j, (&(lo, hi), &w)) in bounds.iter().zip(weight).enumerate() {
            for (t, q) in (lo..hi).enumerate() {
                taps.set(t, j, q as i64, w);
            }
        }
        taps
    }

    /// Whether some tap reads the zero slab.
    fn reads_zero(&self) -> bool {
        let input = self.input as u32;
        self.index.iter().flatten().any(|&i| i == input)
    }

    /// The dense `(output, input)` matrix, row-major; taps on one input sample add up.
    pub fn matrix(&self) -> Vec<f64> {
        let mut m = vec![0.0; self.output * self.input];
        for (index, weight) in self.index.iter().zip(&self.weight) {
            for (j, (&i, &w)) in index.iter().zip(weight).enumerate() {
                if (i as usize) < self.input {
                    m[j * self.input + i as usize] += w;
                }
            }
        }
        m
    }

    /// `x` resampled along `dim`: one `index_select` per tap, scaled by the tap's weights and
    /// summed. With `skip_zero` a tap whose weights are all 0 is left out (exact for finite input
    /// only: torch reads it, and `0 * inf` is NaN).
    pub fn apply(&self, x: &Tensor, dim: usize, skip_zero: bool) -> Result<Tensor> {
        // candle's index_select needs a contiguous source (cat's result is one).
        let x = if self.reads_zero() {
            let mut shape = x.dims().to_vec();
            shape[dim] = 1;
            let zero = Tensor::zeros(shape, x.dtype(), x.device())?;
            Tensor::cat(&[&x.contiguous()?, &zero], dim)?
        } else {
            x.contiguous()?
        };
        let mut wshape = vec![1usize; x.rank()];
        wshape[dim] = self.output;
        let used: Vec<usize> = (0..self.index.len())
            .filter(|&t| !skip_zero || self.weight[t].iter().any(|&w| w != 0.0))
            .collect();
        let used = if used.is_empty() {
            (0..self.index.len()).collect()
        } else {
            used
        };
        let mut sum: Option<Tensor> = None;
        for t in used {
            let index = Tensor::from_slice(&self.index[t], self.output, x.device())?;
            let w = Tensor::from_slice(&self.weight[t], wshape.as_slice(), x.device())?
                .to_dtype(x.dtype())?;
            let term = x.index_select(&index, dim)?.broadcast_mul(&w)?;
            sum = Some(match sum {
                None => term,
                Some(s) => (s + term)?,
            });
        }
        match sum {
            Some(s) => Ok(s),
            None => candle_core::bail!("taps: an axis with no taps"),
        }
    }
}

/// Whether every element of `x` is finite, so the dense compositions may run: one sum (a finite
/// input whose sum overflows takes the tap path, which is exact too).
pub(crate) fn all_finite(x: &Tensor) -> Result<bool> {
    let sum = x.detach().sum_all()?.to_dtype(DType::F64)?;
    Ok(sum.to_scalar::<f64>()?.is_finite())
}
