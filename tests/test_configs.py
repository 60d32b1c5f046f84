"""Every shipped config parses with the CLI (an unknown key or a wrong type would fail here)."""

import pytest
import yaml

from cgr.cli import main
from tests.conftest import ROOT

# training configs; the IRCoT, RICHES and long-document modes have their own command lines
MODES = ("ircot", "riches", "d3")
CONFIGS = sorted(p.name for p in (ROOT / "configs").glob("*.yaml") if not p.name.startswith(MODES))


@pytest.mark.parametrize("name", CONFIGS)
def test_config_parses(name, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--config", str(ROOT / "configs" / name), "--print_config"])
    assert exit_info.value.code in (0, None)
    assert "class_path: cgr.training." in capsys.readouterr().out


def test_the_riches_config_parses_into_valid_settings():
    from cgr.riches.commands import RichesConfig, build_parser
    from cgr.riches.decode import DecodeConfig

    args = build_parser().parse_args(
        ["--config", str(ROOT / "configs" / "riches_hotpotqa.yaml"), "--data", "x", "--out", "y"]
    )
    riches, decode = RichesConfig(**vars(args.riches)), DecodeConfig(**vars(args.decode))
    assert (riches.key_kind, riches.index, decode.beam_size, decode.adaptive) == (
        "sentence",
        "fm",
        5,
        True,
    )


def test_the_longdoc_config_parses_into_valid_settings():
    from cgr.longdoc.commands import build_parser
    from cgr.longdoc.methods import LongDocConfig
    from cgr.longdoc.summaries import SummaryConfig

    args = build_parser().parse_args(
        ["--config", str(ROOT / "configs" / "d3_qasper.yaml"), "--data", "x", "--out", "y"]
    )
    cfg, summaries = LongDocConfig(**vars(args.longdoc)), SummaryConfig(**vars(args.summaries))
    assert (cfg.method, cfg.select, cfg.empty_selection, summaries.method) == (
        "d3", "generate", "none", "extractive")  # fmt: skip


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


def test_configs_compose_shared_groups():
    """The shipped configs name the shared groups (callbacks, logger, chains) instead of copying
    them; resolved, each carries the group's content."""
    from cgr.training.config import resolved_config

    for name in ("obqa.yaml", "obqa_cgr_cpu.yaml", "default.yaml"):
        raw = yaml.safe_load((ROOT / "configs" / name).read_text())
        assert raw["trainer"]["callbacks"] == "callbacks/default.yaml"
        assert raw["data"]["chains"] == "chains/default.yaml"
        config = resolved_config(ROOT / "configs" / name)
        kinds = [c["class_path"].rsplit(".", 1)[1] for c in config["trainer"]["callbacks"]]
        assert kinds == [
            "ModelCheckpoint",  # best.ckpt, weights only
            "ModelCheckpoint",  # last.ckpt after every validation
            "ModelCheckpoint",  # last.ckpt every 10 minutes
            "RNGStateCheckpoint",
            "ThroughputMonitor",
            "ProgressLog",  # a line a minute when no bar is drawn
        ]
        assert config["data"]["chains"]["max_facts"] == 3


def test_worldtree_chains_group_is_the_default_with_a_book():
    """ARC's chains group copies the default but for the book its best chains go through: a
    setting changed in one and not the other is caught here."""
    groups = ROOT / "configs" / "chains"
    default = yaml.safe_load((groups / "default.yaml").read_text())
    worldtree = yaml.safe_load((groups / "worldtree.yaml").read_text())
    assert default.pop("book") is None
    assert worldtree.pop("book") == ["corpus/worldtree_v2.1/worldtree_v2.1_facts.jsonl"]
    assert worldtree == default
    for name in ("arc_challenge.yaml", "arc_challenge_paper.yaml"):
        raw = yaml.safe_load((ROOT / "configs" / name).read_text())
        assert raw["data"]["chains"] == "chains/worldtree.yaml"


def test_run_name_fills_checkpoint_folder_and_logger_names():
    from jsonargparse import Namespace

    from cgr.training.settings import CHECKPOINT, name_run

    def config(name=None, dirpath=None):
        return Namespace(
            config=[ROOT / "configs" / "obqa.yaml"],
            name=name,
            trainer=Namespace(
                callbacks=[Namespace(class_path=CHECKPOINT, init_args=Namespace(dirpath=dirpath))],
                logger=[
                    Namespace(class_path="pytorch_lightning.loggers.CSVLogger",
                              init_args=Namespace(save_dir="logs", name="lightning_logs")),
                    Namespace(class_path="pytorch_lightning.loggers.WandbLogger",
                              init_args=Namespace(save_dir="logs", name=None)),
                ],
            ),
        )  # fmt: skip

    by_file = config()
    name_run(by_file)
    assert by_file.trainer.callbacks[0].init_args.dirpath == "checkpoints/obqa"
    assert [lg.init_args.name for lg in by_file.trainer.logger] == ["obqa", "obqa"]
    named = config(name="mine", dirpath="elsewhere")
    name_run(named)
    assert named.trainer.callbacks[0].init_args.dirpath == "elsewhere"  # set in the config: kept
    assert named.trainer.logger[0].init_args.name == "mine"
