"""Evaluation: score a question file with a trained checkpoint and write predictions."""
