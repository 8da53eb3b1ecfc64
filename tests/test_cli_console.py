"""cli/console.py: piped output is what rich prints, without importing rich (port-check's start)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from rich.markup import escape as rich_escape
from rich.markup import render

from candle_port.cli.console import PlainConsole, console_for, escape, strip_markup

TEXTS = [
    "plain",
    "a[b]",
    "x[bold]y",
    "\\",
    "a\\",
    "a\\\\",
    "[/x]",
    "\\[fix: a]",
    "p\\[1]",
    "[bold red]error[/bold red]: file [x] \\[y]",
    "weird [#abc] [@click] [a=b]",
    "C:\\dir\\[tmp]",
    "back\\\\[bold]slash",
    "models/[id]/net.py: syntax error",
]


@pytest.mark.parametrize("text", TEXTS)
def test_escape_is_riches(text: str):
    assert escape(text) == rich_escape(text)


@pytest.mark.parametrize("text", TEXTS)
def test_stripped_markup_is_what_rich_prints(text: str):
    for markup in (escape(text), f"[bold red]error[/bold red]: {escape(text)} [dim]\\[fix: {escape(text)}][/dim]"):
        assert strip_markup(markup) == render(markup, emoji=False).plain


def test_a_pipe_gets_the_plain_console(capsys):
    console = console_for(stderr=True)
    assert isinstance(console, PlainConsole)
    console.print(f"[yellow]warning[/yellow]: no Python files found under {escape('[x]')}", soft_wrap=True)
    console.print("[literal]", markup=False)
    assert capsys.readouterr().err == "warning: no Python files found under [x]\n[literal]\n"


def test_forced_colour_gets_rich(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert not isinstance(console_for(stderr=False), PlainConsole)


def test_piped_port_check_never_imports_rich(tmp_path: Path):
    (tmp_path / "m.py").write_text("import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n")
    code = (
        "import sys\n"
        "from candle_port.cli.entry import port_check_entry\n"
        f"sys.argv = ['port-check', '--no-cache', {str(tmp_path / 'm.py')!r}, {str(tmp_path / 'gone.py')!r}]\n"
        "try:\n"
        "    port_check_entry()\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 3, exit.code\n"
        "assert 'rich' not in sys.modules, 'port-check imported rich'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "m.py:2:5: CP101" in done.stdout
    assert "error: " in done.stderr and "gone.py" in done.stderr
    assert "found 1 finding" in done.stderr
