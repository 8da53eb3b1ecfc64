"""port-fix --instrument: make a candle port record each module's output under its torch name,
so `candle-port compare` can name the first module that diverges in a port you did not write.

In candle-transformers a module's torch name is the VarBuilder prefix it was built with
(`vb.pp("encoder").pp("layer").pp(i)`). The rewrite stores that prefix when the module is built
and records the forward's result under it:

    struct Block { .., parity_name: String }                  (one field added)
    fn new(vb: VarBuilder, ..) -> Result<Self> {
        let parity_name = vb.prefix();                         (first line: before `vb` is moved or shadowed)
        .. Ok(Self { .., parity_name })
    }
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        ..
        candle_port_parity::recorded(<the tail expression>, &self.parity_name)
    }

`recorded` passes the Result through and records an Ok tensor while a parity check runs (a
thread-local flag otherwise). The name comes second so the expression's own borrows of `self`
(a `&mut self` forward) end before it is read. A `return E` of the forward is wrapped the same way; `?` needs no
change (an error records nothing).

Only what can be rewritten safely is: a `forward`/`forward_t` of `impl Module`/`ModuleT` or an
inherent impl, taking `&self`, returning `Result<Tensor>`; of a struct with named fields defined
in the same file, not `Copy`, whose every struct literal is in a function taking one candle-nn
VarBuilder (candle-transformers' quantized VarBuilder has no prefix). Everything else is skipped
with its reason. Twice is once: a struct that has the field and a forward that records are left.
"""

from __future__ import annotations

from typing import NamedTuple

from candle_port.pipeline.findings import FileError
from candle_port.rewriters.results import Fixed, FixResult, Skipped

STRATEGY = "instrument"
CODE = "record"
FIELD = "parity_name"
PARITY = "candle_port_parity"
RECORDED = f"{PARITY}::recorded"
FORWARDS = ("forward", "forward_t")
TRAITS = ("Module", "ModuleT")
_SCOPES = ("closure_expression", "function_item", "async_block")  # a `return` inside is not the forward's
_COMMENTS = ("line_comment", "block_comment")
# Tail macros that never return: wrapping them would be unreachable code.
_DIVERGING = (b"bail!", b"candle::bail!", b"candle_core::bail!", b"todo!", b"unimplemented!", b"panic!", b"unreachable!")


def may_hold_forwards(text: str) -> bool:
    """A cheap screen: only a file with a forward (or a functional `Func::new` module) and a
    VarBuilder can be instrumented."""
    return ("fn forward" in text or "Func::new" in text or "FuncT::new" in text) and "VarBuilder" in text


def instrument_rust_text(text: str, path: str, renames: dict[str, str] | None = None) -> FixResult:
    """The instrumented text of one Rust file (FixResult; `text` is the original when nothing
    changed); each forward instrumented is Fixed, each one left alone Skipped with why."""
    from candle_port.rust.fixer import _apply
    from candle_port.rust.parser import parse_rust

    result = FixResult(path, STRATEGY, text, text)
    data = text.encode("utf-8")
    tree = parse_rust(data, path)
    if isinstance(tree, FileError):
        result.error = tree
        return result
    root = tree.root_node
    # Keyed by (module path inside the file, name): inline `mod`s may each define a `Model`.
    structs = {(_module_path(n), _name(n)): n for n in _walk(root) if n.type == "struct_item" and _name(n)}
    nn_builder = _candle_nn_var_builder(root, renames or {})
    edits: list[tuple[int, int, bytes]] = []
    ready: dict[tuple, str | None] = {}  # struct -> None when it will carry the field, else why not
    prepared: set[int] = set()  # the builders given `let parity_name = vb.prefix();`
    for impl in (n for n in _walk(root) if n.type == "impl_item"):
        owner = _type_name(impl.child_by_field_name("type"))
        trait = impl.child_by_field_name("trait")
        if trait is not None and _last_segment(trait) not in TRAITS:
            continue
        body = impl.child_by_field_name("body")
        for fn in (c for c in (body.named_children if body else []) if c.type == "function_item"):
            if _name(fn) not in FORWARDS:
                continue
            line, column = fn.start_point[0] + 1, fn.start_point[1] + 1
            shown = f"{owner}::{_name(fn)}"
            why = _forward_shape(fn, data)
            key = (_module_path(impl), owner)
            if why is None and key not in ready:
                ready[key] = _struct_edits(key, structs, root, data, nn_builder, edits, prepared)
            if why is None:
                why = ready[key] or None  # "": the struct has the field already
            if why == "":
                continue  # records already
            if why is not None:
                result.skipped.append(Skipped(CODE, line, column, f"{shown}: {why}; not instrumented"))
                continue
            wrapped = _forward_edits(fn, data)
            if wrapped is None:
                continue  # records already
            edits.extend(wrapped)
            result.fixed.append(Fixed(CODE, line, column, STRATEGY, shown))
    _func_edits(root, nn_builder, data, edits, prepared, result)
    if not edits:
        return result
    new = _apply(data, edits).decode("utf-8")
    check = parse_rust(new.encode("utf-8"), path)
    if isinstance(check, FileError) or check.root_node.has_error and not root.has_error:
        result.skipped = [Skipped(CODE, f.line, f.column, f"{f.api}: the rewrite did not parse; not instrumented") for f in result.fixed]
        result.fixed = []
        return result
    from candle_port.rust.fixer import _formatted

    result.text = _formatted(text, new, path)
    result.needs_parity_crate = True
    return result


