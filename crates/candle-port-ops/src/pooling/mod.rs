//! Pooling: 1-D/2-D max, average and adaptive pooling, equal to torch's (`F.max_pool2d`, ...)
//! in values, indices and gradient.
//!
//! Max pools touch the input only through one `gather` (the chosen element of each window is
//! found without gradient by `index_select` of the windows and `argmax`), so the gradient goes
//! to that element only, as torch's. Average and adaptive average pools are one matmul per axis
//! with a window matrix weighted by its share of torch's divisor. Never candle's own
//! `max_pool2d` / `avg_pool2d`: their backward bails unless kernel == stride.
//!
//! Inputs are batched, (N, C, L) or (N, C, H, W), float (f16 / bf16 average pools are summed
//! in f32). Indices are `i64`, flat per plane (`h * W + w`), as torch's.

pub(crate) mod adaptive;
pub(crate) mod avg;
mod input;
pub(crate) mod max;
mod options;
mod windows;

pub use adaptive::{
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices, adaptive_max_pool2d, adaptive_max_pool2d_with_indices,
};
pub use avg::{avg_pool1d, avg_pool2d};
pub use max::{max_pool1d, max_pool1d_with_indices, max_pool2d, max_pool2d_with_indices};
pub use options::Pool;
