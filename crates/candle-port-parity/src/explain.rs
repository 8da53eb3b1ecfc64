//! What to tell a candle user whose backward failed or left Vars without a gradient.
//!
//! candle's graph is not public, so the cause is told from what candle-port measured about
//! candle (docs/candle-measured.md) and from where the gradient stops in the port's own order.

use candle_core::Var;

/// The fix candle-port offers for each op whose backward candle lacks, by candle's op name.
const NO_BACKWARD: &[(&str, &str)] = &[
    (
        "upsample_bilinear2d",
        "candle_port_ops::interpolate (mode Bilinear)",
    ),
    (
        "upsample_nearest2d",
        "candle_port_ops::interpolate (mode Nearest)",
    ),
    (
        "upsample_nearest1d",
        "candle_port_ops::interpolate (mode Nearest)",
    ),
    ("max-pool2d", "candle_port_ops::pooling::max_pool2d"),
    ("maxpool2d", "candle_port_ops::pooling::max_pool2d"),
    ("avg-pool2d", "candle_port_ops::pooling::avg_pool2d"),
    ("avgpool2d", "candle_port_ops::pooling::avg_pool2d"),
    (
        "conv-transpose1d",
        "candle_port_ops::transposed_conv::conv_transpose1d",
    ),
    (
        "conv_transpose1d",
        "candle_port_ops::transposed_conv::conv_transpose1d",
    ),
];

/// `message` (a candle backward error) with the replacement candle-port offers, where one exists.
pub(crate) fn backward_hint(message: &str) -> String {
    let lower = message.to_lowercase();
    for (op, fix) in NO_BACKWARD {
        if lower.contains(op) {
            return format!("{message} (candle has no backward for it here: use {fix}, equal to torch in forward and backward)");
        }
    }
    message.to_string()
}

/// Names that usually hold a normalisation layer's weight: candle-nn's `LayerNorm` and
/// `RmsNorm` take the fused `candle_nn::ops::layer_norm`/`rms_norm` path, which records no graph.
fn is_norm(name: &str) -> bool {
    let last_module = name.rsplit('.').nth(1).unwrap_or("").to_lowercase();
    ["norm", "ln", "layernorm"]
        .iter()
        .any(|n| last_module.contains(n))
}

const FUSED: &str = "candle-nn's fused ops record no backward and cut the gradient without an error: \
LayerNorm/RmsNorm (candle_nn::layer_norm/rms_norm, ops::layer_norm/rms_norm), ops::softmax_last_dim, \
rotary_emb::rope/rope_i/rope_thd; use ops::softmax(x, D::Minus1), ops::layer_norm_slow/rms_norm_slow, \
rotary_emb::rope_slow/rope_i_slow, or `port-check` on the Rust source to find them";

/// Why the Vars in `missing` (a subset of `vars`, which are in the port's creation order) may
/// have no gradient, where it can be told.
pub(crate) fn explain_missing(missing: &[String], vars: &[(String, Var)]) -> Option<String> {
    if missing.is_empty() {
        return None;
    }
    let mut lines = Vec::new();
    let norms: Vec<&String> = missing.iter().filter(|n| is_norm(n)).collect();
    if !norms.is_empty() {
        lines.push(format!(
            "{} of them belong to normalisation layers ({}{})",
            norms.len(),
            norms
                .iter()
                .take(3)
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            if norms.len() > 3 { ", ..." } else { "" }
        ));
    }
    let has: Vec<bool> = vars.iter().map(|(n, _)| !missing.contains(n)).collect();
    if let Some(first_with) = has.iter().position(|h| *h) {
        if first_with > 0 && has[first_with..].iter().all(|h| *h) {
            lines.push(format!(
                "the gradient stops between {} (the last Var without one, in the order the port created them) and {} (the first with one)",
                vars[first_with - 1].0, vars[first_with].0
            ));
        }
    } else {
        lines.push("no Var got a gradient: the loss does not reach any of them (a detach, a fused op, or a loss built from constants)".into());
    }
    lines.push(FUSED.to_string());
    Some(lines.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device};

    #[test]
    fn a_cut_between_a_norm_and_the_head_is_named() {
        let v = |n: &str| {
            (
                n.to_string(),
                Var::zeros(1, DType::F32, &Device::Cpu).unwrap(),
            )
        };
        let vars = vec![
            v("blocks.0.norm1.weight"),
            v("blocks.0.fc.weight"),
            v("head.weight"),
        ];
        let missing = vec![
            "blocks.0.norm1.weight".to_string(),
            "blocks.0.fc.weight".to_string(),
        ];
        let text = explain_missing(&missing, &vars).unwrap();
        assert!(
            text.contains("1 of them belong to normalisation layers (blocks.0.norm1.weight)"),
            "{text}"
        );
        assert!(text.contains("between blocks.0.fc.weight"), "{text}");
        assert!(text.contains("and head.weight"), "{text}");
    }

    #[test]
    fn a_known_missing_backward_gets_its_replacement() {
        let text = backward_hint("backward not supported for upsample_bilinear2d");
        assert!(text.contains("candle_port_ops::interpolate"), "{text}");
        assert_eq!(backward_hint("something else"), "something else");
    }
}
