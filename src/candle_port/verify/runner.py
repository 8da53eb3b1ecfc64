"""The whole check: rewrite a copy, run original and rewritten in two workers, compare, decide."""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import types
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager

from candle_port.rewriters.strategies import EXACT_STRATEGIES

from .compare import NOISE_FACTOR, choose_tolerance, compare_results
from .lines import map_graph_locations, map_locations_in_text
from .report import EXIT_ERROR, EXIT_FAIL, EXIT_PASS, VerifyReport  # noqa: F401 (re-exported)
from .spec import SpecError, parse_config_class, parse_model_spec, resolve_source_root
from .workspace import RewriteFn, make_rewritten_copy, use_prepared_copy

WORKER_TIMEOUT_S = 1800
# Seeds after the first that verify tries when every failing run crossed an activation's kink.
KINK_RETRIES = 3
GRADCHECK_MAX_SPATIAL = 8


# A stage of the run, for progress on stderr: ``with stage("tracing ..."):`` (cli/stages.py).
Stage = Callable[[str], ContextManager[None]]


def no_stage(text: str) -> ContextManager[None]:
    return contextlib.nullcontext()


class VerifyError(Exception):
    """Anything that stops verify from reaching a verdict (exit code 2)."""


@dataclass
class VerifyOptions:
    model: str
    input_shapes: list[tuple[int, ...]]
    strategy: str = "runtime"
    init_kwargs: dict[str, Any] = field(default_factory=dict)
    dtype: str = "float32"
    source_root: str | None = None
    seed: int = 0
    rtol: float | None = None  # None (with atol None): the tolerance comes from the reference run
    atol: float | None = None
    noise_factor: float = NOISE_FACTOR
    trace: bool = True
    allow_wrong_gradients: bool = False
    gradcheck: bool = False
    gradcheck_shapes: list[tuple[int, ...]] | None = None
    train: bool = True
    threads: int = 1
    cwd: Path | None = None
    # --config-class package.module:Class and --config-kwargs: MODEL(Class(**config_kwargs), **init_kwargs).
    config_class: str | None = None
    config_kwargs: dict[str, Any] = field(default_factory=dict)
    # --skip-package-init: the packages above MODEL's module are imported without their __init__.py.
    skip_package_init: bool = False
    # --forward-kwargs: keyword arguments every forward call gets (non-tensor flags).
    forward_kwargs: dict[str, Any] = field(default_factory=dict)
    # --rewrite-all: every file of the source root, not only those the model imports (import_graph.py).
    rewrite_all: bool = False


def rewrite_entries(options: VerifyOptions, spec, source) -> list[Path] | None:
    """The files the rewrite walks imports from (None: rewrite every file of the source root). A
    driver outside the root reaches it through a package's ``__init__``, which may import by string
    (transformers' lazy modules): there every file is rewritten, as before."""
    from .import_graph import entry_files

    if options.rewrite_all or source.driver:
        return None
    return entry_files(source, spec.module_file, options.config_class)


def _unchanged(text: str, strategy: str, path: str) -> tuple[str, bool]:
    """--strategy convert leaves the source alone: runtime.convert fixes the built model."""
    return text, False


