"""Evaluation: score a question file with a trained checkpoint and write predictions."""

QUERY_ENCODERS = ("auto", "trained", "base")  # which encoder a CGR checkpoint retrieves with
