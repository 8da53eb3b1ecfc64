"""Generate verify's candle op table (src/candle_port/verify/candle_ops.json) from measurements.

Every verdict in the table is a test result:

- ``candle-port-run --measure-ops OUT.json`` (crates/candle-port-run/src/measure.rs) runs, for each
  ATen op, the candle op or composition a straightforward port uses, in float64, and records
  ``backward`` / ``forward-only`` / ``no-op`` / ``silent-cut`` / ``wrong-gradient`` /
  ``no-gradient`` with candle's message or the gradient error against finite differences;
- ops candle has no function for are checked by their absence from candle-core's and candle-nn's
  source (``pub fn NAME``), found with ``cargo metadata``.

Prose (where the op is discussed, notes, warnings, the scope of a wrong gradient, the names to
look for) lives in scripts/optable_notes.json. An op whose measurements contradict the notes, or
that has neither a probe nor an absence check, stops the generator: a candle upgrade that changes
a verdict cannot pass silently.

    python scripts/gen_optable.py [--binary PATH] [--measurements FILE] [--check | --write]

``--versioned`` writes the table of another candle release, ``candle_ops-<version>.json`` beside
candle_ops.json, from measurements taken in a workspace pinned to it (``--workspace``; see
scripts/measure_candle_versions.sh, which runs this): the notes were written for the pinned
release, so where a measurement contradicts them the entry says so instead of stopping the
generator, and a release whose probes did not build (``--build-log``) gets every op of the pinned
table as ``not-in-table`` with cargo's first error.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT / "scripts" / "optable_notes.json"
TABLE = ROOT / "src" / "candle_port" / "verify" / "candle_ops.json"
CLASSES = {
    "backward": "candle has the op and its backward (measured: gradient equals finite differences)",
    "forward-only": "candle has the op but backward() fails (measured: candle's message)",
    "conditional": "candle's backward works only for some arguments (evaluated per node; each case measured)",
    "no-op": "candle has no such op (measured: the forward fails, or no such function in candle's source)",
    "not-in-table": "unknown to this table",
}
VERDICTS = ("backward", "forward-only", "no-op", "silent-cut", "wrong-gradient", "no-gradient")


class TableError(ValueError):
    """The measurements and the notes disagree, or an op has no measurement."""


def measure(binary: Path) -> dict:
    """Run the probes with the built candle-port-run."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "measurements.json"
        subprocess.run([str(binary), "--measure-ops", str(out)], check=True, capture_output=True, text=True,
                       timeout=600)
        return json.loads(out.read_text(encoding="utf-8"))


def candle_sources(workspace: Path = ROOT) -> dict[str, Path]:
    """``src`` of the candle-core and candle-nn ``workspace`` (default: this one) locks."""
    meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--locked"], cwd=workspace,
                                     check=True, capture_output=True, text=True).stdout)
    found = {}
    for pkg in meta["packages"]:
        if pkg["name"] in ("candle-core", "candle-nn"):
            found[f"{pkg['name']} {pkg['version']}"] = Path(pkg["manifest_path"]).parent / "src"
    if len(found) != 2:
        raise TableError(f"cargo metadata found {sorted(found)}, not candle-core and candle-nn")
    return found


def absence(names: list[str], sources: dict[str, Path]) -> tuple[bool, str]:
    """True when none of ``names`` is a ``pub fn`` in candle's source; the evidence either way."""
    for name in names:
        pattern = re.compile(rf"pub fn {re.escape(name)}\b")
        for label, src in sources.items():
            for path in sorted(src.rglob("*.rs")):
                if pattern.search(path.read_text(encoding="utf-8", errors="replace")):
                    return False, f"pub fn {name} in {label} ({path.relative_to(src)})"
    return True, f"no pub fn {' / '.join(names)} in {' or '.join(sorted(sources))}"


