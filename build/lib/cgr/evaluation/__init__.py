"""Evaluation: score a question file with a trained checkpoint and write predictions."""

from cgr.pretrained.loading import QUERY_ENCODERS  # noqa: F401 - the command line's choices
