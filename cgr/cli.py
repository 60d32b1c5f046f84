"""The one entry point: `cgr data`, `cgr train`, `eval`, `export`, `explain`, `serve`, `encode`, `amr`, `ircot`,
`riches`, `longdoc`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from cgr.errors import CGRError


def _quiet_environment() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _offline_wandb() -> None:
    """Only for `cgr train` (its loggers): transformers prints a line whenever it is set."""
    os.environ.setdefault("WANDB_MODE", "offline")  # never ask for an account or the network
    os.environ.setdefault("WANDB_SILENT", "true")


def train(argv: list[str]) -> int:
    """LightningCLI over a reader module (ReaderModule or CGRModule) + QADataModule; then
    evaluates the best checkpoint on dev. Re-running the same command resumes from last.ckpt.
    `--export-model`: then writes the best model as a model folder, NAME/model (`cgr export`)."""
    _offline_wandb()
    export = "--export-model" in argv
    argv = [a for a in argv if a != "--export-model"]
    from cgr.training.precheck import precheck

    precheck(argv)  # before torch and Lightning load: a refusal in a fraction of a second
    from cgr.training.config import train_cli
    from cgr.training.settings import release_run_locks

    try:
        return _fit_and_evaluate(train_cli(argv), export)
    finally:
        release_run_locks()  # the run folder is free again


def _fit_and_evaluate(cli, export: bool = False) -> int:
    from cgr.evaluation.predict import evaluate
    from cgr.training.startup import apply_global_batch, startup_lines

    apply_global_batch(cli.trainer, cli.datamodule)  # every rank: each loads its own share
    if cli.trainer.global_rank == 0:
        print("\n".join(startup_lines(cli.trainer, cli.model, cli.datamodule)), flush=True)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule, ckpt_path=_resume_from(cli))
    if cli.trainer.global_rank != 0:
        return 0
    best = (
        cli.trainer.checkpoint_callback.best_model_path
        or cli.trainer.checkpoint_callback.last_model_path
    )
    print(f"best checkpoint: {best}")
    chains = os.path.join(os.path.dirname(best), "chains")  # the dev questions, drawn
    from cgr.pretrained.source import open_model

    # this process wrote the checkpoint: its files are the ones the config named
    opened = open_model(best, trusted=True)
    hp = cli.datamodule.hparams  # the fit reads the training questions the run trained on
    opened.chain_margin = _fit_chain_labels(opened, hp.train_file, Path(best).parent,
                                            hp.get("max_train_questions") or None)  # fmt: skip
    result = evaluate(opened, export_dir=chains)
    print(f"chains: {os.path.join(chains, 'chains.html')} (open it in a browser)")
    if export:
        from cgr.pretrained.export import export_model

        folder = os.path.join(os.path.dirname(best), "model")
        print("\n".join(export_model(best, folder, replace=True, trusted=True).lines()))
    print("\n".join(result.report()))  # `accuracy:` stays the last line
    return 0


def _fit_chain_labels(opened, train_file, folder: Path, budget: int | None = None) -> float | None:
    """The margin a chain's "supports" label needs, fitted on the first training questions
    (cgr.pretrained.chain_labels) and stored beside the checkpoint; None (the stated default)
    where no fit is possible, said in one line."""
    import json

    from cgr.evaluation.predict import evaluate
    from cgr.evaluation.support import MARGIN
    from cgr.files import atomic_write_text
    from cgr.pretrained.chain_labels import FILE, MAX_QUESTIONS, fit_margin, training_sample

    sample, out = folder / "chain-labels-questions.jsonl", folder / "chain-labels-predictions.jsonl"
    opened.chain_margin = MARGIN  # leads and margins do not depend on the threshold
    try:
        n = training_sample(train_file, sample, min(budget or MAX_QUESTIONS, MAX_QUESTIONS))
        result = evaluate(opened, str(sample), str(out))
        records = [json.loads(line) for line in result.predictions.read_text().splitlines()]
        files = train_file if isinstance(train_file, list) else [train_file]
        fit = fit_margin(records, {"files": files, "questions": n, "split": "train"})
    except CGRError as e:
        print(f"chain labels: not fitted ({e}); the stated default margin labels them")
        return None
    finally:
        sample.unlink(missing_ok=True)
        out.unlink(missing_ok=True)
    atomic_write_text(folder / FILE, json.dumps(fit, indent=1) + "\n")
    print(f"chain labels: a chain supports its choice at a margin of {fit['margin']:.2f}, fitted "
          f"on {n} training questions ({fit['right_supported']:.0%} of right choices with chains "
          f"get one, {fit['wrong_supported']:.0%} of wrong ones): {folder / FILE}")  # fmt: skip
    return fit["margin"]


def _resume_from(cli) -> str | None:
    """last.ckpt of this run's checkpoint folder if it reads (a damaged one is set aside)."""
    from cgr.training.checkpoints import resume_checkpoint

    callback = cli.trainer.checkpoint_callback
    if not (callback and callback.dirpath):
        return None
    found = resume_checkpoint(callback.dirpath)
    return str(found) if found else None


