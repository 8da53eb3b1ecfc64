//! The U-Net of `examples/unet.py` in candle, with its parameters named as torch's `state_dict`.
//!
//! Two op sets: `OpSet::Port` resizes and pools with candle-port-ops (built from candle ops that
//! have a backward): `nn.MaxPool2d` and `nn.Upsample` are its `nn` layers, applied as candle-nn
//! layers are, and `F.interpolate` its function; `OpSet::Native` with candle's own `upsample_bilinear2d` and
//! `max_pool2d`, the port a user writes first: its forward equals torch's, its backward fails.

use candle_core::{Result, Tensor};
use candle_nn::{BatchNorm, Conv2d, Conv2dConfig, Module, VarBuilder};

use candle_port_ops as ops;
use candle_port_ops::nn as port_nn;

/// Which resize and pool ops the model calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpSet {
    /// candle-port-ops: the `MaxPool2d` and `Upsample` layers and `interpolate`, which train.
    Port,
    /// candle's `Tensor::upsample_bilinear2d` and `Tensor::max_pool2d`.
    Native,
}

/// `nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())`.
struct Block {
    conv: Conv2d,
    bn: BatchNorm,
}

impl Block {
    /// Weights under torch's names: `{vb}.0.weight`, `.0.bias` (the conv), `.1.*` (BatchNorm).
    fn new(cin: usize, cout: usize, vb: VarBuilder) -> Result<Self> {
        let config = Conv2dConfig {
            padding: 1,
            ..Default::default()
        };
        let conv = candle_nn::conv2d(cin, cout, 3, config, vb.pp("0"))?;
        let bn = candle_nn::batch_norm(cout, 1e-5, vb.pp("1"))?;
        Ok(Self { conv, bn })
    }

    /// Training mode: BatchNorm normalises with the batch's statistics, as torch's `.train()`.
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.bn.forward_train(&self.conv.forward(x)?)?.relu()
    }
}

/// `examples/unet.py`'s `UNet(channels=3, width=8, classes=2)`.
pub struct UNet {
    down1: Block,
    down2: Block,
    bottom: Block,
    dec2: Block,
    dec1: Block,
    head: Conv2d,
    pool: port_nn::MaxPool2d,
    up: port_nn::Upsample,
    ops: OpSet,
}

impl UNet {
    /// Build the model from `vb`, under torch's `state_dict` names (a candle-port-parity
    /// VarBuilder serves torch's own weights).
    pub fn new(vb: VarBuilder, ops: OpSet) -> Result<Self> {
        let width = 8;
        let down1 = Block::new(3, width, vb.pp("down1"))?;
        let down2 = Block::new(width, 2 * width, vb.pp("down2"))?;
        let bottom = Block::new(2 * width, 2 * width, vb.pp("bottom"))?;
        let dec2 = Block::new(4 * width, width, vb.pp("dec2"))?;
        let dec1 = Block::new(2 * width, width, vb.pp("dec1"))?;
        let head = candle_nn::conv2d(width, 2, 1, Conv2dConfig::default(), vb.pp("head"))?;
        Ok(Self {
            down1,
            down2,
            bottom,
            dec2,
            dec1,
            head,
            pool: port_nn::MaxPool2d::new(ops::Pool::new(&[2])),
            up: port_nn::Upsample::new(
                ops::Interpolate::scale(&[2.0], ops::Mode::Bilinear).align_corners(false),
            ),
            ops,
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let d1 = self.down1.forward(x)?;
        let d2 = self.down2.forward(&self.pool(&d1)?)?;
        let b = self.bottom.forward(&self.pool(&d2)?)?;
        let u2 = self.dec2.forward(&Tensor::cat(&[&self.up(&b)?, &d2], 1)?)?;
        // Resize to the skip connection's exact size (odd sizes round differently).
        let (_, _, h, w) = d1.dims4()?;
        let u1 = self.resize(&u2, h, w)?;
        let u1 = self.dec1.forward(&Tensor::cat(&[&u1, &d1], 1)?)?;
        self.head.forward(&u1)
    }

    /// `nn.MaxPool2d(2)`.
    fn pool(&self, x: &Tensor) -> Result<Tensor> {
        match self.ops {
            OpSet::Port => x.apply(&self.pool),
            OpSet::Native => x.max_pool2d(2),
        }
    }

    /// `nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)`.
    fn up(&self, x: &Tensor) -> Result<Tensor> {
        match self.ops {
            OpSet::Port => x.apply(&self.up),
            OpSet::Native => {
                let (_, _, h, w) = x.dims4()?;
                x.upsample_bilinear2d(2 * h, 2 * w, false)
            }
        }
    }

    /// `F.interpolate(x, size=(h, w), mode="bilinear", align_corners=False)`.
    fn resize(&self, x: &Tensor, h: usize, w: usize) -> Result<Tensor> {
        match self.ops {
            OpSet::Port => ops::interpolate(
                x,
                &ops::Interpolate::size(&[h, w], ops::Mode::Bilinear).align_corners(false),
            ),
            OpSet::Native => x.upsample_bilinear2d(h, w, false),
        }
    }
}
