"""IRCoT (Trivedi et al., 2023): interleaving retrieval with chain-of-thought, few-shot prompting."""