def _walk(node):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.named_children))


def _name(node) -> str | None:
    name = node.child_by_field_name("name")
    return name.text.decode("utf-8") if name is not None else None


def _last_segment(node) -> str:
    """`candle_nn::Module` -> Module, `Result<Tensor>` -> Result, `&VarBuilder<'a>` -> VarBuilder."""
    while node is not None and node.type in ("reference_type", "generic_type"):
        node = node.child_by_field_name("type")
    if node is None:
        return ""
    if node.type in ("scoped_type_identifier", "scoped_identifier"):
        node = node.child_by_field_name("name")
    return node.text.decode("utf-8") if node is not None else ""


def _type_name(node) -> str:
    return _last_segment(node)


class Builders(NamedTuple):
    """How this file names candle-nn's VarBuilder: `bare` when a plain `VarBuilder` is
    candle-nn's, and the names that stand for the crate (`candle_nn`, a Cargo rename, a
    `use candle_nn as nn;`)."""

    bare: bool
    crates: frozenset


def _candle_nn_var_builder(root, renames: dict[str, str]) -> Builders:
    """Whether a bare `VarBuilder` in this file is candle-nn's (imported from candle_nn, its
    Cargo rename or an in-file alias), not candle-transformers' quantized one, which has no
    prefix()."""
    nn_names = {"candle_nn"} | {alias for alias, target in renames.items() if target == "candle_nn"}
    uses = [n for n in root.named_children if n.type == "use_declaration"]
    for use in uses:  # `use candle_nn as nn;`
        argument = use.child_by_field_name("argument")
        if argument is not None and argument.type == "use_as_clause":
            path, alias = argument.child_by_field_name("path"), argument.child_by_field_name("alias")
            if path is not None and alias is not None and path.text.decode("utf-8") in nn_names:
                nn_names.add(alias.text.decode("utf-8"))
    found = False
    for use in uses:
        argument = use.child_by_field_name("argument")
        text = argument.text.decode("utf-8") if argument is not None else ""
        if "VarBuilder" not in text:
            continue
        if text.split("::", 1)[0] in nn_names and "quantized" not in text:
            found = True
        else:
            return Builders(False, frozenset(nn_names))
    return Builders(found, frozenset(nn_names))


def _is_var_builder(type_node, builders: Builders) -> bool:
    node = type_node
    while node is not None and node.type in ("reference_type", "generic_type"):
        node = node.child_by_field_name("type")
    if node is None:
        return False
    if node.type == "type_identifier":
        return node.text == b"VarBuilder" and builders.bare
    if node.type == "scoped_type_identifier":
        text = node.text.decode("utf-8")
        return text.endswith("::VarBuilder") and text.split("::", 1)[0] in builders.crates and "quantized" not in text
    return False


