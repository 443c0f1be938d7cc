"""How an error reads on a terminal: what differs first, one statement a line, wrapped.

A message is wrapped only on a terminal (stderr is one; its width, or COLUMNS), as a table
is fitted (`output.table_width`); into a pipe or a log it stays one line, for grep.
"""

from __future__ import annotations

import re
import shutil
import sys

from benchledger.commands.output import printable

INDENT = "  "
# The import conflict (domain.importing): WHERE: run 'KEY' is already recorded with other
# facts: FIELD: recorded A, this file states B; FIELD: ... (and N more). Nothing ...
CONFLICT = re.compile(
    r"^(?P<where>.+?): run '(?P<key>.+?)' is already recorded with other facts: "
    r"(?P<facts>.+?)(?: \(and (?P<more>\d+) more\))?\. (?P<advice>Nothing was appended.*)$",
    re.S,
)
# Where one disagreement ends and the next begins: "; " before "FIELD: recorded ".
NEXT_FACT = re.compile(r"; (?=[\w.\[\]-]+: recorded )")


def error_width() -> int | None:
    """The width an error is wrapped to, or None to leave it one line."""
    if not sys.stderr.isatty():
        return None
    return shutil.get_terminal_size().columns


def error_text(message: str, width: int | None = None) -> str:
    """`message` as the lines after `Error: `, for a terminal `width` wide: a conflict
    names the fields that differ first, then one line each, and any line longer than the
    terminal is wrapped, indented. Without a width, the message as it is. Either way
    its control characters are escaped (`output.printable`): it quotes what files state."""
    message = printable(message)
    if width is None:
        return message
    import textwrap  # an error on a terminal only

    wrapped: list[str] = []
    for number, line in enumerate(_conflict_lines(message) or [message]):
        prefix = " " * len("Error: ") if number == 0 else ""
        pieces = textwrap.wrap(
            prefix + line,
            width=max(width, 20),
            subsequent_indent=INDENT * 2,
            break_on_hyphens=False,
        )
        if pieces:
            pieces[0] = pieces[0][len(prefix) :]
        wrapped.extend(pieces or [""])
    return "\n".join(wrapped)


def _conflict_lines(message: str) -> list[str] | None:
    found = CONFLICT.match(message)
    if found is None:
        return None
    facts = NEXT_FACT.split(found["facts"])
    fields = [fact.split(": ", 1)[0] for fact in facts]
    more = f" (and {found['more']} more)" if found["more"] else ""
    return [
        f"{', '.join(fields)}{more} of run '{found['key']}' differ from what is recorded",
        f"{INDENT}file: {found['where']}",
        *(f"{INDENT}{fact}" for fact in facts),
        f"{INDENT}{found['advice']}",
    ]