def _entry(op: str, records: list[dict], note: dict) -> dict:
    entry: dict = {k: note[k] for k in ("ref", "note") if note.get(k)}
    verdict = [r for r in records if r["role"] == "verdict"]
    caveats = [r for r in records if r["role"] == "caveat"]
    if not verdict:
        raise TableError(f"{op}: only caveat probes, no verdict probe")
    kinds = {r["verdict"] for r in verdict}
    if kinds <= {"no-gradient"}:
        entry["class"] = "backward"
        entry["no_grad"] = True
        entry.setdefault("note", "no gradient")
    elif len(kinds) == 1 and kinds <= {"backward", "forward-only", "no-op"}:
        entry["class"] = next(iter(kinds))
    elif kinds == {"wrong-gradient"} and not any(r["condition"] for r in verdict):
        entry["class"] = "backward"
    else:
        conditions = {r["condition"] for r in verdict}
        if len(conditions) != 1 or None in conditions:
            raise TableError(f"{op}: verdicts {sorted(kinds)} differ but the probes name conditions {conditions}")
        if kinds & {"silent-cut", "no-gradient"}:
            raise TableError(f"{op}: a conditional op with verdicts {sorted(kinds)}")
        entry["class"] = "conditional"
        entry["condition"] = conditions.pop()
    wrong = [r for r in verdict if r["verdict"] == "wrong-gradient"]
    wrong += [r for r in caveats if r["verdict"] == "wrong-gradient" and note.get("wrong_gradient")]
    if note.get("wrong_gradient") and not wrong:
        raise TableError(f"{op}: the notes scope a wrong gradient ({note['wrong_gradient']}) that no probe measures")
    if wrong and (note.get("wrong_gradient") or entry["class"] != "conditional"):
        # a conditional op's wrong cases are told apart per node by its condition (Outcome.wrong)
        entry["wrong_gradient"] = note.get("wrong_gradient", "always")
    warnings = [note["warning"]] if note.get("warning") else []
    for r in caveats:
        if r["verdict"] != "backward":
            warnings.append(f"measured: {r['probe']}: {r['verdict']} ({r['evidence']})")
    if warnings:
        entry["warning"] = "; ".join(warnings)
    kinks = [f"measured: {r['probe']}: {r['verdict']} ({r['evidence']})" for r in records
             if r["role"] == "note" and r["verdict"] != "backward"]
    if kinks:
        entry["note"] = "; ".join(([entry["note"]] if entry.get("note") else []) + kinks)
    entry["measured"] = [{k: r[k] for k in ("probe", "role", "verdict", "evidence")}
                         | ({"case": r["case"]} if r.get("case") else {}) for r in records]
    return entry


def pinned_version() -> str:
    """The candle release the committed candle_ops.json was measured at."""
    return json.loads(TABLE.read_text(encoding="utf-8"))["candle"]["version"]


def versioned_path(version: str) -> Path:
    """Where the table of candle ``version`` (not the pinned one) is written."""
    return TABLE.with_name(f"candle_ops-{version}.json")


def candle_commit(sources: dict[str, Path]) -> str:
    """The git commit the candle-core crate was published from (its ``.cargo_vcs_info.json``)."""
    for label, src in sources.items():
        if label.startswith("candle-core "):
            info = src.parent / ".cargo_vcs_info.json"
            if info.exists():
                return json.loads(info.read_text(encoding="utf-8"))["git"]["sha1"]
    return "unknown"


def generate(measurements: dict, notes: dict, sources: dict[str, Path], lenient: bool = False) -> dict:
    """The op table for these measurements and notes (``lenient``: another release than the one
    the notes describe, whose contradictions are recorded per op instead of raised)."""
    if measurements.get("format") != "candle-port-op-measurements" or measurements.get("version") != 1:
        raise TableError("not a candle-port-op-measurements v1 file")
    by_op: dict[str, list[dict]] = {}
    for r in measurements["records"]:
        if r["verdict"] not in VERDICTS:
            raise TableError(f"{r['op']}: unknown verdict {r['verdict']!r}")
        by_op.setdefault(r["op"], []).append(r)
    unknown = sorted(set(by_op) - set(notes["ops"]))
    if unknown:
        raise TableError(f"measured ops without notes: {unknown}")
    contradicted: dict[str, str] = {}
    for op, note in notes["ops"].items():
        for case in note.get("absent_cases", []):
            missing, evidence = absence(case["absent"], sources)
            if not missing:
                message = f"{op}: a case noted as absent from candle, but {evidence}: write a probe"
                if not lenient:
                    raise TableError(message)
                contradicted[op] = message
                continue
            by_op.setdefault(op, []).append({"op": op, "probe": "source", "role": "verdict", "verdict": "no-op",
                                             "condition": case["condition"], "case": case["case"],
                                             "evidence": evidence})
    ops = {}
    for op, note in sorted(notes["ops"].items()):
        try:
            if op in contradicted:
                raise TableError(contradicted[op])
            ops[op] = _one(op, note, by_op, sources)
        except TableError as err:
            if not lenient:
                raise
            ops[op] = {k: note[k] for k in ("ref", "note") if note.get(k)} | {
                "class": "not-in-table",
                "warning": f"this release's measurements contradict the notes (written for candle "
                           f"{pinned_version()}): {err}",
                "measured": [{k: r[k] for k in ("probe", "role", "verdict", "evidence")}
                             for r in by_op.get(op, [])]}
    version = measurements["candle"]
    locked = [label.split()[1] for label in sources if label.startswith("candle-core ")]
    if lenient and locked != [version]:
        raise TableError(f"the measurements say candle {version}, the workspace locks candle-core {locked}")
    return {
        "candle": {"repo": notes["candle"]["repo"],
                   "commit": candle_commit(sources) if lenient else notes["candle"]["commit"],
                   "version": version,
                   "source": f"generated by scripts/gen_optable.py from candle-port-run --measure-ops "
                             f"(crates/candle-port-run/src/measure.rs) at candle {version}, "
                             "and scripts/optable_notes.json"},
        "classes": CLASSES,
        "ops": ops,
    }


