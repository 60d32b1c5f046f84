"""Config values are refused when read, with the setting's name, before any model loads."""

import pytest

from cgr.chains.builder import ChainConfig
from cgr.errors import ConfigError
from cgr.evidence.pipeline import EvidencePipeline
from cgr.evidence.selection import EvidenceConfig
from cgr.files import require_writable_dir, require_writable_file
from cgr.generation.config import GeneratorConfig
from cgr.ircot.commands import DemoConfig
from cgr.ircot.loop import LoopConfig
from cgr.retrieval.factory import RetrievalConfig


@pytest.mark.parametrize("make, message", [
    (lambda: RetrievalConfig(method="bm2"), "data.retrieval.method must be one of"),
    (lambda: RetrievalConfig(beam_size=-1), "data.retrieval.beam_size must be a number >= 1, not -1"),
    (lambda: RetrievalConfig(steps=0), "data.retrieval.steps must be a number >= 1, not 0"),
    (lambda: RetrievalConfig(steps=10**6), "data.retrieval.steps must be <= 8, not 1000000"),
    (lambda: RetrievalConfig(beam_size=10**5), "data.retrieval.beam_size must be <= 1000"),
    (lambda: RetrievalConfig(use_gpu="maybe"), "data.retrieval.use_gpu must be one of"),
    (lambda: RetrievalConfig(index="ivf2"), "data.retrieval.index must be one of"),
    (lambda: RetrievalConfig(method="dense", corpus=[]), "data.retrieval.corpus is empty"),
    (lambda: RetrievalConfig(index="ivfpq", index_rerank=-5), "data.retrieval.index_rerank must be a number >= 0"),
    (lambda: RetrievalConfig(index="hnsw", index_ef_search=0), "data.retrieval.index_ef_search must be a number >= 1"),
    (lambda: ChainConfig(max_chains=0), "data.chains.max_chains must be a number >= 1"),
    (lambda: ChainConfig(time_budget_s=0), "data.chains.time_budget_s must be > 0"),
    (lambda: ChainConfig(time_budget_s=float("nan")), "data.chains.time_budget_s must be > 0, not nan"),
    (lambda: ChainConfig(max_link_share=float("inf")), "data.chains.max_link_share must be > 0, not inf"),
    (lambda: ChainConfig(chain_order="shortest"), "data.chains.chain_order must be one of length, relevance, open_book"),
    (lambda: ChainConfig(book="worldtree.jsonl"), "data.chains.book must be a list of files or null"),
    (lambda: EvidenceConfig(order="random"), "data.evidence.order must be one of"),
    (lambda: EvidenceConfig(open_book_first=-2), "data.evidence.open_book_first must be a whole number >= 0"),
    (lambda: EvidencePipeline(RetrievalConfig(method="dense", open_book=None), evidence=EvidenceConfig(open_book_first=5)),
     "data.evidence.open_book_first needs data.retrieval.open_book"),
    (lambda: LoopConfig(reader="cott"), "loop.reader must be one of 'cot', 'direct', not 'cott'"),
    (lambda: LoopConfig(k=0), "loop.k must be a number >= 1"),
    (lambda: GeneratorConfig(dtype="float33"), "generator.dtype must be one of"),
    (lambda: GeneratorConfig(quantize="int4"), "generator.quantize must be one of"),
    (lambda: GeneratorConfig(quantize="int8", backend="llamacpp"), "generator.quantize int8 is for the transformers"),
    (lambda: DemoConfig(distractors=-1), "demos.distractors must be a number >= 0"),
])  # fmt: skip
def test_bad_values_are_named(make, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        make()


def test_good_values_pass():
    assert RetrievalConfig(use_gpu=True).use_gpu is True
    assert RetrievalConfig(method="none", corpus=[]).method == "none"


def test_output_paths_are_checked_before_work(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match=r"--out .*file/p.jsonl: cannot write there"):
        require_writable_file(blocker / "p.jsonl", "--out")
    with pytest.raises(ConfigError, match="is a folder"):
        require_writable_file(tmp_path, "--out")
    with pytest.raises(ConfigError, match="--export-dir"):
        require_writable_dir(blocker / "x", "--export-dir")
    # a writable new folder passes, and the folders made to prove it are gone again
    assert require_writable_dir(tmp_path / "new" / "dir", "--out") == tmp_path / "new" / "dir"
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("override, message", [
    ("--data.retrieval.method=bm2", "error: data.retrieval.method must be one of 'none', 'bm25', 'tfidf', 'dense', 'beam', 'gold', not 'bm2'"),
    ("--data.retrieval.use_gpu=maybe", "error: data.retrieval.use_gpu must be one of 'auto', 'true', 'false', not 'maybe'"),
    ("--data.retrieval.steps=0", "error: data.retrieval.steps must be a number >= 1, not 0"),
    ("--data.batch_size=x", "error: data.batch_size must be int, not 'x'"),
    ("--trainer.max_epoch=1", "error: unrecognized arguments: --trainer.max_epoch=1"),
    ("--data.max_evid=3", "error: unrecognized arguments: --data.max_evid=3"),
])  # fmt: skip
def test_cgr_train_refuses_a_bad_setting_in_one_line(override, message, capsys):
    from cgr.cli import main
    from tests.conftest import ROOT

    assert main(["train", "--config", str(ROOT / "configs" / "default.yaml"), override]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(message), err


def test_cgr_help_lists_the_commands_and_an_unknown_command_is_refused(capsys):
    from cgr.cli import COMMANDS, main

    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS)
    assert main(["trian"]) == 2
    assert capsys.readouterr().err.startswith("usage: cgr {train,")
