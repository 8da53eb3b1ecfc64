"""Report formats for findings: text (default), json, sarif, github."""

from __future__ import annotations

import enum


class OutputFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"
    SARIF = "sarif"
    GITHUB = "github"
