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


def candle_sources() -> dict[str, Path]:
    """``src`` of the candle-core and candle-nn this workspace locks."""
    meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--locked"], cwd=ROOT,
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


def generate(measurements: dict, notes: dict, sources: dict[str, Path]) -> dict:
    """The op table for these measurements and notes."""
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
    for op, note in notes["ops"].items():
        for case in note.get("absent_cases", []):
            missing, evidence = absence(case["absent"], sources)
            if not missing:
                raise TableError(f"{op}: a case noted as absent from candle, but {evidence}: write a probe")
            by_op.setdefault(op, []).append({"op": op, "probe": "source", "role": "verdict", "verdict": "no-op",
                                             "condition": case["condition"], "case": case["case"],
                                             "evidence": evidence})
    ops = {}
    for op, note in sorted(notes["ops"].items()):
        if op in by_op:
            ops[op] = _entry(op, by_op[op], note)
        elif note.get("absent"):
            missing, evidence = absence(note["absent"], sources)
            if not missing:
                raise TableError(f"{op}: noted as absent from candle, but {evidence}: write a probe")
            ops[op] = {k: note[k] for k in ("ref", "note") if note.get(k)} | {
                "class": "no-op", "measured": [{"probe": "source", "role": "verdict", "verdict": "no-op",
                                                "evidence": evidence}]}
        else:
            raise TableError(f"{op}: neither a probe nor an absence check")
    version = measurements["candle"]
    return {
        "candle": {"repo": notes["candle"]["repo"], "commit": notes["candle"]["commit"], "version": version,
                   "source": f"generated by scripts/gen_optable.py from candle-port-run --measure-ops "
                             f"(crates/candle-port-run/src/measure.rs) at candle {version}, "
                             "and scripts/optable_notes.json"},
        "classes": CLASSES,
        "ops": ops,
    }


def render(table: dict) -> str:
    return json.dumps(table, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", type=Path, help="a built candle-port-run (default: find or build it)")
    parser.add_argument("--measurements", type=Path, help="records written by --measure-ops (default: run it)")
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed table differs")
    args = parser.parse_args(argv)
    if args.measurements:
        measurements = json.loads(args.measurements.read_text(encoding="utf-8"))
    else:
        sys.path.insert(0, str(ROOT / "src"))
        from candle_port.verify.candle_run import find_binary

        measurements = measure(args.binary or find_binary())
    text = render(generate(measurements, json.loads(NOTES.read_text(encoding="utf-8")), candle_sources()))
    if args.check:
        same = TABLE.read_text(encoding="utf-8") == text
        print("candle_ops.json is up to date" if same else "candle_ops.json differs from the measurements: "
              "run python scripts/gen_optable.py")
        return 0 if same else 1
    TABLE.write_text(text, encoding="utf-8")
    print(f"wrote {TABLE.relative_to(ROOT)} ({len(json.loads(text)['ops'])} ops)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
