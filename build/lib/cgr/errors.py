"""Errors that a user can act on: each names the file, line and field that is wrong."""

from __future__ import annotations


class CGRError(Exception):
    """Base class: the CLI prints these as one line, without a traceback, and exits with
    `exit_code`."""

    exit_code = 2


class DataFormatError(CGRError):
    def __init__(self, path: str, line: int | None, field: str, problem: str):
        self.path, self.line, self.field, self.problem = str(path), line, field, problem
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: field '{field}': {problem}")


class ConfigError(CGRError):
    pass


class CacheMismatchError(CGRError):
    pass
