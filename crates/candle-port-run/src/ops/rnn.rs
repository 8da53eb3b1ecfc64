//! Recurrent layers. `mkldnn_rnn_layer` is make_fx's trace of `nn.LSTM` in float32 on a CPU with
//! oneDNN: one direction of one layer, time-major `(T, B, F)` input (a `batch_first` LSTM is
//! transposed before it), outputs `(output, h_n, c_n, workspace)`. It runs with candle_nn's LSTM
//! ([`lstm_layer`]), the port `measure.rs` probes for `lstm`. In float64 make_fx traces `nn.LSTM`
//! to `addmm`, `unsafe_split`, `sigmoid_`, `tanh_`, `mul`, `add_` and `stack`, mapped elsewhere.

use std::collections::HashMap;

use candle_core::{bail, Result, Tensor};
use candle_nn::rnn::{Direction, LSTMConfig, LSTMState, RNN};

use crate::value::{Args, Value};

/// Maps the recurrent layers; `None` for other ops.
pub fn run(name: &str, args: &Args) -> Option<Result<Value>> {
    match name {
        "mkldnn_rnn_layer" => Some(mkldnn_rnn_layer(args)),
        _ => None,
    }
}

/// One LSTM layer in one direction with candle_nn's `LSTM` (`seq_init` from `(h0, c0)`):
/// `input` is batch-major `(B, T, F)`, `w_ih` `(4H, F)`, `w_hh` `(4H, H)`, the biases `(4H)`,
/// `h0` and `c0` `(B, H)`; gates in torch's order (input, forget, cell, output). `reverse` runs
/// the sequence from its end, as torch's reverse direction, and returns the outputs in input
/// order. Returns `(output (B, T, H), h_n, c_n)`.
#[allow(clippy::too_many_arguments)]
pub fn lstm_layer(
    input: &Tensor,
    w_ih: &Tensor,
    w_hh: &Tensor,
    b_ih: Option<&Tensor>,
    b_hh: Option<&Tensor>,
    h0: &Tensor,
    c0: &Tensor,
    reverse: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    let (hidden4, in_dim) = w_ih.dims2()?;
    let mut weights = HashMap::from([
        ("weight_ih_l0".to_string(), w_ih.clone()),
        ("weight_hh_l0".to_string(), w_hh.clone()),
    ]);
    let mut config = LSTMConfig {
        direction: Direction::Forward,
        ..LSTMConfig::default_no_bias()
    };
    if let (Some(b_ih), Some(b_hh)) = (b_ih, b_hh) {
        weights.insert("bias_ih_l0".into(), b_ih.clone());
        weights.insert("bias_hh_l0".into(), b_hh.clone());
        config = LSTMConfig {
            direction: Direction::Forward,
            ..LSTMConfig::default()
        };
    }
    let vb = candle_nn::VarBuilder::from_tensors(weights, input.dtype(), input.device());
    let lstm = candle_nn::rnn::lstm(in_dim, hidden4 / 4, config, vb)?;
    let steps = input.dim(1)?;
    let order: Vec<usize> = if reverse {
        (0..steps).rev().collect()
    } else {
        (0..steps).collect()
    };
    let ordered = if reverse {
        let frames = order
            .iter()
            .map(|&t| input.narrow(1, t, 1))
            .collect::<Result<Vec<_>>>()?;
        Tensor::cat(&frames, 1)?
    } else {
        input.clone()
    };
    let states = lstm.seq_init(&ordered, &LSTMState::new(h0.clone(), c0.clone()))?;
    let Some(last) = states.last() else {
        bail!("lstm over an empty sequence")
    };
    let (h_n, c_n) = (last.h().clone(), last.c().clone());
    let mut hs: Vec<Tensor> = states.iter().map(|s| s.h().clone()).collect();
    if reverse {
        hs.reverse();
    }
    Ok((Tensor::stack(&hs, 1)?, h_n, c_n))
}

/// `mkldnn_rnn_layer(input, w_ih, w_hh, b_ih, b_hh, hx, cx, reverse, batch_sizes, mode,
/// hidden_size, num_layers, has_biases, bidirectional, batch_first, train)`: LSTM (mode 2), not
/// packed; the workspace output is not computed.
fn mkldnn_rnn_layer(args: &Args) -> Result<Value> {
    let input = args.tensor(0, "input")?;
    let (w_ih, w_hh) = (args.tensor(1, "weight0")?, args.tensor(2, "weight1")?);
    let (h0, c0) = (args.tensor(5, "hx_")?, args.tensor(6, "cx_")?);
    let reverse = args.bool_or(7, "reverse", false)?;
    if !args.ints_or(8, "batch_sizes", &[])?.is_empty() {
        bail!("mkldnn_rnn_layer with a packed sequence (batch_sizes)")
    }
    let mode = args.int_or(9, "mode", 2)?;
    if mode != 2 {
        bail!("mkldnn_rnn_layer mode {mode}: only LSTM (2) is mapped")
    }
    let biases = if args.bool_or(12, "has_biases", true)? {
        Some((args.tensor(3, "weight2")?, args.tensor(4, "weight3")?))
    } else {
        None
    };
    let (out, h_n, c_n) = lstm_layer(
        &input.transpose(0, 1)?,
        &w_ih,
        &w_hh,
        biases.as_ref().map(|b| &b.0),
        biases.as_ref().map(|b| &b.1),
        &h0,
        &c0,
        reverse,
    )?;
    Ok(Value::Tuple(vec![
        Some(out.transpose(0, 1)?),
        Some(h_n),
        Some(c_n),
        None,
    ]))
}
