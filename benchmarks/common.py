"""Helpers shared by the benchmark scripts: result files and markdown tables."""

from __future__ import annotations

import json
import platform
import resource
from pathlib import Path

import torch
import yaml

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]


def machine() -> str:
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return f"{platform.machine()}, {torch.get_num_threads()} torch threads, {gpu}"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def save_result(name: str, row: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(row, indent=1) + "\n")
    return path


def load_result(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def print_table(columns: list[str], rows: list[list]) -> None:
    print("| " + " | ".join(columns) + " |")
    print("|" + "|".join("---" for _ in columns) + "|")
    for row in rows:
        print("| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row) + " |")


def load_config(path: str | Path) -> dict:
    return yaml.safe_load((ROOT / path).read_text())