def _forward_shape(fn, data: bytes) -> str | None:
    """Why this forward cannot be instrumented (None: it can)."""
    params = fn.child_by_field_name("parameters")
    first = next((p for p in (params.named_children if params else []) if p.type not in _COMMENTS), None)
    if first is None or first.type != "self_parameter":
        return "takes no self"
    if b"&" not in first.text:
        return "takes self by value"
    returned = fn.child_by_field_name("return_type")
    if returned is None or returned.type != "generic_type" or _last_segment(returned) != "Result":
        shown = returned.text.decode("utf-8") if returned is not None else "()"
        return f"returns {shown}, not Result<Tensor>"
    arguments = returned.child_by_field_name("type_arguments")
    first_arg = next((a for a in (arguments.named_children if arguments else []) if a.type not in _COMMENTS), None)
    if first_arg is None or _last_segment(first_arg) != "Tensor" or first_arg.type not in ("type_identifier", "scoped_type_identifier"):
        return f"returns {returned.text.decode('utf-8')}, not Result<Tensor>"
    body = fn.child_by_field_name("body")
    if body is None:
        return "has no body"
    if RECORDED.encode() in data[body.start_byte : body.end_byte]:
        return ""  # instrumented before
    returns = _returns(body)
    if any(r.named_child_count == 0 for r in returns):
        return "has a `return` without a value"
    if _tail(body) is None and not returns:
        return "ends in no expression"
    return None


def _returns(body) -> list:
    out = []
    stack = list(body.named_children)
    while stack:
        node = stack.pop()
        if node.type in _SCOPES:
            continue
        if node.type == "return_expression":
            out.append(node)
        stack.extend(node.named_children)
    return out


def _tail(block):
    """The block's tail expression (what it evaluates to), or None."""
    children = [c for c in block.named_children if c.type not in _COMMENTS]
    if not children:
        return None
    last = children[-1]
    if last.type == "expression_statement":
        if last.children and last.children[-1].type == ";":
            return None
        inner = [c for c in last.named_children if c.type not in _COMMENTS]
        last = inner[0] if len(inner) == 1 else None  # a trailing if/match/block
        if last is None:
            return None
    if last.type in ("let_declaration", "empty_statement") or last.type.endswith("_item") or _diverges(last):
        return None
    return last


def _diverges(node) -> bool:
    """A macro that never returns (`todo!()`, `bail!(..)`): there is no value to record."""
    return node.type == "macro_invocation" and node.text.startswith(_DIVERGING)


def _forward_edits(fn, data: bytes):
    body = fn.child_by_field_name("body")
    values = [r.named_children[0] for r in _returns(body)]
    tail = _tail(body)
    if tail is not None and tail.type != "return_expression":
        values.append(tail)
    out = []
    for value in values:
        out.append((value.start_byte, value.start_byte, f"{RECORDED}(".encode()))
        out.append((value.end_byte, value.end_byte, f", &self.{FIELD})".encode()))
    return out or None


def _struct_edits(key: tuple, structs: dict, root, data: bytes, nn_builder: Builders, edits: list, prepared: set) -> str | None:
    """Give struct `key` (module path, name) the field and each of its constructors the prefix
    (edits appended); None when done, "" when it has the field already, else why it cannot be."""
    scope, owner = key
    struct = structs.get(key)
    if struct is None:
        return f"{owner} is not a struct defined in this module of this file"
    fields = struct.child_by_field_name("body")
    if fields is None or fields.type != "field_declaration_list":
        return f"{owner} has no named fields"
    declared = [f for f in fields.named_children if f.type == "field_declaration"]
    if any(_name(f) == FIELD for f in declared):
        return ""
    if _derives_copy(struct):
        return f"{owner} is Copy, and a String field would end that"
    public = any(c.type == "visibility_modifier" for c in struct.children)
    if public and any(any(c.type == "visibility_modifier" for c in f.children) for f in declared):
        return f"{owner} has public fields: code in other files may build it without the new field"
    literals = []
    homes = {k[0] for k in structs if k[1] == owner}  # the modules of this file defining the name
    for literal in (n for n in _walk(root) if n.type == "struct_expression" and _literal_of(n) == owner):
        here = _module_path(literal)
        if here == scope:
            literals.append(literal)
        elif here not in homes:
            # Built by a path from another module (`gpt::Block { .. }`): which struct is it?
            where = literal.start_point[0] + 1
            return f"{owner} is also built at line {where} in another module of this file"
    # `Self { activation: false, ..self }` carries the field over from its base: nothing to add.
    literals = [n for n in literals if not _has_base(n)]
    if not literals:
        return f"{owner} is never built in this file"
    builders: dict[int, tuple] = {}
    for literal in literals:
        fn = _enclosing(literal, ("function_item",))
        builder = _builder_param(fn, nn_builder) if fn is not None else None
        if builder is None:
            where = literal.start_point[0] + 1
            return f"{owner} is built at line {where} in a function without a candle-nn VarBuilder parameter, so its name is unknown there"
        builders[fn.start_byte] = (fn, builder)
    pending = list(_append_field(fields, f"{FIELD}: String", data))
    for fn, builder in builders.values():
        block = fn.child_by_field_name("body")
        if block.start_byte not in prepared and f"let {FIELD} =".encode() not in block.text:
            pending.extend(_prepend_statement(block, f"let {FIELD} = {builder}.prefix();", data))
    for literal in literals:
        repeated = _enclosing(literal, ("closure_expression", "loop_expression", "for_expression", "while_expression"), stop="function_item")
        item = f"{FIELD}: {FIELD}.clone()" if repeated is not None else FIELD
        body = literal.child_by_field_name("body")
        pending.extend(_append_field(body, item, data))
    edits.extend(pending)
    prepared.update(fn.child_by_field_name("body").start_byte for fn, _ in builders.values())
    return None