def evaluate_command(argv: list[str]) -> int:
    from cgr.evaluation import QUERY_ENCODERS
    from cgr.pretrained.source import add_model_arguments

    parser = argparse.ArgumentParser(
        prog="cgr eval",
        description="Score a question file with a checkpoint or a model folder.",
        allow_abbrev=False,
    )
    add_model_arguments(parser)
    parser.add_argument(
        "--data", default=None, help="official-format OBQA/ARC jsonl (default: the dev file)"
    )
    parser.add_argument(
        "--out",
        default=None,
        help="predictions jsonl (default: beside the checkpoint, or in the model folder)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="questions scored together (default: the model's eval batch)",
    )
    parser.add_argument(
        "--export-dir", default=None, help="write chains.jsonl and chains.html here"
    )
    parser.add_argument("--no-chains", action="store_true", help="read the plain pool, not Ê")
    parser.add_argument(
        "--query-encoder",
        choices=QUERY_ENCODERS,
        default="auto",
        help="CGR: retrieve with the trained query encoder, the one it started from, or (auto) "
        "the snapshot the reader's last training evidence came from (base until a refresh ran)",
    )
    args = parser.parse_args(argv)
    opened = _eval_inputs(args)
    from cgr.evaluation.predict import evaluate

    result = evaluate(opened, args.data, args.out, args.batch_size, args.export_dir, args.no_chains)
    if args.export_dir:
        print(f"chains: {args.export_dir}/chains.jsonl, {args.export_dir}/chains.html")
    print("\n".join(result.report()))
    return 0


def _eval_inputs(args):
    """The question file, the outputs and the model (checkpoint or folder, with the paths it
    stores), checked before Lightning and the models import (a refusal in about 2 s, most of
    it importing torch)."""
    from cgr.data.loaders import load_multiple_choice
    from cgr.errors import ConfigError
    from cgr.files import require_writable_dir, require_writable_file

    if args.data:
        load_multiple_choice(args.data)
    elif args.model:
        raise ConfigError("--data: a model folder names no dev file; give the questions to score")
    if args.out:
        require_writable_file(args.out, "--out")
    if args.export_dir:
        require_writable_dir(args.export_dir, "--export-dir")
    from cgr.pretrained.source import model_path, open_model, with_command_line

    opened = open_model(model_path(args), args.query_encoder, args.data_root,
                        dev_file=args.data is None)  # fmt: skip
    return with_command_line(opened, args)


def encode_command(argv: list[str]) -> int:
    from cgr.retrieval.encode_job import main as encode_main
    from cgr.training.config import resolved_config

    return encode_main(argv, resolved_config)


def ranker_command(argv: list[str]) -> int:
    from cgr.chains.ranker import main as ranker_main
    from cgr.training.config import resolved_config

    return ranker_main(argv, resolved_config)


def support_reader_command(argv: list[str]) -> int:
    from cgr.training.config import resolved_config
    from cgr.training.support_reader import main as support_reader_main

    return support_reader_main(argv, resolved_config)


def amr_command(argv: list[str]) -> int:
    from cgr.amr.commands import main as amr_main

    return amr_main(argv)


def ircot_command(argv: list[str]) -> int:
    from cgr.ircot.commands import main as ircot_main

    return ircot_main(argv)


def riches_command(argv: list[str]) -> int:
    from cgr.riches.commands import main as riches_main

    return riches_main(argv)


def longdoc_command(argv: list[str]) -> int:
    from cgr.longdoc.commands import main as longdoc_main

    return longdoc_main(argv)


def export_command(argv: list[str]) -> int:
    from cgr.pretrained.export import main as export_main

    return export_main(argv)


def explain_command(argv: list[str]) -> int:
    from cgr.serving.explain import main as explain_main

    return explain_main(argv)


def data_command(argv: list[str]) -> int:
    from cgr.datasets.commands import main as data_main

    return data_main(argv)


def serve_command(argv: list[str]) -> int:
    from cgr.serving.server import main as serve_main

    return serve_main(argv)


COMMANDS = {
    "train": train,
    "data": data_command,
    "eval": evaluate_command,
    "explain": explain_command,
    "export": export_command,
    "serve": serve_command,
    "encode": encode_command,
    "ranker": ranker_command,
    "support-reader": support_reader_command,
    "amr": amr_command,
    "ircot": ircot_command,
    "riches": riches_command,
    "longdoc": longdoc_command,
}


# modules of the optional extras (pyproject.toml) -> the extra that installs them
EXTRAS = {"gguf": "ircot", "xllamacpp": "ircot", "ctranslate2": "ircot", "openai": "ircot",
          "fm_index": "riches", "marisa_trie": "riches", "fastapi": "serve", "uvicorn": "serve"}  # fmt: skip


def missing_extra(error: ModuleNotFoundError) -> str | None:
    """One line saying which extra installs a module a command needs, where one does."""
    top = (error.name or "").split(".")[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return None
    return (f"error: this needs the '{extra}' extra (module {top} is not installed): "
            f"pip install 'cgr[{extra}]', or scripts/setup_env.sh, which installs every extra")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = f"usage: cgr {{{','.join(COMMANDS)}}} ...  (cgr COMMAND --help for its options)"
    if argv[:1] in (["-h"], ["--help"]):
        print(usage)
        return 0
    if not argv or argv[0] not in COMMANDS:
        print(usage, file=sys.stderr)
        return 2
    _quiet_environment()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # "no AVX2 build" is not news
    try:
        from cgr.config_files import check_config_files

        check_config_files(argv[1:])  # size and alias bounds before any parser reads a config
        return COMMANDS[argv[0]](argv[1:])
    except CGRError as e:
        from cgr.terminal import terminal_safe

        print(f"error: {terminal_safe(str(e), newlines=True)}", file=sys.stderr)
        return e.exit_code
    except ModuleNotFoundError as e:
        if (line := missing_extra(e)) is None:
            raise
        print(line, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
