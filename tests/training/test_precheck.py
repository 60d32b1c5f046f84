"""The command-line check `cgr train` runs before torch loads gives the full parse's verdict:
the same refusals with the same messages, and no refusal where the full parse accepts."""

import pytest

from cgr.errors import CGRError
from cgr.training.precheck import init_parameters, precheck
from tests.conftest import ROOT

CONFIG = ["--config", str(ROOT / "configs" / "default.yaml")]


@pytest.mark.parametrize(
    "args",
    [
        ["--trainer.max_epoch=1"],
        ["--data.max_evid", "3"],
        ["--model.init_args.lrr=1"],
        ["--data.retrieval.method=bm2"],
        ["--data.retrieval.use_gpu=maybe"],
        ["--data.retrieval.steps=0"],
        ["--data.chains.max_facts=0"],
        ["--data.chains.enabled=maybe"],
        ["--data.batch_size=0"],
        ["--data.batch_size=x"],
        ["--data.train_file=nowhere/train.jsonl"],
        ["--data.retrieval.corpus=[nowhere/facts.txt]"],
        ["--name=a/b"],
    ],
)
def test_refuses_as_the_full_parse_does(args):
    from cgr.training.config import train_cli

    with pytest.raises(CGRError) as early:
        precheck([*CONFIG, *args])
    with pytest.raises(CGRError) as full:
        train_cli([*CONFIG, *args])  # refused in the parse or before_instantiate_classes
    if str(full.value).startswith("Problem with given class_path"):  # names no key: ours does
        assert str(early.value).startswith(f"unrecognized arguments: {args[0]}")
    else:
        assert str(early.value) == str(full.value)


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--trainer.max_epochs=1", "--data.batch_size", "2", "--name=quick"],
        [
            "--model.init_args.lr=1e-4",
            "--data.retrieval.method=bm25",
            "--data.chains.enabled=false",
        ],
        ["--trainer.callbacks+=pytorch_lightning.callbacks.LearningRateMonitor"],  # left to the CLI
        ["--print_config"],
    ],
)
def test_accepts_what_the_full_parse_accepts(args, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    precheck([*CONFIG, *args])


def test_reads_init_parameters_without_importing():
    import sys

    lightning_loaded = "pytorch_lightning" in sys.modules
    names = init_parameters("pytorch_lightning.trainer.trainer", "Trainer")
    assert {"max_epochs", "precision", "devices"} <= names
    assert ("pytorch_lightning" in sys.modules) == lightning_loaded
    assert "refresh_evidence_every_n_epochs" in init_parameters(
        "cgr.training.cgr_module", "CGRModule"
    )


def _bomb(path, depth: int = 9) -> None:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, depth + 1)]
    path.write_text("\n".join(lines) + "\ntrainer:\n  max_epochs: 1\n")


@pytest.mark.parametrize("command", ["train", "ircot", "riches", "longdoc", "encode"])
def test_config_bombs_are_refused_before_any_model_import(command, tmp_path):
    """A 1 KB alias bomb (9^10 values expanded) and a 50 MB config: one line each, exit 2,
    refused before torch is imported (the aliases are counted over the shared nodes, never
    expanded); the seconds it takes: benchmarks/bad_inputs.py."""
    import subprocess
    import sys

    _bomb(tmp_path / "bomb.yaml")
    (tmp_path / "big.yaml").write_text("trainer:\n  max_epochs: 1\n# " + "x" * 50_000_000 + "\n")
    probe = ("import sys; from cgr.cli import main; code = main(sys.argv[1:]); "
             "print(code, 'torch' in sys.modules)")  # fmt: skip
    for name, message in (("bomb.yaml", "aliases expand to more than 100,000 values"),
                          ("big.yaml", "50,000,028 bytes; a config file is at most 1,000,000")):  # fmt: skip
        done = subprocess.run([sys.executable, "-c", probe, command, "--config", str(tmp_path / name)],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)  # fmt: skip
        code, torch_imported = done.stdout.split()
        assert code == "2" and torch_imported == "False", done.stdout
        err = done.stderr.strip().splitlines()
        assert len(err) == 1 and message in err[0], err


def test_a_small_alias_tree_and_the_shipped_configs_pass(tmp_path):
    from cgr.config_files import check_config_file

    _bomb(tmp_path / "small.yaml", depth=3)  # 9^4 values: a config may use aliases
    check_config_file(tmp_path / "small.yaml")
    for path in (ROOT / "configs").rglob("*.yaml"):
        check_config_file(path)


def test_a_config_that_includes_itself_is_named(tmp_path):
    (tmp_path / "a.yaml").write_text("trainer:\n  callbacks: b.yaml\n")
    (tmp_path / "b.yaml").write_text("- a.yaml\n")
    with pytest.raises(
        CGRError,
        match=r"a.yaml: a config that includes itself \(.*a.yaml -> .*b.yaml -> .*a.yaml\)",
    ):
        precheck(["--config", str(tmp_path / "a.yaml")])