def _has_base(literal) -> bool:
    """Whether a struct literal ends in `..base`, which fills the fields it does not name."""
    body = literal.child_by_field_name("body")
    return body is not None and any(c.type == "base_field_initializer" for c in body.named_children)


def _module_path(node) -> tuple:
    """The names of the inline `mod` items around `node`, outermost first."""
    names = []
    current = node.parent
    while current is not None:
        if current.type == "mod_item":
            names.append(_name(current) or "")
        current = current.parent
    return tuple(reversed(names))


def _derives_copy(struct) -> bool:
    sibling = struct.prev_named_sibling
    while sibling is not None and sibling.type in ("attribute_item", *_COMMENTS):
        if sibling.type == "attribute_item" and b"derive" in sibling.text and b"Copy" in sibling.text:
            return True
        sibling = sibling.prev_named_sibling
    return False


def _literal_of(literal) -> str:
    """The struct a struct literal builds (`Self` read through its impl)."""
    name = _last_segment(literal.child_by_field_name("name"))
    if name == "Self":
        impl = _enclosing(literal, ("impl_item",))
        return _type_name(impl.child_by_field_name("type")) if impl is not None else ""
    return name


def _enclosing(node, types: tuple, stop: str | None = None):
    current = node.parent
    while current is not None:
        if current.type in types:
            return current
        if stop is not None and current.type == stop:
            return None
        current = current.parent
    return None


def _builder_param(fn, nn_builder: Builders) -> str | None:
    """The name of the function's one candle-nn VarBuilder parameter, or None."""
    params = fn.child_by_field_name("parameters")
    found = []
    for param in (p for p in (params.named_children if params else []) if p.type == "parameter"):
        if not _is_var_builder(param.child_by_field_name("type"), nn_builder):
            continue
        pattern = param.child_by_field_name("pattern")
        if pattern is not None and pattern.type == "mut_pattern":
            pattern = next((c for c in pattern.named_children if c.type == "identifier"), None)
        if pattern is None or pattern.type != "identifier":
            return None
        found.append(pattern.text.decode("utf-8"))
    return found[0] if len(found) == 1 else None


def _indent_of(node, data: bytes) -> bytes:
    start = data.rfind(b"\n", 0, node.start_byte) + 1
    prefix = data[start : node.start_byte]
    return prefix if not prefix.strip() else b""


def _newline(data: bytes) -> bytes:
    return b"\r\n" if b"\r\n" in data else b"\n"


