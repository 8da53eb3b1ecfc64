//! candle-nn style layers over this crate's ops: structs implementing [`candle_nn::Module`], so a
//! port reads like candle-nn code (`xs.apply(&pool)?`), and builders that take the weights from a
//! [`candle_nn::VarBuilder`] under torch's names (`weight`, `bias`), as `candle_nn::conv2d` does.
//!
//! The names follow torch's layers (`nn.Upsample`, `nn.MaxPool2d`, `nn.ConvTranspose2d`, ...);
//! some are also candle-nn names, so import this module under its path
//! (`use candle_port_ops::nn as port_nn;`) next to `candle_nn`.

mod conv;
mod pool;
mod resize;

pub use conv::{
    conv1d, conv1d_no_bias, conv3d, conv3d_no_bias, conv_transpose1d, conv_transpose1d_no_bias,
    conv_transpose2d, conv_transpose2d_no_bias, conv_transpose3d, conv_transpose3d_no_bias, Conv1d,
    Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d,
};
pub use pool::{
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,
    AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d,
};
pub use resize::Upsample;
