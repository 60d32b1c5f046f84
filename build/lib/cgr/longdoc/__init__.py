"""Long-document question answering: D3 and its baselines."""
