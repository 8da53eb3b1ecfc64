//! What changed between candle releases, asserted at the pinned one (0.11.0), like
//! `candle_native.rs`: scripts/measure_candle_versions.sh runs both files against 0.9.2, 0.10.0
//! and 0.11.1, and a test that fails there is a behaviour that release changed
//! (docs/candle-measured.md, "Other candle releases").

use candle_core::{DType, Device, Result, Tensor, Var};

/// Claim (candle 0.11.1's backprop.rs: "index_select accepts strided ids but index_add requires
/// contiguous ones"): at 0.11.0 `index_select` with non-contiguous ids (a column of an id
/// matrix, as `input_ids.i((.., 0))`) runs forward, but `backward()` fails in the `index_add`
/// that accumulates its gradient. Measured: the error is `index-add` requiring contiguous ids.
#[test]
fn index_select_backward_with_strided_ids_fails() -> Result<()> {
    let dev = Device::Cpu;
    let table = Var::from_tensor(&Tensor::arange(0f64, 12., &dev)?.reshape((4, 3))?)?;
    let ids = Tensor::new(&[[3u32, 0], [1, 2], [0, 1]], &dev)?
        .narrow(1, 0, 1)?
        .squeeze(1)?;
    assert!(!ids.is_contiguous());
    let rows = table.index_select(&ids, 0)?;
    assert_eq!(rows.to_vec2::<f64>()?[0], [9., 10., 11.]); // the forward is right
    let err = rows
        .sum_all()?
        .backward()
        .expect_err("0.11.0's index_select backward with strided ids");
    let message = err.to_string();
    assert!(
        message.contains("index-add") && message.contains("contiguous"),
        "{message}"
    );
    // the same ids made contiguous differentiate
    let grads = table
        .index_select(&ids.contiguous()?, 0)?
        .sum_all()?
        .backward()?;
    let grad = grads.get(&table).expect("gradient");
    assert_eq!(
        grad.sum_all()?.to_dtype(DType::F64)?.to_scalar::<f64>()?,
        9.0
    );
    Ok(())
}
