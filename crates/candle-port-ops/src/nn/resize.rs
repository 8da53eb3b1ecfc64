//! `nn.Upsample`: a resize as a layer.

use candle_core::{Result, Tensor};

use crate::interpolate::{interpolate, Interpolate};

/// `nn.Upsample(size | scale_factor, mode, align_corners)`: [`interpolate`] with fixed
/// arguments, as a [`candle_nn::Module`].
///
/// ```
/// use candle_core::{DType, Device, Module, Tensor};
/// use candle_port_ops::{nn::Upsample, Interpolate, Mode};
/// # fn main() -> candle_core::Result<()> {
/// let up = Upsample::new(Interpolate::scale(&[2.0], Mode::Bilinear).align_corners(false));
/// let x = Tensor::ones((1, 3, 4, 5), DType::F32, &Device::Cpu)?;
/// assert_eq!(x.apply(&up)?.dims(), &[1, 3, 8, 10]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Upsample {
    opts: Interpolate,
}

impl Upsample {
    /// The layer resizing as `opts` says.
    pub fn new(opts: Interpolate) -> Self {
        Self { opts }
    }

    /// The resize's arguments.
    pub fn options(&self) -> &Interpolate {
        &self.opts
    }
}

impl candle_nn::Module for Upsample {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        interpolate(xs, &self.opts)
    }
}
