"""Retrieval: encoders, the FAISS index, beam iterative search and sparse baselines."""
