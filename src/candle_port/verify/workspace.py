"""The rewritten copy: the source root copied to a temporary directory and port-fix applied there.

The user's files are only read. Every ``.py`` file of the copy that can hold a site (the same
substring prefilter port-check uses, proven on the corpus to lose nothing) goes through
``fix_source``; the others are copied byte for byte.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .spec import SourceRoot

# (text, strategy, path) -> (new text, changed) or (new text, changed, fixed count, refusal notes)
RewriteFn = Callable[[str, str, str], tuple]


@dataclass
class RewriteSummary:
    root: Path  # the copy's root directory (goes on the rewritten worker's module map)
    modules: dict[str, str]  # module name -> absolute path in the copy
    scanned: int = 0
    changed: list[str] = field(default_factory=list)  # paths relative to the source root
    errors: list[str] = field(default_factory=list)
    sites_fixed: int = 0
    refused: list[str] = field(default_factory=list)  # "path:line: reason" for sites port-fix left alone

    def to_json(self) -> dict:
        return {"scanned": self.scanned, "changed": self.changed, "errors": self.errors,
                "sites_fixed": self.sites_fixed, "refused": self.refused}


def fix_with_port_fix(text: str, strategy: str, path: str) -> tuple[str, bool, int, list[str]]:
    """The real rewrite: candle_port.api.fix_source (port-fix)."""
    from candle_port.api import fix_source

    result = fix_source(text, strategy=strategy, path=path)
    error = getattr(result, "error", None)
    if error is not None:
        raise ValueError(getattr(error, "message", None) or str(error))
    refused = [f"{getattr(r, 'line', '?')}: {getattr(r, 'reason', r)}" for r in getattr(result, "refused", [])]
    return result.text, bool(result.changed), len(getattr(result, "fixed", [])), refused


def _ignore(directory: str, names: list[str]) -> set[str]:
    return {n for n in names if n == "__pycache__" or n.endswith((".pyc", ".pyo"))}


def make_rewritten_copy(
    source: SourceRoot, dest: Path, strategy: str, rewrite: RewriteFn | None = None
) -> RewriteSummary:
    """Copy ``source`` into ``dest`` and rewrite the copy in place."""
    from candle_port.prefilter import may_hold_sites

    rewrite = rewrite or fix_with_port_fix
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / source.path.name
    if source.path.is_file():
        shutil.copy2(source.path, target)
        files = [target]
    else:
        shutil.copytree(source.path, target, ignore=_ignore)
        files = sorted(target.rglob("*.py"))
    base = target.parent if source.path.is_file() else target
    summary = RewriteSummary(root=dest, modules={
        name: str(dest / rel) if (source.path.is_file() or (source.path / "__init__.py").is_file())
        else str(target / rel)
        for name, rel in source.modules.items()
    })
    for file in files:
        summary.scanned += 1
        rel = file.relative_to(base).as_posix()
        with open(file, encoding="utf-8", newline="") as fh:
            try:
                text = fh.read()
            except UnicodeDecodeError:
                summary.errors.append(f"{rel}: not UTF-8, left unchanged")
                continue
        if not may_hold_sites(text):
            continue
        original_path = source.path if source.path.is_file() else source.path / rel
        try:
            outcome = tuple(rewrite(text, strategy, str(original_path)))
        except Exception as exc:  # one file's failure must not hide the others' results
            summary.errors.append(f"{rel}: rewrite failed: {type(exc).__name__}: {exc}")
            continue
        new_text, changed = outcome[0], bool(outcome[1])
        if len(outcome) >= 4:
            summary.sites_fixed += int(outcome[2])
            summary.refused.extend(f"{rel}:{note}" for note in outcome[3])
        if changed and new_text != text:
            with open(file, "w", encoding="utf-8", newline="") as fh:
                fh.write(new_text)
            summary.changed.append(rel)
    return summary


def use_prepared_copy(source: SourceRoot, prepared: Path, dest: Path) -> RewriteSummary:
    """A hand-made rewritten copy of ``source`` (tests, planted rewrites) used as is."""
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / source.path.name
    if prepared.is_file():
        shutil.copy2(prepared, target)
    else:
        shutil.copytree(prepared, target, ignore=_ignore)
    modules = {
        name: str(dest / rel) if (source.path.is_file() or (source.path / "__init__.py").is_file()) else str(target / rel)
        for name, rel in source.modules.items()
    }
    changed = [source.path.name] if prepared.is_file() else sorted(
        p.relative_to(target).as_posix() for p in target.rglob("*.py"))
    return RewriteSummary(root=dest, modules=modules, scanned=len(changed), changed=changed)
