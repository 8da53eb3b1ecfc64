"""Whether the input of a nearest upsample is also read elsewhere (a second consumer).

candle's upsample_nearest2d backward overwrites the gradient its input has accumulated so far
instead of adding to it (measured in candle 0.11.0: docs/candle-measured.md), so a U-Net skip, an
FPN lateral or a YOLO neck that reads a tensor both through `nn.Upsample` and directly gets a wrong
gradient, silently. A site's input is judged where it is written:

- `F.interpolate(x, ...)`: `x`; a layer stored as `self.up = nn.Upsample(...)`: the argument of
  each `self.up(...)` call in the class's methods; a layer bound to a local name: its calls there;
- an input that is a name is read elsewhere when the same binding of it (after its last
  assignment before the call, before the next one) is loaded anywhere else in the function;
- any other expression (`self.conv(x)`) is a fresh tensor with one consumer;
- what cannot be read here (a layer whose calls are not in its class, the first layer of an
  `nn.Sequential`, whose input is the container's) is "undecided".
"""

from __future__ import annotations

import ast

from candle_port.pipeline.records import Record


class Consumers(Record):
    """The verdict on one site: `other_read` (line of another read of its input, 0 when none),
    `input` (the input as written), `undecided` (why it cannot be told here, "" when it can)."""

    __slots__ = ("other_read", "input", "undecided")

    def __init__(self, other_read: int = 0, input: str = "", undecided: str = "") -> None:
        self.other_read = other_read
        self.input = input
        self.undecided = undecided


def second_consumer(site) -> Consumers | None:
    """How the input of `site` (a call or a construction of a nearest upsample) is consumed; None
    when it has one consumer as far as the function shows."""
    function = _enclosing_function(site.scope)
    if not site.api.is_module:
        arg = site.call.args[0] if site.call.args else next((k.value for k in site.call.keywords if k.arg == "input"), None)
        return _judge(arg, function, site.call) if arg is not None and function is not None else None
    if function is None:
        return None
    holder = _holder(function, site.call)
    if holder is None:
        return None
    kind, node = holder
    if kind == "sequential":
        return Consumers(undecided="it is the first layer of an nn.Sequential, whose input is the container's") if node else None
    if kind == "attribute":
        cls = _enclosing_class(site.scope)
        calls = [] if cls is None else [(call, method) for method in _methods(cls) for call in _calls_of_attribute(method, node)]
        what = f"`self.{node}`"
    else:
        calls = [(call, function) for call in _calls_of_name(function, node)]
        what = f"`{node}`"
    if not calls:
        return Consumers(undecided=f"{what} is not called where this checker can see it")
    for call, method in calls:
        if call.args:
            found = _judge(call.args[0], method, call)
            if found is not None:
                return found
    return None


def detached_input(site) -> bool:
    """Whether a functional resize's input is `<tensor>.detach()` (port-fix --strategy detach):
    no gradient reaches it, so candle never differentiates it."""
    if site.api.is_module or site.kind != "call":
        return False
    arg = site.call.args[0] if site.call.args else next((k.value for k in site.call.keywords if k.arg == "input"), None)
    return (
        isinstance(arg, ast.Call) and not arg.args and not arg.keywords
        and isinstance(arg.func, ast.Attribute) and arg.func.attr == "detach"
    )


def _judge(arg: ast.expr, function: ast.AST, call: ast.Call) -> Consumers | None:
    if not isinstance(arg, ast.Name):
        return None
    line = _other_read(arg, function, call)
    return Consumers(other_read=line, input=arg.id) if line else None


