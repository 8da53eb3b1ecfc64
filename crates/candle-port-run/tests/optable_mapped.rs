//! Drift between verify's op table and this runner: every op that
//! `src/candle_port/verify/candle_ops.json` says candle runs (any class but `no-op`: `backward`,
//! `forward-only`, `conditional`, no-gradient ops, and ops with a measured wrong gradient or
//! caveat) must be mapped by [`candle_port_run::ops::mapped`], or be on one of the lists below with
//! its reason. Before this test the table measured `mish`, `softplus`, `celu`, `erf`, `log1p`,
//! `expm1`, `flip`, `roll` and `cumsum`, and `verify --candle` stopped at each of them (diffusers'
//! UNet1D: every run stopped at `aten.mish`).
//!
//! Numbers are checked against torch by `tests/verify/test_candle_run.py`'s op cases.

use std::collections::BTreeSet;

use candle_port_run::ops::mapped;

/// Names the table keeps for torch.export (the op-table check traces with it first) that make_fx,
/// which `verify --candle` traces with, never emits: it traces them to the mapped ops named
/// (checked with torch 2.14.1's make_fx, functionalized, as graph_export traces).
const NOT_IN_MAKE_FX: &[(&str, &str)] = &[
    (
        "_convolution",
        "TorchScript's spelling; make_fx: convolution",
    ),
    ("conv1d", "convolution"),
    (
        "lstm",
        "addmm, unsafe_split, sigmoid_, tanh_, mul, add_, stack; mkldnn_rnn_layer in float32 with oneDNN",
    ),
    ("conv2d", "convolution"),
    ("conv_transpose1d", "convolution"),
    ("conv_transpose2d", "convolution"),
    ("_copy_from", "_to_copy, copy"),
    ("_reshape_alias", "view"),
    ("_fused_rms_norm", "pow, mean, add, rsqrt, mul"),
    ("rms_norm", "pow, mean, add, rsqrt, mul"),
    (
        "scaled_dot_product_attention",
        "bmm, _safe_softmax, mul, ...",
    ),
    (
        "_scaled_dot_product_attention_math",
        "bmm, _safe_softmax, ...",
    ),
    (
        "_scaled_dot_product_efficient_attention",
        "a CUDA kernel; on the CPU: bmm, _safe_softmax",
    ),
    (
        "_scaled_dot_product_flash_attention",
        "a CUDA kernel; on the CPU: bmm, _safe_softmax",
    ),
    (
        "_scaled_dot_product_flash_attention_for_cpu",
        "graph_export decomposes it: bmm, _safe_softmax",
    ),
    ("_weight_norm", "_weight_norm_interface"),
    (
        "adaptive_avg_pool1d",
        "_adaptive_avg_pool2d, or mean for output 1",
    ),
    ("adaptive_max_pool1d", "adaptive_max_pool2d"),
    ("avg_pool1d", "avg_pool2d"),
    ("max_pool1d", "max_pool2d_with_indices"),
    ("max_pool1d_with_indices", "max_pool2d_with_indices"),
    (
        "alpha_dropout",
        "bernoulli, mul, add in training; nothing in eval",
    ),
    (
        "binary_cross_entropy_with_logits",
        "exp, log, clamp_min, mul, sub, mean",
    ),
    ("cross_entropy_loss", "_log_softmax, nll_loss_forward"),
    ("nll_loss", "nll_loss_forward"),
    ("l1_loss", "sub, abs, mean"),
    ("chunk", "split"),
    ("concat", "cat"),
    ("concatenate", "cat"),
    ("hstack", "cat"),
    ("vstack", "cat"),
    ("einsum", "bmm, permute, view"),
    ("expand_as", "expand"),
    ("flatten", "view"),
    ("unflatten", "view"),
    ("view_as", "view"),
    ("reshape_as", "view, _unsafe_view"),
    ("frobenius_norm", "linalg_vector_norm"),
    ("norm", "linalg_vector_norm"),
    ("group_norm", "native_group_norm"),
    ("instance_norm", "native_batch_norm"),
    ("isfinite", "abs, eq, ne"),
    ("log_softmax", "_log_softmax"),
    ("softmax", "_softmax"),
    ("logsigmoid", "log_sigmoid_forward"),
    ("meshgrid", "view, expand"),
    ("movedim", "permute"),
    ("swapaxes", "transpose"),
    ("narrow", "slice"),
    ("tensor_split", "slice"),
    ("outer", "mul of views"),
    ("pad", "constant_pad_nd"),
    ("take_along_dim", "gather"),
    ("tile", "repeat"),
    ("type_as", "_to_copy"),
    ("item", "make_fx cannot trace a value read out of a tensor"),
    (
        "_local_scalar_dense",
        "make_fx cannot trace a value read out of a tensor",
    ),
];

