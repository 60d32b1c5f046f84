"""Which faiss-cpu build searches fastest on this CPU: the pinned one against others from PyPI.

faiss-cpu >= 1.13 ships one library with run-time SIMD dispatch (`get_compile_options()` says
"DD AVX2"); its loader still tries the old per-SIMD modules first and logs "Could not load
library with AVX2 support", which reads like a generic build. faiss-cpu <= 1.12 ships separate
generic / AVX2 / AVX512 modules. Each version is installed into .cache/cgr/faiss-VERSION
(`pip install --target`, no dependencies) and timed in its own process on the same vectors:
flat and IVF search of 1,000 queries at batch 64 over 200k 384-d vectors, both cores.
`--opt-levels generic avx2 avx512` also times each SIMD module of a version that ships them
(FAISS's loader takes the one named by FAISS_OPT_LEVEL); the CPU model is part of each row,
since the project's machines differ (an AMD EPYC with AVX2 only, an Intel Xeon with AVX512).

    .venv/bin/python benchmarks/faiss_builds.py [--versions 1.15.1 1.12.0] [--opt-levels avx2 avx512]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import ROOT, load_result, machine, print_table, save_result  # noqa: E402

PROBE = r"""
import json, sys, time
import numpy as np
import faiss
rng = np.random.default_rng(0)
x = rng.standard_normal((200_000, 384), dtype=np.float32); x /= np.linalg.norm(x, axis=1, keepdims=True)
q = x[:1000] + 0.1 * rng.standard_normal((1000, 384), dtype=np.float32)
row = {"version": faiss.__version__, "compile": faiss.get_compile_options(),
       "module": faiss.swigfaiss.__name__ if hasattr(faiss, "swigfaiss") else "",
       "loaded": [m for m in sys.modules if m.startswith("faiss.swigfaiss")]}
for kind in ("flat", "ivf"):
    if kind == "flat":
        index = faiss.IndexFlatIP(384)
    else:
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(384), 384, 1024, faiss.METRIC_INNER_PRODUCT)
        index.train(x[:100_000]); index.nprobe = 32
    index.add(x)
    index.search(q[:64], 10)  # warm-up
    start = time.perf_counter()
    for i in range(0, len(q), 64):
        index.search(q[i : i + 64], 10)
    row[kind + "_queries_per_s"] = len(q) / (time.perf_counter() - start)
print(json.dumps(row))
"""


def install(version: str) -> Path:
    target = ROOT / ".cache" / "cgr" / f"faiss-{version}"
    if not (target / "faiss").exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                        f"faiss-cpu=={version}"], check=True)  # fmt: skip
    return target


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--versions", nargs="+", default=["1.15.1", "1.12.0"])
    parser.add_argument("--opt-levels", nargs="*", default=[""],
                        help="FAISS_OPT_LEVEL values to time (generic, avx2, avx512); '' = the loader's choice")  # fmt: skip
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    rows = []
    for version in args.versions:
        for level in args.opt_levels:
            name = f"faiss_builds-{version}" + (f"-{level}" if level else "")
            row = None if args.force else load_result(name)
            if row is None:
                env = {**os.environ, "PYTHONPATH": str(install(version))}
                if level:
                    env["FAISS_OPT_LEVEL"] = level.upper()  # the loader compares "AVX2" as is
                out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                                     text=True, check=True)  # fmt: skip
                row = {**json.loads(out.stdout.strip().splitlines()[-1]), "machine": machine(),
                       "cpu": cpu_model(), "opt_level": level}  # fmt: skip
                save_result(name, row)
            rows.append([row["version"], row.get("opt_level") or "(default)", row.get("cpu", "AMD EPYC"),
                         row["compile"], ", ".join(row["loaded"]), row["flat_queries_per_s"],
                         row["ivf_queries_per_s"]])  # fmt: skip
    print(f"faiss-cpu builds: 200k x 384-d, 1,000 queries at batch 64, top 10; {machine()}")
    print_table(["faiss-cpu", "FAISS_OPT_LEVEL", "CPU", "compile options", "SWIG module loaded",
                 "flat queries/s", "IVF1024 nprobe 32 queries/s"], rows)  # fmt: skip


if __name__ == "__main__":
    main()
