"""Which query encoder a CGR checkpoint retrieves with at eval: "auto" follows the encoder the
reader's training evidence came from, "trained" / "base" force one."""

import pytest

from cgr.errors import ConfigError
from cgr.evaluation.predict import uses_trained_query_encoder
from cgr.training.callbacks import training_evidence_refreshed


def checkpoint(epoch: int, every_n: int | None = 1) -> dict:
    hparams = {} if every_n is None else {"refresh_evidence_every_n_epochs": every_n}
    return {"epoch": epoch, "hyper_parameters": hparams, "state_dict": {}}


@pytest.mark.parametrize(
    ("epoch", "every_n", "trained"),
    [
        (0, 1, False),  # first epoch: the reader has read only the base encoder's evidence
        (1, 1, True),  # after the refresh that followed epoch 1
        (1, 2, False),  # refresh every 2 epochs: not yet
        (2, 2, True),
        (5, 0, False),  # refresh switched off: never
        (3, None, True),  # older checkpoints without the hyper-parameter: the module default, 1
    ],
)
def test_auto_follows_the_encoder_of_the_training_evidence(epoch, every_n, trained):
    assert uses_trained_query_encoder(checkpoint(epoch, every_n), "auto") is trained
    assert uses_trained_query_encoder(checkpoint(epoch, every_n)) is trained  # the default


def test_trained_and_base_ignore_the_epoch():
    for epoch in (0, 3):
        assert uses_trained_query_encoder(checkpoint(epoch), "trained") is True
        assert uses_trained_query_encoder(checkpoint(epoch), "base") is False


def test_an_unknown_choice_is_refused():
    with pytest.raises(ConfigError, match="query_encoder must be one of auto, trained, base"):
        uses_trained_query_encoder(checkpoint(0), "frozen")


def test_validation_refreshes_dev_evidence_by_the_same_rule():
    assert not training_evidence_refreshed(0, 1)
    assert training_evidence_refreshed(1, 1)
    assert not training_evidence_refreshed(4, 0)
