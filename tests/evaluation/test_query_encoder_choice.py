"""Which query encoder a CGR checkpoint retrieves with at eval: "auto" is the evidence snapshot
the reader last trained on (the base encoder before any refresh), "trained" / "base" force one;
checkpoints written before snapshots were saved follow the epoch rule."""

from types import SimpleNamespace

import pytest

from cgr.errors import ConfigError
from cgr.evaluation.predict import retrieval_encoder
from cgr.training.callbacks import training_evidence_refreshed
from cgr.training.cgr_module import EVIDENCE_SNAPSHOT


class Encoder:
    def eval(self):
        return self


def module(snapshot: bool) -> SimpleNamespace:
    snap = Encoder() if snapshot else None
    return SimpleNamespace(query_encoder=Encoder(), evidence_snapshot_encoder=lambda: snap)


def checkpoint(epoch: int, every_n: int | None = 1, snapshot: bool = False) -> dict:
    hparams = {} if every_n is None else {"refresh_evidence_every_n_epochs": every_n}
    return {"epoch": epoch, "hyper_parameters": hparams, "state_dict": {}} | (
        {EVIDENCE_SNAPSHOT: {}} if snapshot else {}
    )


def test_auto_is_the_snapshot_once_a_refresh_ran_and_the_base_encoder_before():
    fresh, refreshed = module(False), module(True)
    assert retrieval_encoder(fresh, checkpoint(0)) is None  # epoch 0: base evidence
    chosen = retrieval_encoder(refreshed, checkpoint(1, snapshot=True))
    assert chosen is refreshed.evidence_snapshot_encoder()
    assert chosen is not refreshed.query_encoder  # not the encoder trained further since


@pytest.mark.parametrize(
    ("epoch", "every_n", "trained"),
    [(0, 1, False), (1, 1, True), (1, 2, False), (2, 2, True), (5, 0, False), (3, None, True)],
)
def test_checkpoints_without_a_snapshot_follow_the_epoch_rule(epoch, every_n, trained):
    m = module(False)
    chosen = retrieval_encoder(m, checkpoint(epoch, every_n))
    assert (chosen is m.query_encoder) is trained and (chosen is None) is not trained


def test_trained_and_base_ignore_the_snapshot_and_reader_checkpoints_use_the_base():
    m = module(True)
    for epoch in (0, 3):
        assert retrieval_encoder(m, checkpoint(epoch, snapshot=True), "trained") is m.query_encoder
        assert retrieval_encoder(m, checkpoint(epoch, snapshot=True), "base") is None
    assert retrieval_encoder(SimpleNamespace(), checkpoint(3), "trained") is None


def test_an_unknown_choice_is_refused():
    with pytest.raises(ConfigError, match="query_encoder must be one of auto, trained, base"):
        retrieval_encoder(module(False), checkpoint(0), "frozen")


def test_the_epoch_rule():
    assert not training_evidence_refreshed(0, 1)
    assert training_evidence_refreshed(1, 1)
    assert not training_evidence_refreshed(4, 0)
