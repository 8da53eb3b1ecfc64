//! Execute a traced PyTorch graph in candle and differentiate it.
//!
//! `candle_port.verify.graph_export` (Python) writes `graph.json` (format `candle-port-graph`,
//! version 1), `tensors.safetensors` and torch's own results; this crate runs the graph with the
//! parameters as `Var`s, the loss `sum_i sum(output_i * upstream_i)`, `backward()`, and reports
//! per node: ok, candle's error, no mapping (named with the user's source line, never guessed),
//! or a backward candle does not have. Ops with a candle-port-ops twin run in two modes
//! ([`ops::OpsMode`]): candle's own op, and the twin.

pub mod exec;
pub mod graph;
pub mod measure;
pub mod ops;
pub mod report;
pub mod value;
