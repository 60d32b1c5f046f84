"""`cgr export`: a checkpoint becomes a model folder the field can open (cgr.pretrained.folder):
the reader through transformers' `save_pretrained`, CGR's query encoder as a
sentence-transformers folder, both in safetensors; the corpus and open book copied in, and the
chain ranker when the settings name one (so the folder answers questions anywhere);
`cgr_config.json` with every setting prediction needs; and a model card. The checkpoint stays
what training resumes from."""

from __future__ import annotations

import argparse
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from cgr.data.root import data_path
from cgr.errors import ConfigError
from cgr.files import require_writable_dir
from cgr.models import is_packaged
from cgr.pretrained.chain_labels import beside
from cgr.pretrained.folder import CONFIG, FORMAT, FORMAT_VERSION
from cgr.signing import sign

DTYPES = ("float32", "float16", "bfloat16")
CORPUS_MODES = ("copy", "reference")
RANKER = "chain_ranker"  # the folder a copied chain ranker has inside a model folder


@dataclass
class ExportReport:
    folder: Path
    folder_bytes: int
    checkpoint_bytes: int

    def lines(self) -> list[str]:
        mb = 1024 * 1024
        shown = self.folder.resolve()
        if shown.is_relative_to(Path.cwd()):  # as the README shows it: checkpoints/NAME/model
            shown = shown.relative_to(Path.cwd())
        return [
            f"model: {shown}",
            f"size: {self.folder_bytes / mb:.1f} MB (the checkpoint: {self.checkpoint_bytes / mb:.1f} MB)",
        ]


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _copy_files(data: dict, out: Path) -> None:
    """The corpus and open book files into out/corpus/, the settings naming them there
    (relative to the folder). Same-named files from different folders get a number."""
    retrieval = data["retrieval"]
    target, used = out / "corpus", set()
    target.mkdir()

    def place(path: str) -> str:
        name, n = Path(path).name, 1
        while name in used:
            name, n = f"{n}-{Path(path).name}", n + 1
        used.add(name)
        shutil.copyfile(data_path(path), target / name)
        return f"corpus/{name}"

    retrieval["corpus"] = [place(p) for p in retrieval.get("corpus") or []]
    if retrieval.get("open_book"):
        retrieval["open_book"] = place(retrieval["open_book"])


def _copy_ranker(data: dict, out: Path) -> None:
    """A chain ranker the settings name as a local folder (`cgr ranker`) copied in as
    out/chain_ranker, so the folder ranks its chains as the checkpoint did on any machine; a
    packaged or hub name stays a name. open_model has already held the folder to a model
    folder's rules (safetensors only, no code)."""
    chains = data.get("chains") or {}
    name = chains.get("rank_encoder")
    if not isinstance(name, str) or is_packaged(name) or not Path(name).is_dir():
        return
    shutil.copytree(name, out / RANKER, symlinks=False)
    chains["rank_encoder"] = RANKER


def _portable(data: dict, corpus: str) -> dict:
    """The data settings prediction needs: training-only fields and this machine's cache
    folders dropped; in `reference` mode corpus paths made absolute."""
    # the dev file is named in the card, not here: a folder is evaluated with --data
    keep = {"retrieval", "chains", "evidence", "max_evidence", "retrieval_batch_size",
            "eval_batch_size"}  # fmt: skip
    out = json.loads(json.dumps({k: v for k, v in data.items() if k in keep}))
    out["retrieval"].pop("cache_dir", None)
    if out.get("chains", {}).get("amr"):
        out["chains"]["amr"].pop("cache", None)
    if corpus == "reference":
        retrieval = out["retrieval"]
        retrieval["corpus"] = [str(data_path(p).resolve()) for p in retrieval.get("corpus") or []]
        if retrieval.get("open_book"):
            retrieval["open_book"] = str(data_path(retrieval["open_book"]).resolve())
    return out