def gradcheck_shapes(shapes: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """A tiny version of each input: batch 1, spatial sizes at most GRADCHECK_MAX_SPATIAL."""
    return [tuple([1] + list(s[1:2]) + [min(d, GRADCHECK_MAX_SPATIAL) for d in s[2:]]) for s in shapes]


_CONTEXT = None


def _context():
    """A multiprocessing context whose workers start from a fork server that preloaded torch
    (see preload.py); spawn where there is no fork server. Either way each worker is a fresh
    process without the other's modules."""
    global _CONTEXT
    if _CONTEXT is None:
        import multiprocessing

        if "forkserver" in multiprocessing.get_all_start_methods():
            _CONTEXT = multiprocessing.get_context("forkserver")
            _CONTEXT.set_forkserver_preload(["candle_port.verify.preload"])
        else:  # pragma: no cover - Windows
            _CONTEXT = multiprocessing.get_context("spawn")
    return _CONTEXT


def _start(job: dict, workdir: Path, name: str):
    from .worker import entry

    path = workdir / f"{name}.job.json"
    path.write_text(json.dumps(job), encoding="utf-8")
    job["log"] = str(workdir / f"{name}.log")
    process = _context().Process(target=entry, args=(str(path), job["log"]), name=f"candle-port-verify-{name}")
    # The worker needs nothing from the caller's __main__; without this, multiprocessing re-runs an
    # unguarded calling script in the worker (and never the user's model code, by design).
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        process.start()
    finally:
        if main is not None:
            sys.modules["__main__"] = main
    return process


def _stop(process) -> None:
    if process.is_alive():
        process.kill()
    process.join()


def _finish(process, job: dict, label: str) -> dict:
    import torch

    process.join(WORKER_TIMEOUT_S)
    if process.is_alive():
        _stop(process)
        raise VerifyError(f"{label} model: worker timed out after {WORKER_TIMEOUT_S}s")
    error_path = Path(job["out"] + ".error.json")
    if error_path.exists():
        error = json.loads(error_path.read_text(encoding="utf-8"))
        raise VerifyError(f"{label} model: {error['kind']} error: {error['message']}".splitlines()[0])
    if process.exitcode != 0 or not Path(job["out"]).exists():
        log = Path(job["log"]).read_text(encoding="utf-8", errors="replace") if Path(job["log"]).exists() else ""
        tail = log.strip().splitlines()[-1:] or ["no output"]
        raise VerifyError(f"{label} model: worker exited with {process.exitcode}: {tail[0]}")
    return torch.load(job["out"], weights_only=True)


def run_verify(options: VerifyOptions, rewrite: RewriteFn | None = None,
               prepared_rewrite: Path | None = None, stage: Stage = no_stage) -> VerifyReport:
    """Verify one model. ``rewrite`` replaces port-fix and ``prepared_rewrite`` names a hand-made
    rewritten copy of the source root (both for tests); the default path calls fix_source.
    ``stage`` announces each long step (the CLI's progress)."""
    started = time.monotonic()
    try:
        spec = parse_model_spec(options.model, options.cwd)
        source = resolve_source_root(spec, options.source_root)
        if options.config_class:
            parse_config_class(options.config_class)
    except SpecError as exc:
        raise VerifyError(str(exc)) from exc
    if not options.input_shapes:
        raise VerifyError("give at least one --input-shape")
    with tempfile.TemporaryDirectory(prefix="candle-port-verify-") as tmp:
        workdir = Path(tmp)
        if prepared_rewrite is not None:
            rewritten = use_prepared_copy(source, Path(prepared_rewrite), workdir / "rewritten")
        else:
            try:
                with stage(f"rewriting a copy of {source.path} ({options.strategy})"):
                    rewritten = make_rewritten_copy(source, workdir / "rewritten", options.strategy,
                                                    rewrite or (_unchanged if options.strategy == "convert" else None),
                                                    entries=rewrite_entries(options, spec, source))
            except ImportError as exc:
                raise VerifyError(f"port-fix is not available: {exc}") from exc
        with stage("running the original and the rewritten model in torch (build, forward, backward, trace)"):
            pair, kink = _past_kinks(options, lambda seed: _run_pair(
                options, seed, spec, source, rewritten, workdir if seed == options.seed else workdir / f"seed-{seed}"))
        original, result, load, tolerance, rows = pair
    trace_error = "--no-trace" if not options.trace else result.get("trace_error", "")
    return VerifyReport(
        model=options.model, strategy=options.strategy, dtype=options.dtype, seed=options.seed,
        train=options.train, input_shapes=[list(s) for s in options.input_shapes],
        source_root=str(source.path), tolerance=tolerance,
        rewrite={**rewritten.to_json(), **({"converted": result["converted"]} if "converted" in result else {})},
        new_parameters=list(load["missing"]), dropped_state=list(load["unexpected"]),
        rows=rows, graph_original=original.get("graph"), graph_rewritten=result.get("graph"),
        gradcheck=result.get("gradcheck"),
        module_files={"original": original["module_file"], "rewritten": result["module_file"]},
        timings={"original": original.get("timings", {}), "rewritten": result.get("timings", {})},
        seconds=round(time.monotonic() - started, 1),
        trace_error=trace_error, allow_wrong_gradients=options.allow_wrong_gradients,
        kink=kink,
    )


def _run_pair(options: VerifyOptions, seed: int, spec, source, rewritten, workdir: Path) -> tuple:
    """The original and the rewritten model in two workers on `seed`, compared: (original,
    rewritten, their state_dict load, tolerance, rows)."""
    workdir.mkdir(parents=True, exist_ok=True)
    base = {
        "module": spec.module, "attr": spec.attr, "import_root": str(spec.import_root),
        "init_kwargs": options.init_kwargs, "input_shapes": [list(s) for s in options.input_shapes],
        "dtype": options.dtype, "seed": seed, "train": options.train, "threads": options.threads,
        "trace": options.trace,
        "config_class": options.config_class, "config_kwargs": options.config_kwargs,
        "skip_package_init": options.skip_package_init, "package_roots": sorted(source.modules),
        "forward_kwargs": options.forward_kwargs,
    }
    reference = str(workdir / "reference.pt")
    job_a = dict(base, role="original", out=str(workdir / "original.pt"), reference_out=reference)
    job_b = dict(base, role="rewritten", out=str(workdir / "rewritten.pt"), reference=reference,
                 redirects=rewritten.modules, convert=options.strategy == "convert")
    if options.gradcheck:
        job_b["gradcheck_shapes"] = [list(s) for s in (options.gradcheck_shapes or gradcheck_shapes(options.input_shapes))]
    proc_a = _start(job_a, workdir, "original")
    proc_b = _start(job_b, workdir, "rewritten")
    try:
        original = _finish(proc_a, job_a, "original")
    except VerifyError:
        _stop(proc_b)
        raise
    result = _finish(proc_b, job_b, "rewritten")
    map_graph_locations(result.get("graph"), rewritten.root / source.path.name, source.path)
    if result.get("trace_error"):
        result["trace_error"] = map_locations_in_text(result["trace_error"], rewritten.root / source.path.name, source.path)
    if source.driver:
        if not result.get("redirected"):
            raise VerifyError(f"{spec.module} is outside the source root {source.path} and building the model "
                              f"imported nothing from it: there is nothing rewritten to compare")
    # absolute(), not resolve(): a file the rewrite left alone is a link to the original in the copy.
    elif Path(result["module_file"]).absolute() == Path(original["module_file"]).absolute():
        raise VerifyError(f"isolation failed: the rewritten worker imported the original {original['module_file']}")
    load = result.get("load", {"missing": [], "unexpected": []})
    tolerance = choose_tolerance(options.dtype, original.get("reference"), options.rtol, options.atol,
                                 options.noise_factor)
    rows = compare_results(original, result, tolerance, list(load["missing"]))
    return original, result, load, tolerance, rows


def _past_kinks(options: VerifyOptions, run) -> tuple[tuple, dict | None]:
    """`run(seed)` on the given seed, then, while each failing run's two models put an activation
    input on different sides of its kink (float32 rounding, kinks.py), on the next seeds, up to
    KINK_RETRIES more: (the pair to report, what happened, or None without a crossing). A strategy
    that changes the numbers by design differs anyway, so it is not retried."""
    pair = run(options.seed)
    exact = options.strategy in EXACT_STRATEGIES or options.rtol is not None or options.atol is not None
    flips = _kink_crossed(pair) if exact else []
    if not flips:
        return pair, None
    kink = {"seed": options.seed, "flips": flips, "crossed_seeds": [options.seed], "checked_seed": None,
            "outcome": "every seed crossed a kink"}
    for seed in range(options.seed + 1, options.seed + 1 + KINK_RETRIES):
        pair = run(seed)
        if not _differing(pair):
            kink.update(checked_seed=seed, outcome="passed")
            break
        if not _kink_crossed(pair):  # a difference no kink explains: this run's rows are the verdict
            kink.update(checked_seed=seed, outcome="differs without a kink")
            break
        kink["crossed_seeds"].append(seed)
    return pair, kink


def _differing(pair: tuple) -> bool:
    return any(r.ok is False for r in pair[4])


def _kink_crossed(pair: tuple) -> list:
    """The kink crossings of a pair whose comparison failed (kinks.flips), else []."""
    from .kinks import flips

    if not _differing(pair):
        return []
    return flips(pair[0].get("kinks"), pair[1].get("kinks"))
