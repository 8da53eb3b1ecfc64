"""port-check's Rust front end: candle code read with tree-sitter-rust.

parser (tree-sitter, imported lazily: a Python-only run never loads it) -> cargo (the crate's
Cargo.toml and Cargo.lock: candle's version and the crate's renames of candle's crates) -> names
(what each path means after `use` and those renames) -> sites (the candle calls that matter) ->
versions (the measured op table of the candle version judged) -> checker (the rules of
candle_port.rust_rules, suppressions, findings). The pipeline (candle_port.pipeline.engine)
sends every `*.rs` file here and every other file to the Python checker.
"""
