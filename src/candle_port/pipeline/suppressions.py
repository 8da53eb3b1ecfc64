"""`# port: ignore` and `# port: ignore[CP101, CP102]` comments, read from real comment tokens."""

from __future__ import annotations

import re

_PATTERN = re.compile(r"#\s*port:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)

ALL = frozenset({"*"})


def suppressions(text: str) -> dict[int, frozenset[str]]:
    """Line number -> codes suppressed there (ALL for a bare `# port: ignore`)."""
    out: dict[int, frozenset[str]] = {}
    if "port:" not in text.lower() or _PATTERN.search(text) is None:
        return out  # tokenizing is for telling comments from strings: only when one may be here
    import io
    import tokenize  # here, not at the top: most files have no such comment (1 ms of every start)

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return out
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        for match in _PATTERN.finditer(token.string):
            codes = match.group("codes")
            if codes is None:
                found = ALL
            else:
                found = frozenset(c.strip().upper() for c in codes.split(",") if c.strip())
            out[token.start[0]] = out.get(token.start[0], frozenset()) | found
    return out


def is_suppressed(code: str, lines: tuple[int, ...], table: dict[int, frozenset[str]]) -> bool:
    for line in lines:
        codes = table.get(line)
        if codes and ("*" in codes or code in codes):
            return True
    return False