def _one(op: str, note: dict, by_op: dict[str, list[dict]], sources: dict[str, Path]) -> dict:
    """One op's entry: from its probes, or from its absence in candle's source."""
    if op in by_op:
        return _entry(op, by_op[op], note)
    if not note.get("absent"):
        raise TableError(f"{op}: neither a probe nor an absence check")
    missing, evidence = absence(note["absent"], sources)
    if not missing:
        raise TableError(f"{op}: noted as absent from candle, but {evidence}: write a probe")
    return {k: note[k] for k in ("ref", "note") if note.get(k)} | {
        "class": "no-op", "measured": [{"probe": "source", "role": "verdict", "verdict": "no-op",
                                        "evidence": evidence}]}


def unbuilt(version: str, pinned: dict, log: str, sources: dict[str, Path]) -> dict:
    """The table of a release whose probes did not compile: every op of the pinned table, as
    ``not-in-table``, with cargo's first error as the evidence."""
    errors = [line.strip() for line in log.splitlines() if line.startswith("error")]
    first = errors[0] if errors else "cargo build failed (no error line in its log)"
    where = next((line.strip() for line in log.splitlines() if line.strip().startswith("-->")), "")
    evidence = f"the probes do not build against candle {version}: {first}" + (f" ({where})" if where else "")
    ops = {op: {k: entry[k] for k in ("ref", "note") if entry.get(k)}
           | {"class": "not-in-table", "warning": evidence,
              "measured": [{"probe": "build", "role": "verdict", "verdict": "no-op", "evidence": evidence}]}
           for op, entry in pinned["ops"].items()}
    return {
        "candle": {"repo": pinned["candle"]["repo"], "commit": candle_commit(sources), "version": version,
                   "source": f"written by scripts/gen_optable.py: candle-port-run's probes (crates/candle-port-run/"
                             f"src/measure.rs) do not build against candle {version}, so nothing is measured"},
        "classes": CLASSES,
        "ops": ops,
    }


def render(table: dict) -> str:
    return json.dumps(table, indent=1, ensure_ascii=False) + "\n"


def release_tables() -> dict[str, dict]:
    """Every committed table by candle release, oldest first: candle_ops.json and candle_ops-*.json."""
    tables = [json.loads(path.read_text(encoding="utf-8"))
              for path in [TABLE, *TABLE.parent.glob("candle_ops-*.json")]]
    key = lambda t: tuple(int(part) for part in t["candle"]["version"].split("."))  # noqa: E731
    return {t["candle"]["version"]: t for t in sorted(tables, key=key)}


def _cell(entry: dict | None) -> str:
    """One op at one release, briefly: its class and the verdicts its probes measured."""
    if entry is None:
        return "not measured"
    verdicts = [m["verdict"] for m in entry["measured"] if m["role"] == "verdict"]
    text = entry["class"]
    if entry["class"] == "conditional":
        text += f" ({sum(v == 'backward' for v in verdicts)} of {len(verdicts)} cases train)"
    if entry.get("wrong_gradient"):
        text += ", wrong gradient"
    caveats = sum(1 for m in entry["measured"] if m["role"] == "caveat" and m["verdict"] != "backward")
    if caveats:
        text += f", {caveats} caveat{'s' if caveats > 1 else ''}"
    return text


