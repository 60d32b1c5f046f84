import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample"


@pytest.fixture(scope="session")
def encoder():
    from cgr.retrieval.encoders import TextEncoder

    return TextEncoder("minilm")


@pytest.fixture(scope="session")
def hypothesis_generator():
    from cgr.data.hypothesis import HypothesisGenerator

    return HypothesisGenerator()
