"""Corpus text printed to a terminal cannot act on it."""

from cgr.terminal import terminal_safe


def test_escape_sequences_and_bidi_controls_are_shown_not_acted_on():
    assert terminal_safe("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert terminal_safe("\x1b]0;pwned\x07title") == "\\x1b]0;pwned\\x07title"
    assert terminal_safe("left\u202eright") == "left\\u202eright"
    assert terminal_safe("zero\u200bwidth\u2066") == "zero\\u200bwidth\\u2066"
    assert terminal_safe("cr\rlf\n") == "cr\\x0dlf\\x0a"
    assert terminal_safe("\x9b31m") == "\\x9b31m"  # the 8-bit CSI


def test_plain_text_and_letters_are_kept():
    for text in ("a thermometer measures temperature", "naïve café", "中文 Ελληνικά\tx"):
        assert terminal_safe(text) == text
    assert terminal_safe("one\ntwo\x1b", newlines=True) == "one\ntwo\\x1b"


def test_explain_lines_are_escaped():
    """The printed lines of `cgr explain` pass through terminal_safe (the command's code)."""
    import inspect

    from cgr.serving import explain

    assert "terminal_safe(line)" in inspect.getsource(explain.main)
