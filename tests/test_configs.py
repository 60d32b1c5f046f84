"""Every shipped config parses with the CLI (an unknown key or a wrong type would fail here)."""

import pytest

from cgr.cli import main
from tests.conftest import ROOT

CONFIGS = sorted(
    p.name for p in (ROOT / "configs").glob("*.yaml") if not p.name.startswith("ircot")
)


@pytest.mark.parametrize("name", CONFIGS)
def test_config_parses(name, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--config", str(ROOT / "configs" / name), "--print_config"])
    assert exit_info.value.code in (0, None)
    assert "class_path: cgr.training." in capsys.readouterr().out


def test_paper_configs_carry_the_paper_hyperparameters():
    import yaml

    obqa = yaml.safe_load((ROOT / "configs" / "obqa_paper.yaml").read_text())
    arc = yaml.safe_load((ROOT / "configs" / "arc_challenge_paper.yaml").read_text())
    assert (
        obqa["model"]["init_args"]["lr"],
        obqa["data"]["batch_size"],
        obqa["model"]["init_args"]["max_length"],
    ) == (9e-6, 4, 256)
    assert (
        arc["model"]["init_args"]["lr"],
        arc["data"]["batch_size"],
        arc["model"]["init_args"]["max_length"],
    ) == (1e-5, 6, 384)
    assert (obqa["data"]["max_evidence"], arc["data"]["max_evidence"]) == (15, 20)
    for c in (obqa, arc):
        r = c["data"]["retrieval"]
        assert (r["beam_size"], r["steps"], c["model"]["init_args"]["chains_per_hypothesis"]) == (
            10,
            2,
            1,
        )
        assert c["model"]["init_args"]["retriever_model"] == r["encoder"]
    assert len(arc["data"]["train_file"]) == 3


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("ircot*.yaml")))
def test_ircot_config_parses(path):
    from cgr.ircot.commands import build_parser

    args = build_parser().parse_args(["--config", str(path), "--data", "d.jsonl", "--out", "out"])
    assert (
        args.method in {"ircot", "oner", "nor"}
        and args.loop.max_paragraphs == 15
        and args.loop.max_steps == 8
    )
