"""cgr: chain-guided retrieval and multi-hop question answering.

`cgr.Predictor` answers questions with a trained checkpoint and shows the facts and reasoning
chains behind each choice; `cgr.Retriever` finds facts. Both are imported on first use, so
`import cgr` stays cheap."""

__version__ = "0.1.0"

_API = {"Predictor": "cgr.api", "Retriever": "cgr.api", "Prediction": "cgr.evaluation.prediction"}

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'cgr' has no attribute {name!r}")
