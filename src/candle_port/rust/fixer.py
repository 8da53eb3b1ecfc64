"""port-fix on Rust: rewrite each fused candle-nn call whose differentiable twin candle-nn itself
ships, keeping every other byte.

    candle_nn::ops::softmax_last_dim(&xs)       -> candle_nn::ops::softmax(&xs, candle::D::Minus1)
    candle_nn::ops::layer_norm(x, w, b, eps)    -> candle_nn::ops::layer_norm_slow(x, w, b, eps)
    candle_nn::ops::rms_norm(x, w, eps)         -> candle_nn::ops::rms_norm_slow(x, w, eps)
    candle_nn::rotary_emb::rope(x, cos, sin)    -> candle_nn::rotary_emb::rope_slow(x, cos, sin)
    candle_nn::rotary_emb::rope_i(x, cos, sin)  -> candle_nn::rotary_emb::rope_i_slow(x, cos, sin)

Each twin has the same arguments and candle-nn's composed, differentiable body (candle-nn 0.11.0
src/ops.rs and src/rotary_emb.rs), so the rewrite needs no new dependency or `use` line: the
callee is written as a full path with the crate's own names for candle's crates, and a `use` of
the fused name left unused is removed. A call written any other way (another argument count, a
macro) is refused with the reason; the other findings (the LayerNorm/RmsNorm layers, rope_thd,
resizing, pooling, transposed convolutions) are listed with their hint. When the file was
rustfmt-clean and rustfmt is on PATH, the result is formatted by rustfmt so it stays clean.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from candle_port.config import Config
from candle_port.pipeline.findings import FileError
from candle_port.rewriters.results import Fixed, FixResult, Refused, Unfixable
from candle_port.rust.cargo import CrateContext

STRATEGY = "rust"
# API -> (module under candle_nn, the differentiable twin, the argument count it takes).
TWINS = {
    "softmax_last_dim": ("ops", "softmax", 1),
    "ops_layer_norm": ("ops", "layer_norm_slow", 4),
    "ops_rms_norm": ("ops", "rms_norm_slow", 3),
    "rope": ("rotary_emb", None, 3),  # rope -> rope_slow, rope_i -> rope_i_slow (by the name called)
}
_ROPE_TWINS = {"rope": "rope_slow", "rope_i": "rope_i_slow"}


def fix_rust_text(text: str, path: str, config: Config, context: CrateContext) -> FixResult:
    """The rewrite of one Rust text (FixResult; `text` is the original when nothing changed)."""
    from candle_port.rust.checker import check_rust_bytes
    from candle_port.rust.parser import parse_rust
    from candle_port.rust.sites import scan

    result = FixResult(path, STRATEGY, text, text)
    data = text.encode("utf-8")
    checked = check_rust_bytes(data, path, config, context)
    if checked.error is not None:
        result.error = checked.error
        return result
    if not checked.findings:
        return result
    tree = parse_rust(data, path)
    if isinstance(tree, FileError):
        result.error = tree
        return result
    names = dict(context.renames)
    sites = {site.position()[:2]: site for site in scan(tree, data, names)}
    edits: list[tuple[int, int, bytes]] = []
    renamed: set[str] = set()
    for finding in checked.findings:
        site = sites.get((finding.line, finding.column))
        rewrite = _rewrite(site, finding.code, names, data) if site is not None else "not a call port-fix can read"
        if isinstance(rewrite, list):
            edits.extend(rewrite)
            bare = site.call.child_by_field_name("function")
            if bare is not None and bare.type == "identifier":
                renamed.add(bare.text.decode("utf-8"))
            result.fixed.append(Fixed(finding.code, finding.line, finding.column, STRATEGY, site.shown))
        elif rewrite is None:
            result.unfixable.append(Unfixable(finding.code, finding.line, finding.column, finding.hint))
        else:
            result.refused.append(Refused(finding.code, finding.line, finding.column, rewrite))
    if not edits:
        return result
    edits.extend(_unused_imports(tree, data, renamed, {(start, end) for start, end, _ in edits}))
    new = _apply(data, edits).decode("utf-8")
    result.text = _formatted(text, new, path)
    return result


def _crate_name(names: dict[str, str], canonical: str, data: bytes) -> str:
    """What this crate calls candle's crate `canonical` (its Cargo.toml rename, else `candle`
    for candle-core where the file writes `candle::` paths, else the canonical name)."""
    for alias, target in sorted(names.items()):
        if target == canonical:
            return alias
    if canonical == "candle_core" and b"candle::" in data and b"candle_core::" not in data:
        return "candle"
    return canonical


def _rewrite(site, code: str, names: dict[str, str], data: bytes):
    """The byte edits of one site; None for a finding no rewrite exists for (its hint says what to
    do); a string: why this call of a fixable API is refused."""
    twin = TWINS.get(site.api)
    if twin is None:
        return None
    module, target, arity = twin
    called = site.shown.rsplit("::", 1)[-1]
    if site.api == "rope":
        target = _ROPE_TWINS.get(called)
        if target is None:
            return None  # rope_thd, or an alias: no slow twin to name
    if len(site.args) != arity:
        return f"{site.shown} is called with {len(site.args)} arguments, not {arity}: not rewritten"
    function = site.call.child_by_field_name("function")
    if function is None or function.type not in ("identifier", "scoped_identifier"):
        return f"{site.shown} is not called by a plain path: not rewritten"
    nn = _crate_name(names, "candle_nn", data)
    edits = [(function.start_byte, function.end_byte, f"{nn}::{module}::{target}".encode())]
    if site.api == "softmax_last_dim":
        core = _crate_name(names, "candle_core", data)
        last = site.args[-1]
        edits.append((last.end_byte, last.end_byte, f", {core}::D::Minus1".encode()))
    return edits


def _unused_imports(tree, data: bytes, renamed: set[str], edited: set[tuple[int, int]]):
    """Deletions of `use candle_nn::ops::NAME;` lines whose NAME no call uses any more (a `use`
    list is left alone: rustc warns about the unused name, nothing fails)."""
    if not renamed:
        return []
    from tree_sitter import Query, QueryCursor

    from candle_port.rust.parser import language

    captures = QueryCursor(Query(language(), "(use_declaration) @use (identifier) @name")).captures(tree.root_node)
    uses = captures.get("use", [])
    inside_use = lambda node: any(u.start_byte <= node.start_byte < u.end_byte for u in uses)  # noqa: E731
    still_used = {
        node.text.decode("utf-8")
        for node in captures.get("name", [])
        if not inside_use(node) and (node.start_byte, node.end_byte) not in edited
    }
    out = []
    for use in uses:
        argument = use.child_by_field_name("argument")
        if argument is None or argument.type != "scoped_identifier":
            continue
        name = argument.child_by_field_name("name")
        if name is None or name.text.decode("utf-8") not in renamed or name.text.decode("utf-8") in still_used:
            continue
        start = data.rfind(b"\n", 0, use.start_byte) + 1
        end = data.find(b"\n", use.end_byte)
        end = len(data) if end < 0 else end + 1
        if data[start : use.start_byte].strip() or data[use.end_byte : end].strip():
            continue  # shares its line with other code: left alone
        out.append((start, end, b""))
    return out


def _apply(data: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    out = data
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:start] + replacement + out[end:]
    return out


def _formatted(original: str, new: str, path: str) -> str:
    """`new` through rustfmt when the original was rustfmt-clean (the rewrite may lengthen a line
    past rustfmt's width); else as spliced."""
    rustfmt = shutil.which("rustfmt")
    if rustfmt is None:
        return new
    directory = os.path.dirname(os.path.abspath(path)) if os.path.isdir(os.path.dirname(os.path.abspath(path))) else None
    command = [rustfmt, "--edition", _edition(path), "--quiet"]
    try:
        before = subprocess.run(command + ["--check"], input=original, capture_output=True, text=True, cwd=directory, timeout=60)
        if before.returncode != 0:
            return new  # not rustfmt-clean before: formatting it would touch the user's other lines
        after = subprocess.run(command + ["--emit", "stdout"], input=new, capture_output=True, text=True, cwd=directory, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return new
    if after.returncode != 0 or not after.stdout:
        return new
    formatted = after.stdout
    if "\r\n" in original and "\r\n" not in formatted:
        formatted = formatted.replace("\n", "\r\n")  # rustfmt writes stdout with LF: the file's CRLF kept
    return formatted


def _edition(path: str) -> str:
    from candle_port.rust.cargo import _toml, find_manifest

    manifest = find_manifest(os.path.dirname(os.path.abspath(path)))
    edition = _toml(manifest).get("package", {}).get("edition") if manifest else None
    if isinstance(edition, dict):  # edition.workspace = true
        edition = None
    return edition if isinstance(edition, str) else "2021"
