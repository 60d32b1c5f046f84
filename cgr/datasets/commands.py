"""`cgr data list | get | check | prepare`."""

from __future__ import annotations

import argparse
from pathlib import Path

from cgr.data.registry import BY_NAME
from cgr.data.root import ENV, data_root, use_data_root
from cgr.datasets.release import DataGetError


def _root_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", default=None, metavar="DIR",
                        help=f"the data root (default: ${ENV}, else data/ here)")  # fmt: skip


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="cgr data",
        description="The public datasets cgr reads: list them, get them into the data root "
        "(official sources, checked by sha256), check what a config needs.",
        allow_abbrev=False,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("list", help="each dataset: files, size, license, source, state")
    _root_argument(listing)
    listing.add_argument("--files", action="store_true", help="also each file's state")
    get = sub.add_parser("get", help="download (or copy with --from) datasets into the root")
    get.add_argument("names", nargs="+", metavar="NAME", help=f"of: {', '.join(BY_NAME)}")
    _root_argument(get)
    get.add_argument("--from", dest="source_from", default=None, metavar="DIR|ARCHIVE",
                     help="a folder or archive holding the release's files (the official "
                     "archive, its extracted folder, or a data root of cgr's layout); nothing "
                     "is downloaded")  # fmt: skip
    get.add_argument("--mirror", default=None, metavar="URL",
                     help="fetch each source file by its name from this URL instead")  # fmt: skip
    get.add_argument("--quiet", action="store_true", help="no progress bars")
    check = sub.add_parser("check", help="every data file the configs read: present, verified")
    check.add_argument("configs", nargs="*", metavar="CONFIG",
                       help="config files (none: every dataset's files under the root)")  # fmt: skip
    _root_argument(check)
    prepare = sub.add_parser("prepare", help="write the derived files of datasets already got")
    prepare.add_argument("names", nargs="+", metavar="NAME")
    _root_argument(prepare)
    args = parser.parse_args(argv)
    if args.root:
        use_data_root(args.root)
    return {"list": _list, "get": _get, "check": _check, "prepare": _prepare}[args.command](args)


def _list(args) -> int:
    from cgr.datasets.check import list_lines

    print("\n".join(list_lines(args.files)))
    return 0


def _get(args) -> int:
    from cgr.datasets.get import get

    source = Path(args.source_from).expanduser() if args.source_from else None
    if source is not None and args.mirror:
        raise DataGetError("--from and --mirror: give one of them")
    for outcome in get(args.names, data_root(), source, args.mirror, args.quiet):
        print("\n".join(outcome.lines()))
    print(f"data root: {data_root()}")
    return 0


def _prepare(args) -> int:
    """The derived files from the files already under the root (no download)."""
    from cgr.datasets.get import get

    for outcome in get(args.names, data_root(), data_root(), None, True):
        print("\n".join(outcome.lines()))
    return 0


def _check(args) -> int:
    from cgr.datasets.check import check_config, list_lines

    if not args.configs:
        print("\n".join(list_lines(verbose=True)))
        return 0
    ok = True
    for config in args.configs:
        path = Path(config)
        if not path.is_file():
            raise DataGetError(f"{config}: no such config file")
        lines, good = check_config(path)
        print("\n".join(lines) or f"{config}: reads no data file")
        ok &= good
    print(f"data root: {data_root()}: " + ("every file present" if ok else "files missing or "
                                           "differing (above); exit 2"))  # fmt: skip
    return 0 if ok else 2
