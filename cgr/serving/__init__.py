"""A trained model for people: `cgr explain` (one question, in the terminal) and `cgr serve`."""

import argparse


def checkpoint_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The options every command over one checkpoint starts from (no abbreviations)."""
    parser = argparse.ArgumentParser(prog=prog, description=description, allow_abbrev=False)
    parser.add_argument("--checkpoint", required=True)
    return parser
