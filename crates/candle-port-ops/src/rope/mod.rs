//! Rotary position embeddings that train: `candle_nn::rotary_emb::{rope, rope_i, rope_thd}` with
//! the same arguments and checks, built from ops candle differentiates.
//!
//! candle-nn 0.11.0's three are fused ops that record no backward (`loss.backward()` returns
//! and the queries and keys get no gradient through them). Its `rope_slow` and `rope_i_slow`
//! differentiate but accept only 2-D `cos`/`sin` (candle's fused ones also take a per-batch
//! `(B, T, D/2)`), and `rope_thd` has no slow twin at all. These accept what the fused ones
//! accept, contiguous or not, and differentiate w.r.t. `x`, `cos` and `sin`.

use candle_core::{bail, Result, Tensor, D};

/// `cos`/`sin` as `(B or 1, T, D/2)`, cut to the `seq_len` positions used, after candle-nn's
/// checks: 2-D `(T', D/2)` or per batch `(B, T', D/2)`, `T' >= seq_len`, `2 * D/2 == n_embd`.
fn angles(cs: &Tensor, which: &str, b_sz: usize, seq_len: usize, n_embd: usize) -> Result<Tensor> {
    let dims = cs.dims().to_vec();
    let cs = match *cs.dims() {
        [_, _] => cs.unsqueeze(0)?,
        [b, _, _] if b == b_sz => cs.clone(),
        [_, _, _] => bail!(
            "rope: {which} {:?} has another batch size than x's {b_sz}",
            cs.dims()
        ),
        _ => bail!(
            "rope: {which} {:?} must be 2-D (T, D/2) or 3-D (B, T, D/2)",
            cs.dims()
        ),
    };
    let (_, t, half) = cs.dims3()?;
    if 2 * half != n_embd || t < seq_len {
        bail!("rope: {which} {dims:?} does not fit {seq_len} positions of width {n_embd}")
    }
    cs.narrow(1, 0, seq_len)
}

/// The halves form (GPT-NeoX, Llama): `x * cos + rotate_half(x) * sin` with `cos`/`sin` repeated
/// over the two halves of the last dimension, `rotate_half(x) = cat(-x2, x1)`.
///
/// `x` (B, H, T, D); `cos`, `sin` (T', D/2) or (B, T', D/2) with T' >= T, as
/// `candle_nn::rotary_emb::rope`, whose forward this equals.
///
/// ```
/// use candle_core::{Device, Tensor, Var};
/// let x = Var::new(&[[[[1f32, 2., 3., 4.]]]], &Device::Cpu)?; // (1, 1, 1, 4)
/// let cos = Tensor::new(&[[0f32, 1.]], &Device::Cpu)?; // a quarter turn, then none
/// let sin = Tensor::new(&[[1f32, 0.]], &Device::Cpu)?;
/// let y = candle_port_ops::rope::rope(&x, &cos, &sin)?;
/// assert_eq!(y.flatten_all()?.to_vec1::<f32>()?, [-3., 2., 1., 4.]);
/// assert!(y.sum_all()?.backward()?.get(&x).is_some()); // candle-nn's: None
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn rope(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    let (b_sz, _, seq_len, n_embd) = x.dims4()?;
    let cos = angles(cos, "cos", b_sz, seq_len, n_embd)?;
    let sin = angles(sin, "sin", b_sz, seq_len, n_embd)?;
    let cos = Tensor::cat(&[&cos, &cos], D::Minus1)?.unsqueeze(1)?;
    let sin = Tensor::cat(&[&sin, &sin], D::Minus1)?.unsqueeze(1)?;
    let half = n_embd / 2;
    let rotated = Tensor::cat(
        &[
            &x.narrow(D::Minus1, half, half)?.neg()?,
            &x.narrow(D::Minus1, 0, half)?,
        ],
        D::Minus1,
    )?;
    x.broadcast_mul(&cos)? + rotated.broadcast_mul(&sin)?
}

/// The interleaved form (GPT-J, RoFormer): each pair `(x[2i], x[2i+1])` rotated by angle `i`:
/// `(x0 cos - x1 sin, x0 sin + x1 cos)`.
///
/// `x` (B, H, T, D); `cos`, `sin` (T', D/2) or (B, T', D/2) with T' >= T, as
/// `candle_nn::rotary_emb::rope_i`, whose forward this equals.
///
/// ```
/// use candle_core::{Device, Tensor, Var};
/// let x = Var::new(&[[[[1f32, 2., 3., 4.]]]], &Device::Cpu)?;
/// let cos = Tensor::new(&[[0f32, 1.]], &Device::Cpu)?;
/// let sin = Tensor::new(&[[1f32, 0.]], &Device::Cpu)?;
/// let y = candle_port_ops::rope::rope_i(&x, &cos, &sin)?;
/// assert_eq!(y.flatten_all()?.to_vec1::<f32>()?, [-2., 1., 3., 4.]);
/// assert!(y.sum_all()?.backward()?.get(&x).is_some());
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn rope_i(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    let (b_sz, n_head, seq_len, n_embd) = x.dims4()?;
    let cos = angles(cos, "cos", b_sz, seq_len, n_embd)?
        .unsqueeze(1)?
        .unsqueeze(4)?;
    let sin = angles(sin, "sin", b_sz, seq_len, n_embd)?
        .unsqueeze(1)?
        .unsqueeze(4)?;
    let pairs = x.reshape((b_sz, n_head, seq_len, n_embd / 2, 2))?;
    let x0 = pairs.narrow(D::Minus1, 0, 1)?;
    let x1 = pairs.narrow(D::Minus1, 1, 1)?;
    let y0 = (x0.broadcast_mul(&cos)? - x1.broadcast_mul(&sin)?)?;
    let y1 = (x0.broadcast_mul(&sin)? + x1.broadcast_mul(&cos)?)?;
    Tensor::cat(&[y0, y1], D::Minus1)?.flatten_from(D::Minus2)
}

/// [`rope`] on the (B, T, H, D) layout, as `candle_nn::rotary_emb::rope_thd` (which has no
/// differentiable twin in candle-nn): the same rotation with heads after positions.
///
/// ```
/// use candle_core::{Device, Tensor, Var};
/// let x = Var::new(&[[[[1f32, 2., 3., 4.]]]], &Device::Cpu)?; // (B, T, H, D) = (1, 1, 1, 4)
/// let cos = Tensor::new(&[[0f32, 1.]], &Device::Cpu)?;
/// let sin = Tensor::new(&[[1f32, 0.]], &Device::Cpu)?;
/// let y = candle_port_ops::rope::rope_thd(&x, &cos, &sin)?;
/// assert_eq!(y.flatten_all()?.to_vec1::<f32>()?, [-3., 2., 1., 4.]);
/// # Ok::<(), candle_core::Error>(())
/// ```
pub fn rope_thd(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    rope(&x.transpose(1, 2)?, cos, sin)?.transpose(1, 2)
}
