//! The per-op report written next to the results (`candle-<mode>.json`).

use serde::Serialize;

/// candle version the workspace pins (Cargo.toml `candle-core = "=0.11.0"`).
pub const CANDLE_VERSION: &str = "0.11.0";

/// What happened to one node.
#[derive(Debug, Clone, Serialize)]
pub struct NodeReport {
    /// fx node name.
    pub name: String,
    /// ATen op.
    pub op: String,
    /// `ok`, `error` (candle's message), `no_mapping`, `skipped` (an input failed),
    /// `unused` (nothing reads it), `backward_error` (candle cannot differentiate it).
    pub status: String,
    /// candle's message, or why it was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The user's source line.
    pub location: Option<String>,
    /// The text of that line.
    pub code: Option<String>,
}

/// How backward went.
#[derive(Debug, Clone, Serialize, Default)]
pub struct BackwardReport {
    /// False when the forward did not reach the loss.
    pub ran: bool,
    /// True when candle returned gradients.
    pub ok: bool,
    /// candle's error, first line.
    pub message: Option<String>,
    /// Nodes the error is pinned on (by the candle op it names).
    pub nodes: Vec<String>,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// `candle-port-run-report`.
    pub format: &'static str,
    /// Report format version.
    pub version: u32,
    /// `native` or `port`.
    pub mode: &'static str,
    /// candle version.
    pub candle: &'static str,
    /// Every node computed and backward returned a gradient for every parameter.
    pub ok: bool,
    /// Every output was computed.
    pub forward_ok: bool,
    /// Backward's outcome.
    pub backward: BackwardReport,
    /// Parameters that got no gradient from candle.
    pub missing_gradients: Vec<String>,
    /// Node reports in graph order.
    pub nodes: Vec<NodeReport>,
}

/// First line of a candle error (no backtrace).
pub fn first_line(e: &candle_core::Error) -> String {
    e.to_string().lines().next().unwrap_or("").to_string()
}
