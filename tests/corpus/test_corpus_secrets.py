"""Masking secrets never over-matches real results: every record of the corpus (token
counts, tokenizer settings, function calls named `createAuthToken`, model paths) is
recorded exactly as stated."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchledger.adapters import formats
from benchledger.adapters.store.importer import discover
from benchledger.domain.masked_records import masked_record
from tests.conftest import CORPUS

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")


def corpus_records(root: Path) -> list[tuple[str, formats.Parsed]]:
    found: list[tuple[str, formats.Parsed]] = []
    for item in discover([root]):
        path = item.path
        head = path.read_bytes()[:65536]
        fmt = next((f for f in formats.all_formats() if f.detect(path, head)), None)
        if fmt is None:
            continue
        if formats.can_stream(fmt):
            records = list(formats.read(fmt, path, None))
        else:
            records = formats.parse(fmt, path, path.read_bytes(), None)
        found.extend((str(path.relative_to(root)), record) for record in records)
    return found


def test_no_record_of_the_corpus_has_anything_masked() -> None:
    records = corpus_records(CORPUS)
    assert len(records) > 1000
    changed = [name for name, record in records if masked_record(record) is not record]
    assert changed == []
