"""One error hierarchy for the whole ledger; only the CLI turns it into output."""

from __future__ import annotations


class LedgerError(Exception):
    """Base class of every expected failure the ledger reports to a user."""


class NotFoundError(LedgerError):
    """Something asked for by id or name does not exist."""


class AmbiguousIdError(LedgerError):
    """A shortened id matches more than one thing."""


class RuleViolationError(LedgerError):
    """A command would break a rule of the domain."""


class BlankReasonError(RuleViolationError):
    """A correction, invalidation or reinstatement without a reason."""


class RunAlreadyFinishedError(RuleViolationError):
    """Cells or a second finish arrived for a run that already finished."""


class RunNotFinishedError(RuleViolationError):
    """A correction was asked for on a run that has not finished."""


class CellConflictError(RuleViolationError):
    """A cell key arrived again with a different payload."""


class InvalidationStateError(RuleViolationError):
    """Invalidate of an invalid run, or reinstate of a valid one."""


class ImportConflictError(LedgerError):
    """A source file re-states a recorded run with different content."""


class InputFormatError(LedgerError):
    """A result file cannot be read; names the file, line and field."""

    def __init__(
        self,
        path: str,
        message: str,
        *,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.message = message
        where = path if line is None else f"{path}:{line}"
        what = f"field '{field}': {message}" if field else message
        super().__init__(f"{where}: {what}")


class UnknownFormatError(InputFormatError):
    """No parser recognises the file."""


class PartOfResultError(UnknownFormatError):
    """No parser reads the file alone: it is part of a result read through another file
    (`primary`), which importing `target` (a folder, or `primary` itself) reads whole."""

    def __init__(self, path: str, message: str, *, primary: str, target: str) -> None:
        self.primary = primary
        self.target = target
        super().__init__(path, message)


class InputLimitError(InputFormatError):
    """A result file goes beyond a configured bound (size, depth, length...); names it."""

    def __init__(
        self,
        path: str,
        message: str,
        *,
        limit: str,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.limit = limit
        super().__init__(path, message, line=line, field=field)


class NotRegularFileError(InputFormatError):
    """A pipe, device, socket or symlink loop: skipped without being read."""


class ConcurrencyError(LedgerError):
    """Another writer appended to the same stream first."""


class TamperError(LedgerError):
    """The stored events no longer match the hash chain."""


class UnchainedLedgerError(LedgerError):
    """The ledger's events predate the chain its writer keeps: `upgrade-chain` first."""
