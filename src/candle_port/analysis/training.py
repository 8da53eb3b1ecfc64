"""Whether a site can be on a training path: a reason when it cannot, so its findings are
quieter (warnings) rather than errors, and port-fix leaves it alone.

A new user's first run on ultralytics gave 80 findings, 46 of them outside model code (SAM's
predictor, validators, the trainer's batch preprocessing, plotting, the exporter), each an error
saying "has no backward". candle computes a gradient only for what a loss reaches, and a loss is
computed from an nn.Module's outputs; a method of a class that is no nn.Module (a predictor, a
validator, an annotator, a data transform: known by what the class is, not by its file name)
transforms inputs and outputs that carry no gradient. So a site is *off* a training path when
it is in a method (or a function nested in one) of a class whose bases, followed through the
project index, end in plain Python classes, and that no other class of its module that trains
names (diffusers' attention processors are plain classes its nn.Modules construct and call) (`object`, `abc.ABC`, `typing.Generic`...): no
torch class, no class of another library (a `LightningModule` trains), no loss (a class named
`...Loss`, as ultralytics' `v8SegmentationLoss` is, is on the path though it is no nn.Module).
Everything else may be on a training path: a module-level function (called from a forward,
maybe), a method of an nn.Module, code whose class cannot be followed, and a layer built anywhere
(it trains in whatever model it is put in). `torch.no_grad()` is
grad_mode.py's.
"""

from __future__ import annotations

_PLAIN_BASES = frozenset({
    "builtins.object", "abc.ABC", "typing.Generic", "typing.Protocol", "typing.NamedTuple", "builtins.dict",
    "builtins.list", "builtins.tuple", "builtins.Exception", "builtins.str",
})
_PLAIN_MODULES = ("abc.", "typing.", "enum.", "collections.", "dataclasses.", "builtins.", "threading.", "contextlib.")
_MAX_DEPTH = 8


def is_loss_name(name: str) -> bool:
    return "loss" in name.lower()


def untrained_reason(site, resolver, index, module: str) -> str:
    """Why `site` is not on a training path, or "" when it may be. A layer built there (a factory
    class's `build` making `nn.Upsample(...)`) belongs to whatever model it is put in: it may train."""
    return condition_holds(untrained_condition(site, resolver, module), index)


def untrained_condition(site, resolver, module: str):
    """What decides whether `site` is off a training path, read from its file alone: None when it
    is on one whatever the other modules say, else (reason, own, users). The site is off the path
    when every name in `own` (the other-module bases its class needs plain) is a plain class of the
    index, and so is every name of each set in `users` (the same for each other class of its
    module that names it: one that trains keeps it on the path). The engine decides it once the project index is complete
    (`condition_holds`), so a file need not be checked again when a base's module is summarized."""
    if site.api.is_module and site.kind != "wrapper" or site.kind == "wrapper" and site.wrapper.rpartition(".")[2][:1].isupper():
        return None
    method, cls_scope = None, site.scope
    while cls_scope is not None and cls_scope.kind != "class":
        if cls_scope.kind == "function":
            method = cls_scope.node
        cls_scope = cls_scope.parent
    if cls_scope is None or method is None or cls_scope.parent is None or cls_scope.parent.kind != "module":
        return None
    cls = cls_scope.node
    own = plain_needs(cls, cls_scope.parent, resolver, 0)
    if own is None:
        return None
    text = site.source.text if site.source is not None else ""
    users = _users_needs(cls, cls_scope.parent, resolver, text)
    if users is None:
        return None  # diffusers' attention processors: plain classes an nn.Module calls in its forward
    reason = f"`{cls.name}.{method.name}` is a method of a class that is no nn.Module or loss (--include-untrained reports it as an error)"
    return reason, own, users


def condition_holds(condition, index) -> str:
    """The reason of an `untrained_condition` when `index` (the project index, with the site's own
    module in it) makes it hold, else ""."""
    if condition is None:
        return ""
    reason, own, users = condition
    if not _all_plain(own, index) or not all(_all_plain(needs, index) for needs in users):
        return ""
    return reason


def _all_plain(names, index) -> bool:
    return all(index is not None and index.plain_class(name) for name in names)


def plain_needs(cls, scope, resolver, depth: int) -> frozenset[str] | None:
    """Whether the class `cls` (defined at `scope`) is certainly no nn.Module, autograd Function
    or loss: None when it is not whatever the index says (a loss's name, a base that cannot be
    followed, a torch base), else the qualified names of other modules' classes among its bases
    (through its module's own bases) that must all be plain classes of the index."""
    if depth > _MAX_DEPTH or is_loss_name(cls.name):
        return None
    from candle_port.analysis.names import ClassInfo

    needs: set[str] = set()
    for base in cls.bases:
        local = _local_class(base, scope, resolver)
        if isinstance(local, ClassInfo):
            inner = plain_needs(local.node, local.scope, resolver, depth + 1)
            if inner is None:
                return None
            needs |= inner
            continue
        names = resolver.qualified_names(base, scope)
        if not names:
            return None
        needs.update(name for name in names if not plain_base_name(name))
    return frozenset(needs)


def _users_needs(cls, module_scope, resolver, text: str) -> tuple[frozenset[str], ...] | None:
    """The other module-level classes that name `cls` (construct it, keep it as a default:
    `self.set_processor(AttnProcessor())` in an nn.Module's `__init__`), as the `plain_needs` of
    each that may be plain (None when one of them certainly trains; a certainly plain one is left
    out). Read in the text, from each class's line to the next statement's: the same whether or
    not its method bodies were parsed (relevance.py)."""
    import ast
    import re

    from candle_port.analysis.names import ClassInfo

    body = getattr(module_scope.node, "body", None)
    if not body or not text:
        return ()
    word = re.compile(rf"\b{re.escape(cls.name)}\b")
    lines = text.splitlines()
    users: list[frozenset[str]] = []
    for i, statement in enumerate(body):
        if not isinstance(statement, ast.ClassDef) or statement is cls:
            continue
        last = body[i + 1].lineno - 1 if i + 1 < len(body) else len(lines)
        if not any(word.search(line) for line in lines[statement.lineno:last]):
            continue
        info = next((b for b in module_scope.bindings.get(statement.name, ()) if isinstance(b, ClassInfo)), None)
        if info is None:
            continue
        needs = plain_needs(info.node, info.scope, resolver, 0)
        if needs is None:
            return None
        if needs:
            users.append(needs)
    return tuple(users)


def plain_base_name(name: str) -> bool:
    return name in _PLAIN_BASES or name.startswith(_PLAIN_MODULES)


def _local_class(base, scope, resolver):
    import ast

    if isinstance(base, ast.Name):
        for binding in resolver.lookup(base.id, scope) or ():
            return binding
    return None
