//! PyTorch's interpolate, pooling (1-D to 3-D), grid sampling, transposed and 3-D convolution ops
//! for [candle], equal to torch in forward **and backward**, built from candle ops that have a
//! backward.
//!
//! candle's own `upsample_bilinear2d` has no backward (`loss.backward()` stops with
//! `backward not supported for upsample_bilinear2d`), its nearest upsampling differentiates only
//! integer, uniform scales, its max/avg pooling only kernel == stride, and it has no bicubic,
//! trilinear, area, antialiased or adaptive resizing at all; its `conv_transpose1d` has no
//! backward, its `conv_transpose2d` no groups, and it has no grid sampling, 3-D convolution or
//! 3-D pooling; and its `conv1d` trains the weight wrong for batch > 1. This crate is the Rust twin of the
//! Python package's `candle_port.runtime`: the same ops, composed of `index_select`, `gather`,
//! `matmul` and elementwise ops, so a model ported from PyTorch computes torch's numbers and
//! trains. On the CPU (f32, f64) the resizes and the pools run instead as one-pass
//! [`kernels`] (candle custom ops with their own backward), as fast as candle's own forward
//! ops; on CUDA and Metal, and inside [`kernels::composition_only`], the compositions run.
//!
//! Every op is checked against torch's outputs and input gradients on shared test vectors
//! (float64 within 1e-10 relative, float32 within 1e-5), inputs holding NaN and +-inf included.
//! The [`nn`] module has them as candle-nn style layers (`Upsample`, `MaxPool2d`,
//! `ConvTranspose2d`, ...) implementing `candle_nn::Module`.
//!
//! [candle]: https://github.com/huggingface/candle

pub mod conv1d;
mod convolution;
pub mod grid;
pub mod interpolate;
pub mod kernels;
pub mod nn;
pub mod norm;
pub mod pooling;
pub mod rope;
mod taps;
pub mod transposed_conv;
pub mod volumetric;
pub use conv1d::*;
pub use convolution::Conv;
pub use grid::*;
pub use interpolate::*;
pub use pooling::*;
pub use transposed_conv::*;
pub use volumetric::*;

/// The README's example, compiled and run as a doctest so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctest;
