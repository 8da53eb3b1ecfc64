"""`candle-port rules`: the catalog, one rule explained, an unknown code."""

from __future__ import annotations

from candle_port.cli.progress import progress_factory, wants_progress
from candle_port.rules import all_rules, rule_codes
from tests.conftest import run_tool


def test_rules_lists_every_rule():
    out = run_tool(tool="rules").stdout.decode()
    for rule in all_rules():
        assert f"{rule.code} {rule.name} ({rule.default_severity.value})" in out
        assert f"why: {rule.why}"[:60] in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("CP")}
    assert lines["CP101"].endswith("[fix: runtime, nearest, convtranspose]")
    assert lines["CP106"].endswith("[fix: runtime]") and lines["CP109"].endswith("[fix: runtime]")
    # grid_sample, transposed and 3-D convolutions: runtime drop-ins since issue 13.
    assert lines["CP105"].endswith("[fix: runtime]") and lines["CP110"].endswith("[fix: runtime]")


def test_rule_codes_from_module_names_are_the_rules_codes():
    """port-check validates --select/--ignore against the codes in the rule modules' names (no rule
    imported); each module must be named after the code of the one rule it holds."""
    assert rule_codes() == tuple(rule.code for rule in all_rules())
    assert len(set(rule_codes())) == len(rule_codes()) >= 10


def test_rules_explains_one_with_why_source_and_examples():
    done = run_tool("cp101", tool="rules")
    out = done.stdout.decode()
    assert done.returncode == 0
    assert "CP101 bilinear-upsampling" in out and "backprop.rs:411-413" in out
    assert "mode='bilinear'" in out and "Not reported" in out
    assert "port-fix: --strategy runtime, --strategy nearest, --strategy convtranspose" in out


def test_unknown_rule_is_a_usage_error():
    done = run_tool("CP999", tool="rules")
    assert done.returncode == 2 and "unknown rule code" in done.stderr.decode()


class _Pipe:
    def isatty(self):
        return False


class _Tty:
    def isatty(self):
        return True


def test_progress_only_on_a_terminal_outside_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert wants_progress(_Tty()) and not wants_progress(_Pipe())
    monkeypatch.setenv("CI", "true")
    assert not wants_progress(_Tty())
    assert progress_factory("Checking") is None  # stderr of pytest is not a terminal, and CI is set


def test_rule_texts_cite_only_pages_a_user_has():
    """What `rules`, SARIF and the rule pages show cites the project's docs, never a file outside
    it (`../shared/candle-ops.md` was cited by eleven rules), and each cited page exists."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for rule in all_rules():
        text = " ".join((rule.summary, rule.why, rule.source, rule.fix_hint, rule.severity_note))
        assert "../" not in text, rule.code
        for page in re.findall(r"docs/[\w/.-]+\.md", text):
            assert (root / page).is_file(), (rule.code, page)
        assert "docs/" in rule.source or "crates/" in rule.source, rule.code
