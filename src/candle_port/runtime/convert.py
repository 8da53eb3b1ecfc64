"""Fix a built model instead of its source: :func:`convert` and :func:`routed`.

Source rewriting (``port-fix``) cannot see a layer that is chosen at run time: built by a factory
or registry (MONAI's ``Pool[Pool.MAX, 2](kernel_size=3, stride=2, padding=1)``), read from a config
dict, or indexed out of a collection. Two tools reach those:

- ``convert(model)`` swaps, in place, every module instance whose class the runtime replaces
  (``nn.Upsample`` and friends, the 1-D/2-D max, average and adaptive pools, and, where the runtime
  has them, transposed convolutions with groups or ``output_padding >= stride``, ``ConvTranspose1d``,
  ``Conv1d``, 3-D convolutions and pools), subclasses and factory-built instances included, for the runtime's
  module. The instance keeps its identity, parameters, buffers, hooks, training flag and
  attributes (only its ``__class__`` changes), so ``state_dict`` keys, optimizers holding its
  parameters and ``isinstance`` checks are unaffected. A user subclass ``U(nn.MaxPool2d)`` becomes
  ``U`` over the runtime's ``MaxPool2d`` (its own ``forward``, if any, still runs, and
  ``super().forward`` is the runtime's). Returns the model.
- ``with routed(): ...`` routes the functional calls made inside the block (``F.interpolate``,
  ``F.upsample*``, ``F.max_pool*``, ``F.avg_pool*``, ``F.adaptive_*``, and ``F.grid_sample``,
  ``F.affine_grid``, ``F.conv1d``, ``F.conv_transpose1d``, ``F.conv3d``, 3-D pools where the runtime has them;
  however they were imported: ``from torch.nn.functional import interpolate as up`` is routed too)
  to the runtime, and restores torch on exit. It is a ``torch.overrides.TorchFunctionMode``, so
  it catches the call where torch dispatches it, not by patching module attributes.

Thread-safety: torch keeps the function-mode stack per thread, so ``routed()`` affects only the
thread that entered it (other threads, and autograd's backward threads, which call no functional
API, are untouched); entering it in each worker thread is safe. ``convert`` mutates the model: do
not run it while another thread runs the same model.

Not converted: ``torch.jit`` script modules (their class cannot change) and lazy modules before
their first forward (``LazyConv3d`` becomes ``nn.Conv3d`` when it materialises; convert after one
forward, or rely on ``routed()``, which catches their functional call). A converted user subclass
is a class made at run time: save the ``state_dict``, not the pickled model.

Imports nothing but torch.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, Optional, Tuple

import torch
from torch import nn
from torch.nn import functional as F
from torch.overrides import TorchFunctionMode

__all__ = ["convert", "routed"]

# Module classes the runtime replaces, torch's name = the runtime's name (each runtime class
# subclasses torch's and replaces forward). Missing ones (ops not in this runtime) are skipped.
_CV_MODULES = (
    "Upsample",
    "UpsamplingBilinear2d",
    "UpsamplingNearest2d",
    "MaxPool1d",
    "MaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "Conv1d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "Conv3d",
    "ConvTranspose3d",
    "MaxPool3d",
    "AvgPool3d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool3d",
)
# Functional APIs routed to the runtime function of the same name.
_CV_FUNCTIONS = (
    "interpolate",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
    "max_pool1d",
    "max_pool2d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "grid_sample",
    "affine_grid",
    "conv1d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv3d",
    "conv_transpose3d",
    "max_pool3d",
    "max_pool3d_with_indices",
    "avg_pool3d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
)
# torch.* functions that are not the F.* object of the same name: torch name -> runtime name.
_CV_TORCH_ALIASES = {
    "max_pool1d": "max_pool1d",
    "max_pool2d": "max_pool2d",
    "max_pool3d": "max_pool3d",
    "adaptive_max_pool1d": "adaptive_max_pool1d_with_indices",  # torch's returns (values, indices)
}


def _cv_runtime() -> Dict[str, Any]:
    """The runtime's namespace: this package's, or, vendored into one module, this module's own."""
    if callable(globals().get("interpolate")):  # vendored: every runtime op is a global here
        return globals()
    package = importlib.import_module(__name__.rpartition(".")[0])
    return vars(package)


def _cv_ints(value: Any, n: int) -> Tuple[int, ...]:
    if isinstance(value, (tuple, list)):
        return tuple(int(v) for v in value) if len(value) == n else tuple(int(value[0]) for _ in range(n))
    return tuple(int(value) for _ in range(n))


