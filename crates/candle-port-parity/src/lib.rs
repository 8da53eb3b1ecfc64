//! Check a candle port against its PyTorch original, forward per module and backward per
//! parameter, and check that a candle model trains at all.
//!
//! The torch side is written by `candle-port reference MODEL --input-shape ... --out DIR`
//! (torch's weights, inputs, outputs, every submodule's output and every parameter's gradient).
//! A port's test opens DIR with [`Parity`], builds the port from [`Parity::var_builder`] (torch's
//! weights under torch's names), and runs [`Parity::check`]; `candle-port compare DIR` then names
//! the first module whose output diverges, every gradient that differs or is missing, weights
//! the port never loaded, and shape mismatches.
//!
//! ```no_run
//! use candle_port_parity::{record, Parity};
//! # fn main() -> candle_core::Result<()> {
//! let parity = Parity::open("parity/mlp")?;
//! let vb = parity.var_builder();
//! let fc1 = candle_nn::linear(8, 16, vb.pp("fc1"))?;
//! let fc2 = candle_nn::linear(16, 2, vb.pp("fc2"))?;
//! let summary = parity.check(|xs| {
//!     let h = candle_core::Module::forward(&fc1, &xs[0])?.relu()?;
//!     record("fc1", &h); // optional: compared with torch's fc1 output, by name
//!     candle_core::Module::forward(&fc2, &h)
//! })?;
//! summary.ensure_trains()?;
//! # Ok(())
//! # }
//! ```
//!
//! Without torch, [`check_gradients`] lists the Vars of a `VarMap` that a backward left without
//! a gradient: candle-nn's fused LayerNorm, softmax_last_dim and rope cut the graph silently.

mod backend;
mod explain;
mod gradients;
mod manifest;
mod parity;
mod recorder;
mod renames;

pub use backend::{Request, Status};
pub use gradients::{check_gradients, GradientReport};
pub use parity::{Outputs, Parity, Summary};
pub use recorder::{is_recording, record, recorded};
pub use renames::Renames;
