"""port-fix on Rust: rewrite each fused candle-nn call whose differentiable twin candle-nn itself
ships, keeping every other byte.

    candle_nn::ops::softmax_last_dim(&xs)       -> candle_nn::ops::softmax(&xs, candle::D::Minus1)
    candle_nn::ops::layer_norm(x, w, b, eps)    -> candle_nn::ops::layer_norm_slow(x, w, b, eps)
    candle_nn::ops::rms_norm(x, w, eps)         -> candle_nn::ops::rms_norm_slow(x, w, eps)
    candle_nn::rotary_emb::rope(x, cos, sin)    -> candle_nn::rotary_emb::rope_slow(x, cos, sin)
    candle_nn::rotary_emb::rope_i(x, cos, sin)  -> candle_nn::rotary_emb::rope_i_slow(x, cos, sin)
    candle_nn::rotary_emb::rope_thd(x, cos, sin) -> candle_port_ops::rope::rope_thd(x, cos, sin) (no slow twin in candle-nn)

Each twin has the same arguments and candle-nn's composed, differentiable body (candle-nn 0.11.0
src/ops.rs and src/rotary_emb.rs), so the rewrite needs no new dependency or `use` line: the
callee is written as a full path with the crate's own names for candle's crates, and a `use` of
the fused name left unused is removed.

Tensor methods whose backward fails or is wrong go to candle-port-ops (crates/candle-port-ops),
whose ops equal torch's in forward and backward; the crate gets the dependency (ops_dependency.py):

    xs.max_pool2d_with_stride(3, 2)      -> candle_port_ops::max_pool2d(&xs, &candle_port_ops::Pool::new(&[3, 3]).stride(&[2, 2]))
    xs.max_pool2d(2), avg_pool2d(..)     -> the same with Pool::new(&[2, 2]) (torch's stride = kernel)
    xs.upsample_nearest2d(h, w)          -> candle_port_ops::interpolate(&xs, &candle_port_ops::Interpolate::size(&[h, w], candle_port_ops::Mode::Nearest))
    xs.upsample_bilinear2d(h, w, ac)     -> the same with Mode::Bilinear and .align_corners(ac)
    xs.conv_transpose1d(w, p, op, s, d, g) -> candle_port_ops::conv_transpose1d(&xs, w, None, &candle_port_ops::Conv::new().padding(&[p])...)

A call written any other way (another argument count, a pool size that is not a literal, a
macro) is refused with the reason; the other findings (candle-nn's ConvTranspose1d layer) are listed with
their hint; candle-nn's LayerNorm/RmsNorm layers move to candle-port-ops' norm module
(norm_layers.py). When the file was rustfmt-clean
and rustfmt is on PATH, the result is formatted by rustfmt so it stays clean.
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
    """The rewrite of one Rust text (FixResult; `text` is the original when nothing changed).

    A call inside another's receiver (`xs.max_pool2d(2)?.upsample_nearest2d(h, w)`) is rewritten
    first and the outer one in the next pass, on the new text: each pass rewrites the calls that
    hold no other rewritten call, and the passes end when one rewrites nothing."""
    result = FixResult(path, STRATEGY, text, text)
    current = text
    for _ in range(MAX_PASSES):
        outcome = _one_pass(current, path, config, context)
        if isinstance(outcome, FileError):
            result.error = outcome
            return result
        new, fixed, refused, unfixable, uses_ops = outcome
        result.fixed.extend(fixed)
        result.refused, result.unfixable = refused, unfixable
        result.needs_ops_crate = result.needs_ops_crate or uses_ops
        if new is None:
            break
        current = new
    if config.enabled("CP202", path):
        current = _move_norm_layers(current, path, config, context, result)
    if current != text:
        result.text = _formatted(text, current, path)
    return result


def _move_norm_layers(text: str, path: str, config: Config, context: CrateContext, result: FixResult) -> str:
    """`text` with candle-nn's LayerNorm/RmsNorm layers moved to candle-port-ops (norm_layers.py);
    the CP202 layer findings it resolves become fixed, a refusal is said at each of them."""
    from candle_port.rust.norm_layers import norm_layer_edits
    from candle_port.rust.parser import parse_rust

    if not any(name in text for name in ("LayerNorm", "RmsNorm", "layer_norm", "rms_norm")):
        return text
    data = text.encode("utf-8")
    tree = parse_rust(data, path)
    if isinstance(tree, FileError):
        return text
    edits = norm_layer_edits(tree, data, dict(context.renames))
    layers = [u for u in result.unfixable if u.code == "CP202"]
    if isinstance(edits, str):
        result.unfixable = [u for u in result.unfixable if u.code != "CP202"]
        result.refused.extend(Refused(u.code, u.line, u.column, edits) for u in layers)
        if not layers:  # no layer built here, but its type is named: the other files' move needs this one
            result.refused.append(Refused("CP202", 1, 1, edits))
        return text
    if not edits:
        return text
    new = _apply(data, edits).decode("utf-8")
    outcome = _one_pass(new, path, config, context)
    if isinstance(outcome, FileError):
        result.refused.extend(Refused(u.code, u.line, u.column, f"moving the norm layers broke the parse ({outcome.reason}): not moved") for u in layers)
        result.unfixable = [u for u in result.unfixable if u.code != "CP202"]
        return text
    _, _, refused, unfixable, _ = outcome
    left = {(u.code, u.line) for u in unfixable}
    result.fixed.extend(Fixed(u.code, u.line, u.column, STRATEGY, "candle_port_ops::norm") for u in layers if (u.code, u.line) not in left)
    result.refused, result.unfixable = refused, unfixable
    result.needs_ops_crate = True
    return new


# Chains of rewritable calls deeper than this are left for a second run.
MAX_PASSES = 8


def _one_pass(text: str, path: str, config: Config, context: CrateContext):
    """(the new text or None, fixed, refused, unfixable, whether candle-port-ops is called), or
    the FileError of a text that does not parse."""
    from candle_port.rust.checker import check_rust_bytes
    from candle_port.rust.parser import parse_rust
    from candle_port.rust.sites import scan

    data = text.encode("utf-8")
    checked = check_rust_bytes(data, path, config, context)
    if checked.error is not None:
        return checked.error
    fixed: list[Fixed] = []
    refused: list[Refused] = []
    unfixable: list[Unfixable] = []
    if not checked.findings:
        return None, fixed, refused, unfixable, False
    tree = parse_rust(data, path)
    if isinstance(tree, FileError):
        return tree
    names = dict(context.renames)
    sites = {site.position()[:2]: site for site in scan(tree, data, names)}
    planned = []
    for finding in checked.findings:
        site = sites.get((finding.line, finding.column))
        rewrite = _rewrite(site, names, data) if site is not None else "not a call port-fix can read"
        if isinstance(rewrite, list):
            planned.append((site, finding, rewrite))
        elif rewrite is None:
            unfixable.append(Unfixable(finding.code, finding.line, finding.column, finding.hint))
        else:
            refused.append(Refused(finding.code, finding.line, finding.column, rewrite))
    edits: list[tuple[int, int, bytes]] = []
    renamed: set[str] = set()
    uses_ops = False
    calls = [(site.call.start_byte, site.call.end_byte) for site, _, _ in planned]
    for site, finding, rewrite in planned:
        span = (site.call.start_byte, site.call.end_byte)
        if any(other != span and span[0] <= other[0] and other[1] <= span[1] for other in calls):
            continue  # holds another rewritten call: the next pass, on the new text
        edits.extend(rewrite)
        uses_ops = uses_ops or site.api in OPS_TARGETS or site.shown.endswith("rope_thd")
        bare = site.call.child_by_field_name("function")
        if bare is not None and bare.type == "identifier":
            renamed.add(bare.text.decode("utf-8"))
        fixed.append(Fixed(finding.code, finding.line, finding.column, STRATEGY, site.shown))
    if not edits:
        return None, fixed, refused, unfixable, uses_ops
    edits.extend(_unused_imports(tree, data, renamed, {(start, end) for start, end, _ in edits}))
    return _apply(data, edits).decode("utf-8"), fixed, refused, unfixable, uses_ops


def _crate_name(names: dict[str, str], canonical: str, data: bytes) -> str:
    """What this crate calls candle's crate `canonical` (its Cargo.toml rename, else `candle`
    for candle-core where the file writes `candle::` paths, else the canonical name)."""
    for alias, target in sorted(names.items()):
        if target == canonical:
            return alias
    if canonical == "candle_core" and b"candle::" in data and b"candle_core::" not in data:
        return "candle"
    return canonical


def _rewrite(site, names: dict[str, str], data: bytes):
    """The byte edits of one site; None for a finding no rewrite exists for (its hint says what to
    do); a string: why this call of a fixable API is refused."""
    if site.api in OPS_TARGETS:
        return _ops_rewrite(site, data)
    twin = TWINS.get(site.api)
    if twin is None:
        return None
    module, target, arity = twin
    called = site.shown.rsplit("::", 1)[-1]
    if site.api == "rope" and called == "rope_thd":
        if len(site.args) != arity:
            return f"{site.shown} is called with {len(site.args)} arguments, not {arity}: not rewritten"
        function = site.call.child_by_field_name("function")
        return [(function.start_byte, function.end_byte, f"{OPS}::rope::rope_thd".encode())]  # candle-nn has no slow twin
    if site.api == "rope":
        target = _ROPE_TWINS.get(called)
        if target is None:
            return None  # an alias: which rope it is cannot be told
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


# Tensor methods rewritten to candle-port-ops: (the op, its expected argument count).
OPS_TARGETS = {
    "max_pool2d": ("max_pool2d", 1),
    "max_pool2d_with_stride": ("max_pool2d", 2),
    "avg_pool2d": ("avg_pool2d", 1),
    "avg_pool2d_with_stride": ("avg_pool2d", 2),
    "upsample_nearest2d": ("interpolate", 2),
    "interpolate2d": ("interpolate", 2),
    "upsample_bilinear2d": ("interpolate", 3),
    "conv_transpose1d": ("conv_transpose1d", 6),
    "conv_transpose2d": ("conv_transpose2d", 5),
}
OPS = "candle_port_ops"


def _ops_rewrite(site, data: bytes):
    """A Tensor method (or `Tensor::method(&xs, ..)`) as the candle-port-ops call."""
    from candle_port.rust.sites import literal

    op, arity = OPS_TARGETS[site.api]
    if len(site.args) != arity:
        return f"{site.shown} is called with {len(site.args)} arguments, not {arity}: not rewritten"
    function = site.call.child_by_field_name("function")
    if function is None:
        return f"{site.shown}: not a call port-fix can read"
    if function.type == "field_expression":
        receiver = function.child_by_field_name("value")
        tensor = "&" + _text(receiver, data)
    else:
        every = site.call.child_by_field_name("arguments")
        first = [a for a in every.named_children if a.type not in ("line_comment", "block_comment")][0]
        tensor = _text(first, data)  # `Tensor::max_pool2d(&xs, 2)`: already a reference
    args = [_text(a, data) for a in site.args]
    if op in ("max_pool2d", "avg_pool2d"):
        pairs = [_pair_text(literal(a)) for a in site.args]
        if any(p is None for p in pairs):
            return f"{site.shown}: the pool size is not a literal (an int or a pair), so its kind is unknown: not rewritten"
        pool = f"{OPS}::Pool::new(&{pairs[0]})" + (f".stride(&{pairs[1]})" if len(pairs) == 2 else "")
        call = f"{OPS}::{op}({tensor}, &{pool})"
    elif op == "interpolate":
        mode = "Bilinear" if site.api == "upsample_bilinear2d" else "Nearest"
        options = f"{OPS}::Interpolate::size(&[{args[0]}, {args[1]}], {OPS}::Mode::{mode})"
        if mode == "Bilinear":
            options += f".align_corners({args[2]})"
        call = f"{OPS}::interpolate({tensor}, &{options})"
    else:
        padding, output_padding, stride, dilation = args[1:5]
        conv = f"{OPS}::Conv::new().padding(&[{padding}]).output_padding(&[{output_padding}]).stride(&[{stride}]).dilation(&[{dilation}])"
        if op == "conv_transpose1d":
            conv += f".groups({args[5]})"
        call = f"{OPS}::{op}({tensor}, {args[0]}, None, &{conv})"
    return [(site.call.start_byte, site.call.end_byte, call.encode("utf-8"))]


def _text(node, data: bytes) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8")


def _pair_text(value) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return f"[{value}, {value}]"
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return f"[{value[0]}, {value[1]}]"
    return None


def _unused_imports(tree, data: bytes, renamed: set[str], edited: set[tuple[int, int]]):
    """Deletions of the `use` of each fused NAME no call uses any more: the whole line for
    `use candle_nn::ops::NAME;`, the item (and one comma) in a `use candle_nn::{.., NAME, ..};`
    list, so the rewrite leaves no unused import for rustc to warn about."""
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
    unused = lambda node: _last_name(node) in renamed and _last_name(node) not in still_used  # noqa: E731
    out = []
    for use in uses:
        argument = use.child_by_field_name("argument")
        if argument is None:
            continue
        if argument.type == "scoped_use_list":
            items = argument.child_by_field_name("list")
            deletions = _list_deletions(items.named_children if items is not None else [], unused)
            if deletions is not None:
                out.extend(deletions)
                continue  # not every item: the line stays
        elif argument.type != "scoped_identifier" or not unused(argument):
            continue
        start = data.rfind(b"\n", 0, use.start_byte) + 1
        end = data.find(b"\n", use.end_byte)
        end = len(data) if end < 0 else end + 1
        if data[start : use.start_byte].strip() or data[use.end_byte : end].strip():
            continue  # shares its line with other code: left alone
        out.append((start, end, b""))
    return out


def _last_name(node) -> str | None:
    if node.type == "identifier":
        return node.text.decode("utf-8")
    if node.type == "scoped_identifier":
        name = node.child_by_field_name("name")
        return name.text.decode("utf-8") if name is not None else None
    return None


def _list_deletions(items: list, unused) -> list[tuple[int, int, bytes]] | None:
    """The byte ranges that drop the unused items of a `use` list, each with one comma; None when
    every item goes (the caller drops the line); [] when none does."""
    drop = [unused(item) for item in items]
    if all(drop):
        return None
    kept_last = max(i for i, d in enumerate(drop) if not d)
    out = []
    for i, item in enumerate(items[:kept_last]):
        if drop[i]:
            out.append((item.start_byte, items[i + 1].start_byte, b""))  # the item, its comma, the space after
    if kept_last < len(items) - 1:
        out.append((items[kept_last].end_byte, items[-1].end_byte, b""))  # the tail: from the last kept item's end
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