/// Creation ops without a tensor argument: their value depends on no input, so the exporter
/// computes it and candle gets a constant (graph_export; `tests/verify/test_graph_export_fold.py`).
const FOLDED_AT_EXPORT: &[&str] = &[
    "arange",
    "empty_strided",
    "eye",
    "full",
    "linspace",
    "logspace",
    "ones",
    "scalar_tensor",
    "tensor",
    "zeros",
];

/// Known gaps: make_fx emits these, candle runs them (measured), and the runner has no mapping
/// yet, so `verify --candle` stops at them and names the op and its source line. Map one and
/// this test asks for its removal here. (None left: the 24 gaps this list held, `max`/`min` over
/// a dim, `sort`, `topk`, `scatter`, `scatter_add`, `index_add`, `logsumexp`, `prod`, `fmod`,
/// `remainder`, `frac`, `floor_divide`, `all`, `any`, `count_nonzero`, `std_mean`, `var_mean`,
/// `xlogy`, `addmv` and the losses `mse_loss`, `smooth_l1_loss`, `binary_cross_entropy`,
/// `nll_loss_forward`, run the functions their probes measure.)
const NOT_MAPPED_YET: &[&str] = &[];

fn table() -> serde_json::Map<String, serde_json::Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../src/candle_port/verify/candle_ops.json"
    );
    let text = std::fs::read_to_string(path).expect("the op table is in the repository");
    let json: serde_json::Value = serde_json::from_str(&text).expect("the op table is JSON");
    json["ops"].as_object().expect("an ops object").clone()
}

fn allowed() -> Vec<&'static str> {
    NOT_IN_MAKE_FX
        .iter()
        .map(|(name, _)| *name)
        .chain(FOLDED_AT_EXPORT.iter().copied())
        .chain(NOT_MAPPED_YET.iter().copied())
        .collect()
}

#[test]
fn every_op_candle_runs_is_mapped_or_listed_with_its_reason() {
    let allowed: BTreeSet<&str> = allowed().into_iter().collect();
    let unmapped: Vec<String> = table()
        .iter()
        .filter(|(_, entry)| entry["class"] != "no-op")
        .map(|(name, _)| name.clone())
        .filter(|name| !mapped(name) && !allowed.contains(name.as_str()))
        .collect();
    assert!(
        unmapped.is_empty(),
        "the op table says candle runs these, but candle-port-run has no mapping (map them in \
         crates/candle-port-run/src/ops/, with the composition measure.rs probes): {unmapped:?}"
    );
}

#[test]
fn the_lists_hold_only_unmapped_ops_the_table_says_candle_runs() {
    let table = table();
    let names = allowed();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "a name is on two lists");
    for name in names {
        let entry = table
            .get(name)
            .unwrap_or_else(|| panic!("{name} is listed but not in the op table"));
        assert_ne!(
            entry["class"], "no-op",
            "{name}: the table says candle has no such op"
        );
        assert!(!mapped(name), "{name} is mapped now: take it off the list");
    }
}

#[test]
fn the_ops_that_stopped_real_models_are_mapped() {
    // diffusers 0.42.1 (UNet1D's Mish, ...) and the table's own measured ops
    for name in [
        "mish",
        "softplus",
        "celu",
        "selu",
        "elu",
        "erf",
        "log1p",
        "expm1",
        "flip",
        "roll",
        "cumsum",
        "broadcast_to",
        "log_sigmoid",
        "log_sigmoid_forward",
        "hardshrink",
        "logaddexp",
        "cdist",
        "_cdist_forward",
        "_euclidean_dist",
        // the known gaps mapped since
        "max",
        "min",
        "logsumexp",
        "scatter",
        "scatter_add",
        "index_add",
        "floor_divide",
        "remainder",
        "fmod",
        "frac",
        "prod",
        "all",
        "any",
        "std_mean",
        "var_mean",
        "mse_loss",
        "smooth_l1_loss",
        "binary_cross_entropy",
        "nll_loss_forward",
        "sort",
        "topk",
        "xlogy",
        "addmv",
        "count_nonzero",
    ] {
        assert!(mapped(name), "{name}");
        assert_ne!(table()[name]["class"], "no-op", "{name}");
    }
}
