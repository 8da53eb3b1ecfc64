"""Rename rules between torch's state_dict names and a port's own names, the same rules the
crate candle-port-parity applies (src/renames.rs): ``TORCH=PORT`` patterns of literal text and
``{name}`` placeholders, each matching part of one dotted segment; a rule applies to a name that
starts with its pattern, the rest is kept, and the first rule that applies wins."""

from __future__ import annotations

import re
from collections import Counter

_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_]+)\}")


class RenameError(ValueError):
    """A rule that is not TORCH=PORT or has a malformed placeholder."""


def parse_rule(text: str) -> tuple[str, str]:
    torch_side, sep, port_side = text.partition("=")
    if not sep or not torch_side or not port_side:
        raise RenameError(f"--rename {text!r}: expected TORCH_PATTERN=PORT_PATTERN, e.g. 'encoder.layer.{{i}}.=blocks.{{i}}.'")
    for side in (torch_side, port_side):
        if side.count("{") != len(_PLACEHOLDER.findall(side)) or side.count("}") != side.count("{"):
            raise RenameError(f"--rename {text!r}: placeholders are {{name}}, e.g. {{i}}")
    return torch_side, port_side


def _compile(pattern: str) -> re.Pattern:
    parts, names, last = [], [], 0
    for m in _PLACEHOLDER.finditer(pattern):
        parts.append(re.escape(pattern[last:m.start()]))
        if m.group(1) in names:
            parts.append(f"(?P={m.group(1)})")
        else:
            names.append(m.group(1))
            parts.append(f"(?P<{m.group(1)}>[^.]+?)")
        last = m.end()
    parts.append(re.escape(pattern[last:]))
    return re.compile("".join(parts))


class Renames:
    def __init__(self, rules: list[tuple[str, str]]):
        self.rules = list(rules)
        self._compiled = [(torch_side, _compile(port_side)) for torch_side, port_side in self.rules]

    def to_torch(self, name: str) -> str:
        """The torch name of the port's `name` (itself when no rule applies)."""
        for torch_side, port in self._compiled:
            for end in range(len(name), 0, -1):  # a prefix match, longest first, as the Rust matcher
                m = port.fullmatch(name, 0, end)
                if m:
                    try:
                        return _PLACEHOLDER.sub(lambda p: m.group(p.group(1)), torch_side) + name[end:]
                    except (IndexError, re.error):
                        break
        return name


def _generalise(prefix: str) -> str:
    """Numbered segments as placeholders, {i} for the first, {j} for the second..."""
    names = iter("ijklmn")
    return ".".join("{%s}" % next(names, "n") if seg.isdigit() else seg for seg in prefix.split("."))


def _tokens(name: str) -> set[str]:
    return {t for seg in name.split(".") for t in seg.split("_") if t and not t.isdigit()}


def _pair(name: str, shape: tuple, torch_names: list[tuple[str, tuple]], taken: set[str]) -> str | None:
    """The torch name most like `name` among those of the same shape, the same numbered segments
    and the same last segment (weight, bias...), by the words they share."""
    numbers = [s for s in name.split(".") if s.isdigit()]
    last = name.rsplit(".", 1)[-1]
    best, best_score = None, -1
    for t_name, t_shape in torch_names:
        if t_name in taken or tuple(t_shape) != tuple(shape) or t_name.rsplit(".", 1)[-1] != last:
            continue
        if [s for s in t_name.split(".") if s.isdigit()] != numbers:
            continue
        score = len(_tokens(name) & _tokens(t_name))
        if score > best_score:
            best, best_score = t_name, score
    return best


def suggest(port_names: list[tuple[str, tuple]], torch_names: list[tuple[str, tuple]], limit: int = 12) -> list[str]:
    """Rules that would map the port's unmatched names onto torch's unloaded ones: each port name
    (name, shape) is paired with the torch name of its shape, numbers and last segment that
    shares the most words with it, and each pair's differing prefixes (the common dotted suffix
    removed, numbers as {i}, {j}...) are voted on; the most common rules come first."""
    votes: Counter = Counter()
    taken: set[str] = set()
    for name, shape in port_names:
        t_name = _pair(name, shape, torch_names, taken)
        if t_name is None:
            continue
        taken.add(t_name)
        p_parts, t_parts = name.split("."), t_name.split(".")
        common = 0
        while common < min(len(p_parts), len(t_parts)) - 1 and p_parts[-1 - common] == t_parts[-1 - common]:
            common += 1
        p_head = ".".join(p_parts[:len(p_parts) - common]) + ("." if common else "")
        t_head = ".".join(t_parts[:len(t_parts) - common]) + ("." if common else "")
        votes[(_generalise(t_head), _generalise(p_head))] += 1
    return [f"{t}={p}" for (t, p), n in votes.most_common(limit) if t != p]
