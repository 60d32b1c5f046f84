"""`--help` lines for the settings dataclasses, from the comments that document their fields in
the source (the comment at the end of a field's line, else the comment block just above it),
so every `--group.field` option says what it does without a second copy of its description."""

from __future__ import annotations

import dataclasses
import inspect
import io
import re
import tokenize
from functools import cache

FIELD = re.compile(r"^\s+(\w+)\s*:")


@cache
def field_comments(cls: type) -> dict[str, str]:
    """field name -> its comment, joined into one line."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    comments: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string.lstrip("#").strip()
    lines = source.splitlines()
    names = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    found: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        match = FIELD.match(line)
        if not match or match.group(1) not in names or match.group(1) in found:
            continue
        text = comments.get(number, "") if "#" in line else ""
        if not text and line.rstrip().endswith("("):  # a default the formatter wrapped
            text = comments.get(number + 1, "")
        if not text:  # the block of whole-line comments right above
            block, above = [], number - 1
            while above >= 1 and lines[above - 1].strip().startswith("#"):
                block.insert(0, comments.get(above, ""))
                above -= 1
            text = " ".join(b for b in block if b)
        if text and not text.startswith("fmt:"):
            found[match.group(1)] = text.replace("%", "%%")  # argparse formats help with %
    return found


def describe(parser, prefix: str, cls: type) -> None:
    """Give each `--prefix.field` option of a jsonargparse parser its field's comment."""
    comments = field_comments(cls)
    for action in getattr(parser, "_actions", []):
        dest = getattr(action, "dest", "")
        if dest.startswith(prefix + ".") and not action.help:
            text = comments.get(dest[len(prefix) + 1 :])
            if text:
                action.help = text
