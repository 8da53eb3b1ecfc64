//! A ViT encoder block as candle-transformers 0.11.0 writes it (src/models/vit.rs): it runs
//! forward, and trains nothing before the classifier head (docs/rust.md).
use candle::{Module, Result, Tensor};
use candle_nn::{layer_norm, linear, LayerNorm, Linear, VarBuilder};

pub struct Block {
    norm1: LayerNorm,
    qkv: Linear,
    proj: Linear,
    num_heads: usize,
}

impl Block {
    pub fn new(dim: usize, num_heads: usize, vb: VarBuilder) -> Result<Self> {
        let norm1 = layer_norm(dim, 1e-6, vb.pp("norm1"))?;
        let qkv = linear(dim, dim * 3, vb.pp("qkv"))?;
        let proj = linear(dim, dim, vb.pp("proj"))?;
        Ok(Self {
            norm1,
            qkv,
            proj,
            num_heads,
        })
    }
}

impl Module for Block {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let (b, n, c) = xs.dims3()?;
        let qkv = self
            .qkv
            .forward(&xs.apply(&self.norm1)?)?
            .reshape((b, n, 3, self.num_heads, c / self.num_heads))?
            .permute((2, 0, 3, 1, 4))?;
        let (q, k, v) = (qkv.get(0)?, qkv.get(1)?, qkv.get(2)?);
        let attn = (q.matmul(&k.t()?)? * (c as f64 / self.num_heads as f64).powf(-0.5))?;
        let attn = candle_nn::ops::softmax_last_dim(&attn)?;
        let ys = attn.matmul(&v)?.transpose(1, 2)?.reshape((b, n, c))?;
        xs + self.proj.forward(&ys)?
    }
}
