"""port-check's command line (cli/check_args.py): argparse, no typer at start, one parser for
`port-check` and `candle-port check`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import modules_loaded_by, run_tool

BILINEAR = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n"
NEAREST_FRACTION = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=1.5)\n"


def port_check(*args: str) -> subprocess.CompletedProcess:
    """The `port-check` console script's entry point, in a fresh interpreter."""
    code = f"import sys; from candle_port.cli.entry import port_check_entry; sys.argv = ['port-check', *{list(args)!r}]; port_check_entry()"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text(BILINEAR)
    (tmp_path / "b.py").write_text(NEAREST_FRACTION)
    return tmp_path


def test_port_check_starts_without_typer_click_or_rich(tree: Path):
    argv = ["port-check", "--no-cache", str(tree / "a.py")]
    assert modules_loaded_by("port_check_entry", argv, ("typer", "click", "rich"), exit_code=1)[0] == []


def test_port_check_forks_its_workers_without_a_process_pool(tree: Path):
    """No concurrent.futures or multiprocessing (about 30 ms of imports; forked.py does the work),
    no tempfile without a cache, no TOML parser where no pyproject.toml names candle-port."""
    (tree / "pyproject.toml").write_text('[project]\nname = "user-project"\n')
    heavy = ("concurrent.futures", "multiprocessing", "tempfile", "tomllib")
    assert modules_loaded_by("port_check_entry", ["port-check", "--no-cache", str(tree)], heavy, exit_code=1, cwd=tree)[0] == []


def test_port_check_starts_without_dataclasses_typing_or_openssl(tree: Path):
    """What a run on a small package paid for at start (about 30 ms of a 100 ms run, where ruff
    takes 15): dataclasses (and the inspect it imports), typing, hashlib (OpenSSL), pkgutil,
    shutil, tokenize (no coding cookie here, no `# port: ignore`) and threading (no deep retry)."""
    heavy = ("dataclasses", "inspect", "typing", "hashlib", "_hashlib", "pkgutil", "shutil", "tokenize", "threading")
    assert modules_loaded_by("port_check_entry", ["port-check", "--no-cache", str(tree)], heavy, exit_code=1, cwd=tree)[0] == []


def test_port_check_on_clean_files_starts_no_worker_and_no_analysis(tmp_path: Path):
    """A pre-commit run on files that name no API: read and screened in the main process, no
    worker forked, the analysis never imported (17 ms of a 60 ms run), nor what only a worker
    needs (ctypes for its parent-death signal, pickle for its results), nor json without a cache."""
    (tmp_path / "clean.py").write_text("import os\nprint(os.sep)\n")
    (tmp_path / "notes.py").write_text("# F.interpolate(x, mode='bilinear') in a comment only\n")
    analysis = ("candle_port.pipeline.forked", "candle_port.analysis.sites", "candle_port.pipeline.checker", "ctypes", "pickle", "json")
    loaded, done = modules_loaded_by("port_check_entry", ["port-check", "--no-cache", str(tmp_path)], analysis, exit_code=0)
    assert loaded == [] and "Checked 2 files" in done.stderr


def test_options_and_paths_mix(tree: Path):
    done = port_check(str(tree / "a.py"), "--select", "CP103", str(tree / "b.py"), "--no-cache")
    assert done.returncode == 1, done.stderr
    assert "b.py:2:5: CP103" in done.stdout and "CP101" not in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--output-format", "xml"], "invalid choice: 'xml'"),
        (["-j", "0"], "0 is below 1"),
        (["--jobs", "two"], "'two' is not a whole number"),
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    ],
)
def test_usage_errors_exit_2_with_one_line(tree: Path, args, message):
    done = port_check(*args, str(tree / "a.py"))
    assert done.returncode == 2 and not done.stdout
    assert message in done.stderr.splitlines()[-1]


def test_output_format_is_case_insensitive(tree: Path):
    done = port_check("--output-format", "JSON", "--no-cache", str(tree / "a.py"))
    assert done.returncode == 1 and done.stdout.lstrip().startswith(("[", "{"))


def test_version():
    from candle_port import __version__

    done = port_check("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"candle-port {__version__}"


def test_both_spellings_share_one_parser(tree: Path):
    own = port_check("--help")
    via_app = run_tool("--help")
    assert own.returncode == 0 and via_app.returncode == 0
    assert own.stdout.replace("port-check", "PROG").split() == via_app.stdout.decode().replace("candle-port check", "PROG").split()
    for flag in ("--select", "--ignore", "--config", "--output-format", "--statistics", "--exit-zero", "--stdin-filename",
                 "--no-cache", "--cache-dir", "--jobs", "--quiet", "--version"):
        assert flag in own.stdout
    done = run_tool(str(tree / "b.py"), "--select", "CP103", "--no-cache", str(tree / "a.py"))
    assert done.returncode == 1 and b"CP103" in done.stdout and b"CP101" not in done.stdout


def test_port_fix_shares_the_option_help():
    from candle_port.cli import common
    from candle_port.cli.check_args import parser
    from candle_port.cli.settings import HELP

    check_help = {a.dest: a.help for a in parser("port-check")._actions}
    assert check_help["select"] == HELP["select"] and check_help["jobs"] == HELP["jobs"]
    select = common.Select.__metadata__[0]
    assert select.help == HELP["select"]
