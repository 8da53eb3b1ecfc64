//! The U-Net of `examples/unet.py` in candle, with its parameters named as torch's `state_dict`.
//!
//! Two op sets: `OpSet::Port` resizes and pools with candle-port-ops (built from candle ops that
//! have a backward): `nn.MaxPool2d` and `nn.Upsample` are its `nn` layers, applied as candle-nn
//! layers are, and `F.interpolate` its function; `OpSet::Native` with candle's own `upsample_bilinear2d` and
//! `max_pool2d`, the port a user writes first: its forward equals torch's, its backward fails.

use std::collections::HashMap;

use candle_core::{bail, DType, Result, Tensor, Var};
use candle_nn::{BatchNorm, Conv2d, Conv2dConfig, Module};

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

/// The tensors of a torch `state_dict`, handed out by name as trainable `Var`s or as buffers.
pub struct Store {
    tensors: HashMap<String, Tensor>,
    dtype: DType,
    params: Vec<(String, Var)>,
}

impl Store {
    /// Keep `tensors` (torch's names), cast to `dtype` when taken.
    pub fn new(tensors: HashMap<String, Tensor>, dtype: DType) -> Self {
        Self {
            tensors,
            dtype,
            params: Vec::new(),
        }
    }

    fn take(&mut self, name: &str) -> Result<Tensor> {
        match self.tensors.remove(name) {
            Some(t) => t.to_dtype(self.dtype),
            None => bail!("the weights file has no tensor {name:?}"),
        }
    }

    /// A trainable parameter; it is listed by `params` in creation order.
    fn param(&mut self, name: &str) -> Result<Tensor> {
        let var = Var::from_tensor(&self.take(name)?)?;
        let tensor = var.as_tensor().clone();
        self.params.push((name.to_string(), var));
        Ok(tensor)
    }

    /// Every parameter taken so far, with its torch name.
    pub fn params(&self) -> &[(String, Var)] {
        &self.params
    }

    /// Fail if the file holds tensors the model did not take (a renamed or extra layer).
    pub fn check_all_taken(&self) -> Result<()> {
        let mut left: Vec<&String> = self.tensors.keys().collect();
        left.sort();
        if !left.is_empty() {
            bail!("the weights file has tensors the model does not use: {left:?}")
        }
        Ok(())
    }
}

/// `nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())`.
struct Block {
    conv: Conv2d,
    bn: BatchNorm,
}

impl Block {
    fn new(store: &mut Store, prefix: &str) -> Result<Self> {
        let weight = store.param(&format!("{prefix}.0.weight"))?;
        let bias = store.param(&format!("{prefix}.0.bias"))?;
        let cout = weight.dim(0)?;
        let config = Conv2dConfig {
            padding: 1,
            ..Default::default()
        };
        let conv = Conv2d::new(weight, Some(bias), config);
        let gamma = store.param(&format!("{prefix}.1.weight"))?;
        let beta = store.param(&format!("{prefix}.1.bias"))?;
        let running_mean = store.take(&format!("{prefix}.1.running_mean"))?;
        let running_var = store.take(&format!("{prefix}.1.running_var"))?;
        let bn = BatchNorm::new(cout, running_mean, running_var, gamma, beta, 1e-5)?;
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
    /// Build the model from `store`, taking every tensor torch's `state_dict` holds.
    pub fn new(store: &mut Store, ops: OpSet) -> Result<Self> {
        let down1 = Block::new(store, "down1")?;
        let down2 = Block::new(store, "down2")?;
        let bottom = Block::new(store, "bottom")?;
        let dec2 = Block::new(store, "dec2")?;
        let dec1 = Block::new(store, "dec1")?;
        let head_weight = store.param("head.weight")?;
        let head_bias = store.param("head.bias")?;
        let head = Conv2d::new(head_weight, Some(head_bias), Conv2dConfig::default());
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
