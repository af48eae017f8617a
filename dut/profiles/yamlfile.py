"""Reading a strict YAML config file so that errors can name the line of a key.

Used by every loader whose errors say ``<file>: <key> (line N): ...`` (controller configs,
trace specs). Raises the caller's error class, so each system keeps its own exception type.
"""
from __future__ import annotations

from pathlib import Path

import yaml


def load_with_key_lines(path: str | Path, error_cls: type[Exception]) -> tuple[object, dict]:
    """``(data, lines)``: the parsed document and, for a top-level mapping, the 1-based line of
    each top-level key. A file that cannot be read or is not YAML raises ``error_cls`` naming
    the file."""
    try:
        text = Path(path).read_text()
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except OSError as e:
        raise error_cls(f"{path}: cannot read: {e}") from e
    except yaml.YAMLError as e:
        raise error_cls(f"{path}: not valid YAML: {e}") from e
    lines = {}
    if isinstance(node, yaml.MappingNode):
        lines = {str(k.value): k.start_mark.line + 1 for k, _ in node.value}
    return data, lines