def _append_field(container, item: str, data: bytes):
    """Edits adding `item` as the last field of a field declaration list or struct literal body
    (before a `..base`), in the list's own layout: one line, or one field a line."""
    items = [c for c in container.named_children if c.type not in _COMMENTS]
    base = next((c for c in items if c.type == "base_field_initializer"), None)
    fields = [c for c in items if c.type != "base_field_initializer"]
    multiline = b"\n" in data[container.start_byte : container.end_byte]
    nl = _newline(data)
    if base is not None:
        if multiline:
            return [(base.start_byte, base.start_byte, item.encode() + b"," + nl + _indent_of(base, data))]
        return [(base.start_byte, base.start_byte, item.encode() + b", ")]
    if not fields:
        opening = container.start_byte + 1
        if multiline:
            indent = _indent_of(container.parent, data) + b"    "
            return [(opening, opening, nl + indent + item.encode() + b",")]
        return [(opening, opening, b" " + item.encode() + b" ")]
    last = fields[-1]
    after = last.next_sibling
    comma = after is not None and after.type == ","
    end = after.end_byte if comma else last.end_byte
    if multiline:
        text = (b"" if comma else b",") + nl + _indent_of(last, data) + item.encode() + (b"," if comma else b"")
    else:
        text = (b"" if comma else b",") + b" " + item.encode() + (b"," if comma else b"")
    return [(end, end, text)]


def _func_edits(root, nn_builder: Builders, data: bytes, edits: list, prepared: set, result: FixResult) -> None:
    """Functional modules: `Func::new(move |xs| BODY)` (and `FuncT::new`) built in a function
    that takes a candle-nn VarBuilder (candle-transformers' ResNet, ConvNeXt, RepVGG,
    MobileNetV4 are written so) records BODY under that VarBuilder's prefix. Each closure gets
    its own copy of the name (`{ let parity_name = parity_name.clone(); move |xs| ... }`), so a
    function may build several."""
    for call in (n for n in _walk(root) if n.type == "call_expression"):
        callee = call.child_by_field_name("function")
        if callee is None or not callee.text.endswith((b"Func::new", b"FuncT::new")):
            continue
        arguments = call.child_by_field_name("arguments")
        closures = [c for c in (arguments.named_children if arguments else []) if c.type not in _COMMENTS]
        if len(closures) != 1 or closures[0].type != "closure_expression":
            continue
        closure = closures[0]
        body = closure.child_by_field_name("body")
        if body is None or body.text.startswith(f"{RECORDED}(".encode()):
            continue  # records already
        line, column = call.start_point[0] + 1, call.start_point[1] + 1
        fn = _enclosing(call, ("function_item",))
        shown = f"{_name(fn) if fn is not None else '?'} (Func)"
        builder = _builder_param(fn, nn_builder) if fn is not None else None
        if builder is None:
            result.skipped.append(Skipped(CODE, line, column, f"{shown}: built in a function without a candle-nn VarBuilder parameter, so its name is unknown there; not instrumented"))
            continue
        if not any(c.type == "move" for c in closure.children):
            result.skipped.append(Skipped(CODE, line, column, f"{shown}: the closure is not `move`, so it cannot own the name; not instrumented"))
            continue
        block = fn.child_by_field_name("body")
        if block.start_byte not in prepared and f"let {FIELD} =".encode() not in block.text:
            edits.extend(_prepend_statement(block, f"let {FIELD} = {builder}.prefix();", data))
            prepared.add(block.start_byte)
        edits.append((closure.start_byte, closure.start_byte, f"{{ let {FIELD} = {FIELD}.clone(); ".encode()))
        # `{ expr }`, a block of one expression: wrap the expression (braces around a function
        # argument would warn, `unused_braces`); any other body is wrapped whole.
        inner = [c for c in body.named_children if c.type not in _COMMENTS] if body.type == "block" else []
        value = _tail(body) if len(inner) == 1 else None
        value = value if value is not None and value.type != "return_expression" else body
        edits.append((value.start_byte, value.start_byte, f"{RECORDED}(".encode()))
        if value.end_byte == closure.end_byte:  # one insertion where both end, in this order
            edits.append((value.end_byte, value.end_byte, f", &{FIELD}) }}".encode()))
        else:
            edits.append((value.end_byte, value.end_byte, f", &{FIELD})".encode()))
            edits.append((closure.end_byte, closure.end_byte, b" }"))
        result.fixed.append(Fixed(CODE, line, column, STRATEGY, shown))


def _prepend_statement(block, statement: str, data: bytes):
    opening = block.start_byte + 1
    first = next((c for c in block.named_children if c.type not in _COMMENTS), None)
    if first is None or first.start_point[0] == block.start_point[0]:
        return [(opening, opening, b" " + statement.encode())]
    return [(opening, opening, _newline(data) + _indent_of(first, data) + statement.encode())]
