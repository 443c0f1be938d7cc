"""What every format parser needs: reading a JSON document with errors naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchledger.domain.errors import InputFormatError


def read_json(path: Path, data: bytes | None = None) -> Any:
    """A JSON document (read from `path` unless `data` is given); any failure to read or
    decode it is an InputFormatError naming the file, and the line where JSON says so."""
    try:
        raw = path.read_bytes() if data is None else data
        return json.loads(raw.decode("utf-8"))
    except OSError as e:
        raise InputFormatError(str(path), f"cannot read ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise InputFormatError(
            str(path), f"not UTF-8 text ({e.reason} at byte {e.start})"
        ) from None
    except json.JSONDecodeError as e:
        raise InputFormatError(
            str(path), f"invalid JSON: {e.msg} (column {e.colno})", line=e.lineno
        ) from None
    except RecursionError:
        raise InputFormatError(str(path), "invalid JSON: nested too deeply") from None
