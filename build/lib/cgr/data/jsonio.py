"""json.loads for files and headers from others: JSON nested deeper than Python's recursion
limit raises RecursionError inside the json module; here it is a JSONDecodeError like any
other malformed JSON, so every caller's one-line refusal covers it."""

from __future__ import annotations

import json
from typing import Any


def loads(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", "", 0) from None
