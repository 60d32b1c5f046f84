import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# the tests' own signing key: checkpoints they write are "this user's", the user's key untouched
os.environ.setdefault(
    "CGR_SIGNING_KEY", os.path.join(tempfile.mkdtemp(prefix="cgr-key-"), "signing.key")
)

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


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """One real tiny `cgr train` on data/sample (beam retrieval, chains on), shared by the tests
    that need a trained checkpoint: folder with ckpt/best.ckpt."""
    from cgr.cli import main
    from tests.training.helpers import tiny_config

    tmp_path = tmp_path_factory.mktemp("tiny_run")
    assert main(["train", "--config", str(tiny_config(tmp_path))]) == 0
    return tmp_path
