"""Settings of the generating modes are refused before any file is read or model loads: a
negative --limit (it would drop questions from the end), a generator batch of 0."""

import pytest

from cgr.cli import main


@pytest.mark.parametrize("command", ["ircot", "riches", "longdoc"])
def test_negative_limit_is_refused(command, tmp_path, capsys):
    missing = tmp_path / "not-there.json"  # refused before the data file is even looked at
    assert (
        main([command, "--data", str(missing), "--out", str(tmp_path / "o"), "--limit", "-1"]) == 2
    )
    assert capsys.readouterr().err.strip() == "error: --limit must be a number >= 0, not -1"
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--generator.batch_size=0", "generator.batch_size must be a number >= 1, not 0"),
        ("--demos.token_budget=0", "demos.token_budget must be a number >= 1, not 0"),
    ],
)
def test_ircot_generator_and_demo_settings_are_checked(flag, message, tmp_path, capsys):
    args = ["ircot", "--data", str(tmp_path / "none.json"), "--out", str(tmp_path / "o"), flag]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == f"error: {message}"


def test_amr_smatch_refuses_a_negative_limit(tmp_path, capsys):
    assert main(["amr", "smatch", "--gold", str(tmp_path / "g.txt"), "--limit", "-2"]) == 2
    assert "--limit must be a number >= 0, not -2" in capsys.readouterr().err
