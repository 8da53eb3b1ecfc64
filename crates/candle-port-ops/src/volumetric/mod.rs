//! 3-D (volumetric) ops: `F.conv3d`, `F.conv_transpose3d`, and 3-D max, average and adaptive
//! pooling, equal to torch's in forward and backward.
//!
//! candle 0.11 has no 3-D convolution or pooling at all. `conv3d` gathers the input elements
//! each output position reads (`index_select`, a zero for padding) and applies the kernel with
//! one `matmul` per group (an im2col); `conv_transpose3d` is the col2im of the transposed
//! convolutions (`matmul`, then `index_add` into the output); the pools
//! are the 2-D pools' compositions with a third axis (one `gather` for max pooling, one window
//! matmul per axis for average pooling). Every op is differentiable in candle.
//!
//! Inputs are batched, (N, C, D, H, W).

mod conv;
mod pool;

pub use conv::{conv3d, conv_transpose3d};
pub use pool::{
    adaptive_avg_pool3d, adaptive_max_pool3d, adaptive_max_pool3d_with_indices, avg_pool3d,
    max_pool3d, max_pool3d_with_indices,
};
