"""Suppression comments in Rust: `// port: ignore[CP201]` (as `# port: ignore[CP201]` in Python;
a bare `// port: ignore` silences every code) and the ruff/flake8 spelling `// noqa: CP201`. Read
from tree-sitter's comment nodes, so the same text in a string literal suppresses nothing."""

from __future__ import annotations

import re

from candle_port.pipeline.suppressions import ALL

_PORT = re.compile(r"port:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
_NOQA = re.compile(r"\bnoqa\b(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_QUERY = "[(line_comment) (block_comment)] @comment"
_compiled = None


def rust_suppressions(tree, text: str) -> dict[int, frozenset[str]]:
    """Line number -> codes suppressed there (ALL for a bare comment); every line a block comment
    spans counts."""
    lowered = text.lower()
    out: dict[int, frozenset[str]] = {}
    if "port:" not in lowered and "noqa" not in lowered:
        return out
    from tree_sitter import Query, QueryCursor

    from candle_port.rust.parser import language

    global _compiled
    if _compiled is None:
        _compiled = Query(language(), _QUERY)
    for node in QueryCursor(_compiled).captures(tree.root_node).get("comment", ()):
        comment = node.text.decode("utf-8", "replace")
        found: frozenset[str] = frozenset()
        for pattern in (_PORT, _NOQA):
            for match in pattern.finditer(comment):
                codes = match.group("codes")
                if codes is None or not codes.strip():
                    found |= ALL
                else:
                    found |= frozenset(c.strip().upper() for c in re.split(r"[,\s]+", codes) if c.strip())
        if found:
            for line in range(node.start_point[0] + 1, node.end_point[0] + 2):
                out[line] = out.get(line, frozenset()) | found
    return out
