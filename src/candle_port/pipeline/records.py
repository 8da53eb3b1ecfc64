"""Value semantics for the plain `__slots__` classes on port-check's start path.

port-check's records (findings, config, sites, scopes, index entries) were dataclasses. Creating
25 dataclasses cost about 17 ms of CPU at import, and importing `dataclasses` (which imports
`inspect`) about 8 ms more: a quarter of a whole run on a small package, where ruff takes 15 ms.
A record lists its fields in `__slots__` and writes its `__init__`; this base gives it what
`@dataclass(frozen=True)` gave: equality and hash over the fields, a readable repr, `replace`.
Fields a record does not compare are named in `_uncompared`. Nothing stops an assignment: a
record is frozen by convention (none of the code assigns to one), not by a check on every set.
"""

from __future__ import annotations


class Record:
    """Equality (same type, same compared fields), hash, repr and `replace` from `__slots__`."""

    __slots__ = ()
    _uncompared: frozenset[str] = frozenset()

    @classmethod
    def _fields(cls) -> tuple[str, ...]:
        fields = cls.__dict__.get("_field_names")
        if fields is None:  # every field along the class's bases, base first, once per class
            fields = tuple(name for klass in reversed(cls.__mro__) for name in klass.__dict__.get("__slots__", ()))
            cls._field_names = fields
        return fields

    def _key(self) -> tuple:
        return tuple(getattr(self, name) for name in self._fields() if name not in self._uncompared)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields())
        return f"{type(self).__name__}({fields})"

    def replace(self, **changes):
        """A copy with `changes` (what `dataclasses.replace` did); every field is an `__init__`
        parameter of the same name."""
        values = {name: getattr(self, name) for name in self._fields()}
        unknown = set(changes) - set(values)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(sorted(unknown))}")
        values.update(changes)
        return type(self)(**values)

    def as_dict(self) -> dict:
        """The fields by name (not recursive)."""
        return {name: getattr(self, name) for name in self._fields()}


class MutableRecord(Record):
    """A record whose fields change after it is made (a file's result while passes run): equal by
    its fields, like a mutable dataclass, and so not hashable."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]