def _other_read(name: ast.Name, function: ast.AST, call: ast.Call) -> int:
    """The line of another read of the binding of `name` that reaches `call` and can run with it
    (not in an exclusive branch), that consumes its values (not `x.shape`, `isinstance(x, ...)`,
    `x is None`); 0 when none."""
    at = (call.lineno, call.col_offset)
    stores, loads = [], []
    call_path: tuple = ()
    for statement, node, parent, path in _walk(function):
        if node is call:
            call_path = path
        if not (isinstance(node, ast.Name) and node.id == name.id):
            continue
        if isinstance(node.ctx, ast.Load):
            if node is not name and not _metadata_only(parent):
                loads.append(((node.lineno, node.col_offset), path))
        elif isinstance(statement, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            stores.append((statement.lineno, statement.col_offset))
        else:  # an assignment binds once its value is computed
            stores.append((statement.end_lineno, statement.end_col_offset))
    before = max((s for s in stores if s <= at), default=(0, 0))
    after = min((s for s in stores if s > at), default=(1 << 30, 0))
    others = sorted(
        position for position, path in loads
        if before < position < after and not _exclusive(path, call_path, position < at)
    )
    return others[0][0] if others else 0


# Reads of a tensor's metadata, not of its values: no gradient flows through them.
_METADATA = frozenset({"shape", "size", "dim", "ndim", "ndimension", "dtype", "device", "is_cuda", "numel",
                       "requires_grad", "layout", "is_floating_point", "is_complex", "nelement", "stride"})
_METADATA_CALLS = frozenset({"isinstance", "len", "type", "id", "hasattr", "getattr"})


def _metadata_only(parent) -> bool:
    if isinstance(parent, ast.Attribute) and parent.attr in _METADATA:
        return True
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in _METADATA_CALLS:
        return True
    return isinstance(parent, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops)


def _exclusive(path: tuple, call_path: tuple, before_call: bool) -> bool:
    """Whether a read on `path` cannot run in the same pass as the call on `call_path`: the two
    are in different branches of one `if`, or the read is in a branch, before the call and
    outside it, that ends in return, raise, break or continue."""
    branches = {if_id: branch for if_id, branch, _ends in call_path}
    for if_id, branch, ends in path:
        if if_id in branches:
            if branches[if_id] != branch:
                return True
        elif ends and before_call:
            return True
    return False


_ENDS = (ast.Return, ast.Raise, ast.Break, ast.Continue)


def _walk(function: ast.AST):
    """(innermost statement, node, parent, branch path) for every node of `function`'s body; the
    path holds (id of an enclosing `if`, "body" or "orelse", whether that branch ends in a jump)."""
    stack = [(None, statement, function, ()) for statement in reversed(getattr(function, "body", []))]
    while stack:
        statement, node, parent, path = stack.pop()
        if isinstance(node, ast.stmt):
            statement = node
        yield statement, node, parent, path
        if isinstance(node, ast.If):
            children = [(node.test, path)]
            for branch in ("body", "orelse"):
                block = getattr(node, branch)
                ends = bool(block) and isinstance(block[-1], _ENDS)
                children += [(child, path + ((id(node), branch, ends),)) for child in block]
        else:
            children = [(child, path) for child in ast.iter_child_nodes(node)]
        stack.extend((statement, child, node, child_path) for child, child_path in reversed(children))


def _holder(function: ast.AST, construction: ast.Call):
    """Where the constructed layer goes: ("attribute", name) for `self.name = ...`, ("name", name)
    for a local name, ("sequential", is_first) inside `nn.Sequential(...)`; None otherwise."""
    for node in ast.walk(function):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is construction:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) != 1:
                return None
            target = targets[0]
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                return "attribute", target.attr
            if isinstance(target, ast.Name):
                return "name", target.id
            return None
        if isinstance(node, ast.Call) and _callee_name(node) == "Sequential" and construction in node.args:
            return "sequential", node.args[0] is construction
    return None


def _callee_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _calls_of_attribute(method: ast.AST, attribute: str) -> list[ast.Call]:
    return [
        node for node in ast.walk(method)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attribute
        and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"
    ]


def _calls_of_name(function: ast.AST, name: str) -> list[ast.Call]:
    return [node for node in ast.walk(function) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name]


def _methods(cls: ast.ClassDef) -> list[ast.AST]:
    return [s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _enclosing_function(scope):
    while scope is not None:
        if isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return scope.node
        scope = scope.parent
    return None


def _enclosing_class(scope):
    while scope is not None:
        if isinstance(scope.node, ast.ClassDef):
            return scope.node
        scope = scope.parent
    return None