def releases_markdown(tables: dict[str, dict]) -> str:
    """The docs' table of what each release measures: one row per op that is not simply trained
    everywhere, a cell per release (bold where it differs from the pinned release), then the
    count of ops that train at every release and of ops candle lacks at every release."""
    versions = list(tables)
    pinned = pinned_version()
    ops = sorted(set().union(*(t["ops"] for t in tables.values())))
    header = "| op | " + " | ".join(f"{v}{' (pinned)' if v == pinned else ''}" for v in versions) + " |"
    lines = [header, "|---|" + "---|" * len(versions)]
    plain = absent = 0
    for op in ops:
        cells = [_cell(t["ops"].get(op)) for t in tables.values()]
        if all(c == "backward" for c in cells):
            plain += 1
            continue
        entries = [t["ops"].get(op) for t in tables.values()]
        if all(e and e["class"] == "no-op" and all(m["probe"] == "source" for m in e["measured"]) for e in entries):
            absent += 1
            continue
        base = _cell(tables[pinned]["ops"].get(op))
        lines.append(f"| `{op}` | " + " | ".join(c if c == base else f"**{c}**" for c in cells) + " |")
    lines.append(f"| {plain} other ops | " + " | ".join(["backward"] * len(versions)) + " |")
    lines.append(f"| {absent} ops candle has no function for | " + " | ".join(["no-op"] * len(versions)) + " |")
    return "\n".join(lines) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it, so a failure leaves the old table."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", type=Path, help="a built candle-port-run (default: find or build it)")
    parser.add_argument("--measurements", type=Path, help="records written by --measure-ops (default: run it)")
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed table differs")
    parser.add_argument("--versioned", action="store_true",
                        help="another candle release: write candle_ops-<version>.json, recording contradictions "
                             "of the notes per op")
    parser.add_argument("--workspace", type=Path, default=ROOT,
                        help="the Cargo workspace whose locked candle was measured (default: this one)")
    parser.add_argument("--build-log", type=Path,
                        help="with --versioned: the probes did not build; write the table that says so")
    parser.add_argument("--candle-version", help="with --build-log: the release that did not build")
    parser.add_argument("--releases-table", action="store_true",
                        help="print docs/candle-measured.md's table of the committed tables by release")
    args = parser.parse_args(argv)
    if args.releases_table:
        print(releases_markdown(release_tables()), end="")
        return 0
    if args.build_log:
        if not (args.versioned and args.candle_version):
            parser.error("--build-log needs --versioned and --candle-version")
        pinned = json.loads(TABLE.read_text(encoding="utf-8"))
        log = args.build_log.read_text(encoding="utf-8", errors="replace")
        try:
            sources = candle_sources(args.workspace)
        except (subprocess.CalledProcessError, TableError):
            sources = {}
        path = versioned_path(args.candle_version)
        write_atomic(path, render(unbuilt(args.candle_version, pinned, log, sources)))
        print(f"wrote {path.relative_to(ROOT)} (not built: every op not-in-table)")
        return 0
    if args.measurements:
        measurements = json.loads(args.measurements.read_text(encoding="utf-8"))
    else:
        sys.path.insert(0, str(ROOT / "src"))
        from candle_port.verify.candle_run import find_binary

        measurements = measure(args.binary or find_binary())
    table = generate(measurements, json.loads(NOTES.read_text(encoding="utf-8")), candle_sources(args.workspace),
                     lenient=args.versioned)
    text = render(table)
    path = versioned_path(table["candle"]["version"]) if args.versioned else TABLE
    if args.check:
        same = path.exists() and path.read_text(encoding="utf-8") == text
        print(f"{path.name} is up to date" if same else f"{path.name} differs from the measurements: "
              "run python scripts/gen_optable.py")
        return 0 if same else 1
    write_atomic(path, text)
    contradicted = sum(1 for e in table["ops"].values() if e["class"] == "not-in-table")
    print(f"wrote {path.relative_to(ROOT)} ({len(table['ops'])} ops"
          + (f", {contradicted} contradicting the notes" if contradicted else "") + ")")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except TableError as error:
        sys.exit(f"gen_optable.py: {error}")
