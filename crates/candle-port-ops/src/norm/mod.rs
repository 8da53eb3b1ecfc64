//! `LayerNorm` and `RmsNorm` that train: the same layers, constructors and configuration as
//! candle-nn's, with a forward built only from ops candle differentiates.
//!
//! candle-nn 0.11.0's `LayerNorm::forward` (contiguous input, with a bias) and
//! `RmsNorm::forward` (contiguous input) call the fused `candle_nn::ops::layer_norm` /
//! `rms_norm` custom ops, which record no backward: `loss.backward()` returns without an error
//! and the input, weight and bias simply get no gradient, so an optimizer never updates them
//! (fine-tuning a ViT in candle trains its classifier head only). The fused ops also refuse
//! float64. Here the same layers compute `(x - mean) / sqrt(var + eps) * weight + bias` from
//! `sum_keepdim`, `sqr`, `sqrt`, `recip` and broadcast arithmetic, which candle differentiates,
//! with `eps` kept in float64 (candle-nn's `*_slow` functions round it to f32), equal to torch's
//! `F.layer_norm` / `F.rms_norm` in forward and in the gradients of the input, weight and bias.

mod layer;
pub mod ops;
mod rms;

pub use candle_nn::LayerNormConfig;
pub use layer::{layer_norm, layer_norm_no_bias, LayerNorm};
pub use rms::{rms_norm, RmsNorm};
