"""A trained model for people: `cgr explain` (one question, in the terminal) and `cgr serve`."""

import argparse


def checkpoint_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The options every command over one model starts from (no abbreviations): --checkpoint
    or --model, and --data-root."""
    from cgr.pretrained.source import add_model_arguments

    parser = argparse.ArgumentParser(prog=prog, description=description, allow_abbrev=False)
    add_model_arguments(parser)
    return parser


def load_predictor(args: argparse.Namespace):
    """The Predictor over the checkpoint or model folder the command line names."""
    from cgr.pretrained.source import model_path, open_model, with_command_line

    opened = open_model(model_path(args), data_roots=args.data_root)  # checked before the imports
    opened = with_command_line(opened, args)
    from cgr.api import Predictor

    return Predictor._from_opened(opened, None, None, 16)
