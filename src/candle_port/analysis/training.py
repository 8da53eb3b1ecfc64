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
    if site.api.is_module and site.kind != "wrapper" or site.kind == "wrapper" and site.wrapper.rpartition(".")[2][:1].isupper():
        return ""
    method, cls_scope = None, site.scope
    while cls_scope is not None and cls_scope.kind != "class":
        if cls_scope.kind == "function":
            method = cls_scope.node
        cls_scope = cls_scope.parent
    if cls_scope is None or method is None or cls_scope.parent is None or cls_scope.parent.kind != "module":
        return ""
    cls = cls_scope.node
    if not plain_class(cls, cls_scope.parent, resolver, index, module, 0):
        return ""
    text = site.source.text if site.source is not None else ""
    if _used_by_a_trainable_class(cls, cls_scope.parent, resolver, index, module, text):
        return ""  # diffusers' attention processors: plain classes an nn.Module calls in its forward
    return f"`{cls.name}.{method.name}` is a method of a class that is no nn.Module or loss (--include-untrained reports it as an error)"


def plain_class(cls, scope, resolver, index, module: str, depth: int) -> bool:
    """Whether the class `cls` (defined at `scope` of `module`) is certainly no nn.Module, autograd
    Function or loss: every base a plain Python class, here or through the index."""
    if depth > _MAX_DEPTH or is_loss_name(cls.name):
        return False
    from candle_port.analysis.names import ClassInfo

    for base in cls.bases:
        local = _local_class(base, scope, resolver)
        if isinstance(local, ClassInfo):
            if not plain_class(local.node, local.scope, resolver, index, module, depth + 1):
                return False
            continue
        names = resolver.qualified_names(base, scope)
        if not names:
            return False
        for name in names:
            if not plain_base_name(name) and (index is None or not index.plain_class(name)):
                return False
    return True


def _used_by_a_trainable_class(cls, module_scope, resolver, index, module: str, text: str) -> bool:
    """Whether another module-level class that is not plain names `cls` (constructs it, keeps it
    as a default: `self.set_processor(AttnProcessor())` in an nn.Module's `__init__`). Read in the
    text, from each class's line to the next statement's: the same whether or not its method
    bodies were parsed (relevance.py)."""
    import ast
    import re

    from candle_port.analysis.names import ClassInfo

    body = getattr(module_scope.node, "body", None)
    if not body or not text:
        return False
    word = re.compile(rf"\b{re.escape(cls.name)}\b")
    lines = text.splitlines()
    for i, statement in enumerate(body):
        if not isinstance(statement, ast.ClassDef) or statement is cls:
            continue
        last = body[i + 1].lineno - 1 if i + 1 < len(body) else len(lines)
        if not any(word.search(line) for line in lines[statement.lineno:last]):
            continue
        info = next((b for b in module_scope.bindings.get(statement.name, ()) if isinstance(b, ClassInfo)), None)
        if info is not None and not plain_class(info.node, info.scope, resolver, index, module, 0):
            return True
    return False


def plain_base_name(name: str) -> bool:
    return name in _PLAIN_BASES or name.startswith(_PLAIN_MODULES)


def _local_class(base, scope, resolver):
    import ast

    if isinstance(base, ast.Name):
        for binding in resolver.lookup(base.id, scope) or ():
            return binding
    return None