def _cv_conv_transpose2d_needed(groups: Any, output_padding: Any, stride: Any) -> bool:
    """Whether candle's own conv_transpose2d cannot train it: groups != 1 or output_padding >= stride."""
    if groups != 1:
        return True
    return any(p >= s for p, s in zip(_cv_ints(output_padding, 2), _cv_ints(stride, 2)))


def _cv_module_needed(module: nn.Module, torch_class: type) -> bool:
    if torch_class is nn.ConvTranspose2d:
        return _cv_conv_transpose2d_needed(module.groups, module.output_padding, module.stride)
    return True


def _cv_functional_needed(name: str, args: tuple, kwargs: dict) -> bool:
    if name != "conv_transpose2d":
        return True
    # (input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1)
    def arg(index: int, key: str, default: Any) -> Any:
        return args[index] if len(args) > index else kwargs.get(key, default)

    return _cv_conv_transpose2d_needed(arg(6, "groups", 1), arg(5, "output_padding", 0), arg(3, "stride", 1))


_CV_CLASSES: Optional[Dict[type, type]] = None  # torch class -> runtime class
_CV_ROUTES: Optional[Dict[Any, Tuple[str, Callable]]] = None  # torch function -> (name, runtime function)
_CV_SUBCLASSES: Dict[Tuple[type, type], type] = {}  # (user class, runtime class) -> converted class


def _cv_tables() -> Tuple[Dict[type, type], Dict[Any, Tuple[str, Callable]]]:
    global _CV_CLASSES, _CV_ROUTES
    if _CV_CLASSES is None or _CV_ROUTES is None:
        runtime = _cv_runtime()
        classes = {}
        for name in _CV_MODULES:
            ours, theirs = runtime.get(name), getattr(nn, name, None)
            if isinstance(ours, type) and isinstance(theirs, type) and issubclass(ours, theirs) and ours is not theirs:
                classes[theirs] = ours
        routes: Dict[Any, Tuple[str, Callable]] = {}
        for name in _CV_FUNCTIONS:
            ours, theirs = runtime.get(name), getattr(F, name, None)
            if callable(ours) and theirs is not None and ours is not theirs:
                routes[theirs] = (name, ours)
        for name, target in _CV_TORCH_ALIASES.items():
            ours, theirs = runtime.get(target), getattr(torch, name, None)
            if callable(ours) and theirs is not None and theirs not in routes:
                routes[theirs] = (target, ours)
        _CV_CLASSES, _CV_ROUTES = classes, routes
    return _CV_CLASSES, _CV_ROUTES


def _cv_converted_class(cls: type, classes: Dict[type, type]) -> Optional[type]:
    """The class a `cls` instance becomes, or None when the runtime does not replace it."""
    runtime_classes = set(classes.values())
    if any(base in runtime_classes for base in cls.__mro__):
        return None  # already the runtime's (converted, or written against the runtime)
    torch_class = next((base for base in cls.__mro__ if base in classes), None)
    if torch_class is None:
        return None
    ours = classes[torch_class]
    if cls is torch_class:
        return ours
    key = (cls, ours)
    if key not in _CV_SUBCLASSES:
        # cls first: its own methods win; the runtime class comes before torch's in the MRO.
        _CV_SUBCLASSES[key] = type(cls.__name__, (cls, ours), {"__module__": cls.__module__, "__doc__": cls.__doc__})
    return _CV_SUBCLASSES[key]


def convert(model: nn.Module) -> nn.Module:
    """Swap every module of ``model`` (itself included) that the runtime replaces; returns ``model``.

    In place: each converted instance keeps its identity, parameters, buffers, hooks, training flag
    and attributes; only its class changes (see the module docstring).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"convert() takes a torch.nn.Module, not {type(model).__name__}")
    classes, _ = _cv_tables()
    for module in model.modules():
        if isinstance(module, torch.jit.ScriptModule):
            continue
        if isinstance(module, nn.modules.lazy.LazyModuleMixin) and module.has_uninitialized_params():
            continue
        new_class = _cv_converted_class(type(module), classes)
        if new_class is None:
            continue
        torch_class = next(base for base in type(module).__mro__ if base in classes)
        if _cv_module_needed(module, torch_class):
            module.__class__ = new_class
    return model


class routed(TorchFunctionMode):
    """``with routed(): ...``: functional resize, pooling (and, where the runtime has them,
    grid_sample, transposed and 3-D convolution) calls inside the block run the runtime's ops.

    Per thread (torch's function-mode stack is thread-local); nests; restores torch on exit.
    """

    def __init__(self) -> None:
        super().__init__()
        self._routes = _cv_tables()[1]

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:
            route = self._routes.get(func)
        except TypeError:  # an unhashable callable: never one of ours
            route = None
        if route is not None and _cv_functional_needed(route[0], args, kwargs):
            return route[1](*args, **kwargs)
        return func(*args, **kwargs)
