//! The port of fixtures/parity/small_net.py, right or with one planted defect.

use candle_core::{Module, ModuleT, Result, Tensor, D};
use candle_nn::{BatchNorm, Conv2d, Conv2dConfig, LayerNorm, Linear, VarBuilder};
use candle_port_ops::{interpolate, max_pool2d, Interpolate, Mode, Pool};
use candle_port_parity::record;

/// The defects a test plants, one at a time.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Defect {
    None,
    TransposedLinear,
    BatchNormEps,
    DroppedResidual,
    AlignCorners,
    FusedLayerNorm,
    CandleMaxPool,
}

impl Defect {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "none" => Self::None,
            "transposed-linear" => Self::TransposedLinear,
            "batchnorm-eps" => Self::BatchNormEps,
            "dropped-residual" => Self::DroppedResidual,
            "align-corners" => Self::AlignCorners,
            "fused-layernorm" => Self::FusedLayerNorm,
            "candle-max-pool" => Self::CandleMaxPool,
            _ => return None,
        })
    }
}

pub struct SmallNet {
    stem: Conv2d,
    bn: BatchNorm,
    block: Conv2d,
    norm: LayerNorm,
    head_weight: Tensor,
    head: Linear,
    defect: Defect,
}

impl SmallNet {
    pub fn new(vb: VarBuilder, defect: Defect) -> Result<Self> {
        let pad = Conv2dConfig {
            padding: 1,
            ..Default::default()
        };
        let eps = if defect == Defect::BatchNormEps {
            1e-4
        } else {
            1e-5
        };
        let head_weight = if defect == Defect::TransposedLinear {
            vb.pp("head").get((8, 5), "weight")?
        } else {
            vb.pp("head").get((5, 8), "weight")?
        };
        Ok(Self {
            stem: candle_nn::conv2d(3, 8, 3, pad, vb.pp("stem"))?,
            bn: candle_nn::batch_norm(8, eps, vb.pp("bn"))?,
            block: candle_nn::conv2d(8, 8, 3, pad, vb.pp("block.conv"))?,
            norm: candle_nn::layer_norm(8, 1e-5, vb.pp("norm"))?,
            head: Linear::new(head_weight.clone(), Some(vb.pp("head").get(5, "bias")?)),
            head_weight,
            defect,
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = self.stem.forward(x)?;
        record("stem", &x);
        let x = self.bn.forward_t(&x, false)?;
        record("bn", &x);
        let x = x.relu()?;
        let conv = self.block.forward(&x)?;
        record("block.conv", &conv);
        let x = if self.defect == Defect::DroppedResidual {
            conv.relu()?
        } else {
            (&x + conv.relu()?)?
        };
        record("block", &x);
        let x = if self.defect == Defect::CandleMaxPool {
            x.max_pool2d(2)?
        } else {
            max_pool2d(&x, &Pool::new(&[2]))?
        };
        record("pool", &x);
        let align = self.defect == Defect::AlignCorners;
        let x = interpolate(
            &x,
            &Interpolate::scale(&[2.0], Mode::Bilinear).align_corners(align),
        )?;
        record("up", &x);
        let x = x.mean(D::Minus1)?.mean(D::Minus1)?;
        let x = if self.defect == Defect::FusedLayerNorm {
            self.norm.forward(&x)? // candle-nn's LayerNorm: the fused op, which records no graph
        } else {
            let w = self.norm.weight();
            let b = self
                .norm
                .bias()
                .ok_or_else(|| candle_core::Error::Msg("no bias".into()))?;
            candle_nn::ops::layer_norm_slow(&x, w, b, 1e-5)?
        };
        record("norm", &x);
        let x = if self.defect == Defect::TransposedLinear {
            x.matmul(&self.head_weight)?.broadcast_add(
                &self
                    .head
                    .bias()
                    .cloned()
                    .ok_or_else(|| candle_core::Error::Msg("no bias".into()))?,
            )?
        } else {
            self.head.forward(&x)?
        };
        record("head", &x);
        Ok(x)
    }
}
