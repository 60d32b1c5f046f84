"""Text from corpora, questions and model folders printed to a terminal: control characters
(ESC sequences that clear the screen or set the window title, carriage returns) and the Unicode
format characters that reorder or hide text (U+202E and the other bidi controls, zero-width
characters) are shown as escapes instead of being acted on. The HTML page escapes its own."""

from __future__ import annotations

import re
import unicodedata

# C0 and C1 controls and DEL, except tab; the Cf (format) characters are added per character
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: str, newlines: bool = False) -> str:
    """`text` with every control and format character written as a visible escape (line breaks
    kept with `newlines`)."""
    if newlines:
        return "\n".join(terminal_safe(line) for line in text.split("\n"))
    text = _CONTROL.sub(lambda m: _escape(m.group()), text)
    if text.isascii():
        return text
    return "".join(_escape(c) if unicodedata.category(c) in ("Cf", "Zl", "Zp") else c for c in text)
