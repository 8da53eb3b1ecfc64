//! Spatial transformers: `F.grid_sample` (2-D; bilinear, nearest and bicubic; padding zeros,
//! border and reflection; align_corners) and `F.affine_grid` (2-D), equal to torch's in forward
//! and in the gradients w.r.t. the input, the grid and theta.
//!
//! candle has no grid sampling. Here the source coordinates are computed from the grid with
//! elementwise ops (torch's unnormalize, border clip and reflection, each with torch's gradient:
//! the clip passes the gradient strictly inside the image only, the reflection flips its sign),
//! the integer tap positions are found without gradient, the taps are read with one
//! `index_select` of whole channel rows (an appended zero row stands for taps outside the
//! image), and the interpolation weights are polynomials of the coordinates' fractional parts.
//! So the input gradient is `index_select`'s `index_add` and the grid gradient flows through the
//! weights, as torch's.

mod affine;
mod options;
mod sample;

pub use affine::affine_grid;
pub use options::{GridMode, GridPadding, GridSample};
pub use sample::grid_sample;
