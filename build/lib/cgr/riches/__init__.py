"""RICHES (Jain et al., 2024): retrieval by decoding corpus text under an FM-index constraint."""