def export_model(
    checkpoint: str | Path,
    out: str | Path,
    dtype: str = "float32",
    corpus: str = "copy",
    query_encoder: str = "auto",
    data_roots=(),
    replace: bool = False,
    trusted: bool = False,
) -> ExportReport:
    """Writes the model folder `out` (which must not exist, or be empty; `replace`: an earlier
    export there is replaced once the new one is whole) from `checkpoint`. `query_encoder`:
    which of a CGR checkpoint's encoders the folder retrieves with (as `cgr eval
    --query-encoder`; "auto" scores like `cgr eval` on the checkpoint). `trusted`: this
    process wrote the checkpoint (`cgr train --export-model`)."""
    from cgr.pretrained.card import model_card
    from cgr.pretrained.source import open_model

    if dtype not in DTYPES:
        raise ConfigError(f"--dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    if corpus not in CORPUS_MODES:
        raise ConfigError(f"--corpus must be one of {', '.join(CORPUS_MODES)}, not {corpus!r}")
    out = Path(out)
    if out.is_symlink():  # renaming over it would replace the user's link with a folder
        raise ConfigError(f"--out {out}: a symbolic link; name the folder itself "
                          f"({os.path.realpath(out)})")  # fmt: skip
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a folder")
    if out.exists() and any(out.iterdir()) and not (replace and (out / CONFIG).is_file()):
        raise ConfigError(f"--out {out}: exists and is not an empty folder (a model folder is "
                          "written whole, never over another)")  # fmt: skip
    opened = open_model(checkpoint, query_encoder, data_roots, trusted=trusted)
    if opened.folder is not None:
        raise ConfigError(f"--checkpoint {checkpoint}: a model folder already")
    require_writable_dir(out.parent if not out.exists() else out, "--out")
    import torch
    from safetensors import SafetensorError

    module, encoder = opened.load("cpu")
    if encoder is None and hasattr(module, "query_encoder"):  # CGR on the base encoder's evidence
        from cgr.retrieval.encoders import load_sentence_encoder

        encoder = load_sentence_encoder(opened.data["retrieval"]["encoder"]).eval()
        encoder.max_seq_length = module.query_encoder.max_seq_length
    work = out.with_name(f".{out.name}.partial")  # renamed when whole: no half-written model
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        torch_dtype = getattr(torch, dtype)
        reader = module.reader.model.to(torch_dtype)
        reader.save_pretrained(work / "reader", safe_serialization=True)
        module.reader.tokenizer.save_pretrained(work / "reader")
        if encoder is not None:
            encoder.to(torch_dtype).save(str(work / "query_encoder"), safe_serialization=True)
        data = _portable(opened.data, corpus)
        if corpus == "copy":
            _copy_files(data, work)
        _copy_ranker(data, work)
        hparams = dict(opened.checkpoint.get("hyper_parameters") or {})
        config = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "module": type(module).__name__,
            "dtype": dtype,
            "reader": {
                "folder": "reader",
                "max_length": int(hparams.get("max_length", 256)),
                "base_model": hparams.get("reader_model"),
            },  # fmt: skip
            "query_encoder": None
            if encoder is None
            else {
                "folder": "query_encoder",
                "from": _encoder_origin(opened, module, encoder),
            },  # fmt: skip
            "data": data,
            "signature": sign(data),
            "training": _training_record(opened),
            # the margin a supporting chain needs, fitted on the training questions
            "chain_labels": beside(opened.path),
        }
        (work / CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        (work / "README.md").write_text(model_card(config, opened), encoding="utf-8")
        old = out.with_name(f".{out.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        if out.exists():
            out.rename(old)
        work.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    except (OSError, SafetensorError) as e:  # a full disk or a size limit: one line, nothing kept
        shutil.rmtree(work, ignore_errors=True)
        why = getattr(e, "strerror", None) or str(e).splitlines()[0][:120]
        raise ConfigError(f"--out {out}: could not write the model folder ({why}); "
                          "nothing was written: free space or choose --out elsewhere") from None  # fmt: skip
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return ExportReport(out, folder_bytes(out), Path(checkpoint).stat().st_size)


def _encoder_origin(opened, module, encoder) -> str:
    if encoder is getattr(module, "query_encoder", None):
        return "trained"
    if module.evidence_snapshot_encoder() is encoder:
        return "snapshot"
    return "base"


def _training_record(opened) -> dict:
    """What the model card says of the run: files, budget, settings and the dev accuracy the
    checkpoint was saved at (cgr_metrics; ModelCheckpoint's best score in older ones)."""
    from cgr.training.module import SAVED_METRICS

    ckpt, data = opened.checkpoint, opened.data
    hparams = {
        k: v for k, v in (ckpt.get("hyper_parameters") or {}).items() if not k.startswith("_")
    }
    metrics = dict(ckpt.get(SAVED_METRICS) or {})
    if "val/acc" not in metrics:
        for state in (ckpt.get("callbacks") or {}).values():
            score = isinstance(state, dict) and state.get("best_model_score")
            if score is not None and score is not False:
                metrics["val/acc"] = float(score)
                break
    return {
        "train_file": data.get("train_file"),
        "dev_file": data.get("dev_file"),
        "max_train_questions": data.get("max_train_questions"),
        "epochs_completed": int(ckpt.get("epoch", 0)) + 1,
        "global_step": int(ckpt.get("global_step", 0)),
        "model": hparams,
        "dev_metrics": metrics,
        "lightning_version": ckpt.get("pytorch-lightning_version"),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="cgr export",
        description="Write a checkpoint as a model folder (transformers / sentence-transformers, "
        "safetensors, cgr_config.json, a model card).",
        allow_abbrev=False,
    )
    parser.add_argument("--checkpoint", required=True, help="the checkpoint to export (best.ckpt)")
    parser.add_argument("--out", required=True, help="the model folder (new, or empty)")
    parser.add_argument("--dtype", choices=DTYPES, default="float32",
                        help="the weights' dtype (float16 / bfloat16 halve the folder; CPUs load them as float32)")  # fmt: skip
    parser.add_argument("--corpus", choices=CORPUS_MODES, default="copy",
                        help="copy the corpus and open book into the folder (default), or name "
                             "them by absolute path (a corpus too large to ship)")  # fmt: skip
    parser.add_argument("--query-encoder", choices=("auto", "trained", "base"), default="auto",
                        help="CGR: which query encoder the folder retrieves with (as cgr eval)")  # fmt: skip
    parser.add_argument("--data-root", action="append", default=[], metavar="FOLDER",
                        help="a folder whose files a checkpoint written elsewhere may read")  # fmt: skip
    args = parser.parse_args(argv)
    report = export_model(args.checkpoint, args.out, args.dtype, args.corpus,
                          args.query_encoder, args.data_root)  # fmt: skip
    print("\n".join(report.lines()))
    return 0
