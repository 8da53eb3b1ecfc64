"""records.Record: the value semantics port-check's plain classes kept from @dataclass(frozen=True)."""

from __future__ import annotations

import pickle

import pytest

from candle_port.analysis.apis import Api
from candle_port.config import Config
from candle_port.pipeline.findings import FileError, FileResult, Finding, Severity
from candle_port.rewriters.writeback import NotWritten


def _finding(**changes) -> Finding:
    values = dict(code="CP101", path="m.py", line=3, column=5, message="m", severity=Severity.ERROR, why="w")
    values.update(changes)
    return Finding(**values)


def test_equal_and_hashed_by_fields_of_the_same_type():
    assert _finding() == _finding() and hash(_finding()) == hash(_finding())
    assert _finding() != _finding(line=4) and len({_finding(), _finding(), _finding(line=4)}) == 2
    assert FileError("m.py", "bad") != NotWritten("m.py", "bad")  # same fields, another type
    assert _finding() != ("CP101", "m.py", 3, 5, "m", Severity.ERROR, "w", (), None, "", "")


def test_uncompared_fields_are_left_out_of_equality_and_hash():
    assert Config(root=None) == Config(source=None, root=pytest.__file__)  # type: ignore[arg-type]
    plain = Api("interpolate", ("input",), "nearest")
    implied = Api("interpolate", ("input",), "nearest", implied={"align_corners": True})
    assert plain == implied and hash(plain) == hash(implied)


def test_mutable_records_compare_by_fields_and_are_not_hashable():
    assert FileResult("m.py") == FileResult("m.py", findings=[]) != FileResult("m.py", parsed=True)
    with pytest.raises(TypeError):
        hash(FileResult("m.py"))


def test_replace_repr_as_dict_and_pickle():
    changed = _finding().replace(line=9, hint="h")
    assert (changed.line, changed.hint, changed.code) == (9, "h", "CP101")
    with pytest.raises(TypeError, match="no field colour"):
        _finding().replace(colour="red")
    assert repr(FileError("m.py", "bad")) == "FileError(path='m.py', reason='bad', line=None, column=None)"
    assert NotWritten("m.py", "kept").as_dict() == {"path": "m.py", "reason": "kept", "line": None, "column": None}
    result = FileResult("m.py", findings=[_finding()], refs=("a.b",))
    assert pickle.loads(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)) == result  # worker -> caller
    with pytest.raises(AttributeError):
        _finding().colour = "red"  # __slots__: no stray attribute
