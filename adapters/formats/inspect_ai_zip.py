"""Reads the entries of a `.eval` log (a zip), including zstd-compressed ones.

Python's zipfile before 3.14 cannot decompress method 93 (zstd), which newer
inspect versions write; those entries are sliced out of the archive and
decompressed with `zstandard`, checked against the stated size and CRC-32 just
as zipfile checks the entries it reads itself.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any

import zstandard

from benchledger.adapters.formats import limits
from benchledger.adapters.formats.common import loads
from benchledger.domain.errors import InputFormatError

ZSTD = 93
# signature, version, flags, method, time, date, crc, sizes, name and extra lengths
LOCAL_HEADER = struct.Struct("<4s5H3L2H")
LOCAL_SIGNATURE = b"PK\x03\x04"
CHUNK = 1 << 20
MiB = 1 << 20


class EvalArchive:
    """The entries of one `.eval` file; every failure names the file and the entry."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name = name
        self._data = memoryview(data)
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as e:
            raise InputFormatError(name, f"not a readable .eval (zip) archive: {e}") from None
        except NotImplementedError as e:  # a directory naming a zip version it cannot read
            raise InputFormatError(name, f"not a readable .eval (zip) archive: {e}") from None
        self._entries = {info.filename: info for info in self._zip.infolist()}

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, entry: str) -> bool:
        return entry in self._entries

    def json(self, entry: str) -> Any:
        """The entry's JSON document (NaN and Infinity allowed, as inspect writes them)."""
        return loads(self.name, self.read(entry), field=entry)

    def read(self, entry: str) -> bytes:
        info = self._entries.get(entry)
        if info is None:
            raise InputFormatError(self.name, "entry missing from the archive", field=entry)
        # The directory's sizes are the archive's own claim: checked first, never trusted.
        self._check_size(info, info.file_size, "the stated size")
        if info.compress_type == ZSTD:
            return self._read_zstd(info)
        try:
            with self._zip.open(info) as stream:
                return self._bounded(info, iter(lambda: stream.read(CHUNK), b""))
        except NotImplementedError:
            raise InputFormatError(
                self.name, f"unsupported compression method {info.compress_type}", field=entry
            ) from None
        except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, ValueError, OSError) as e:
            raise InputFormatError(self.name, f"corrupt entry: {e}", field=entry) from None

    def _check_size(self, info: zipfile.ZipInfo, size: int, what: str) -> None:
        bounds = limits.current()
        if size > bounds.decompressed_size:
            raise limits.exceeded(
                self.name, f"{what} of {size} bytes", "decompressed_size", field=info.filename
            )
        if size > MiB and size > bounds.compression_ratio * max(info.compress_size, 1):
            raise limits.exceeded(
                self.name,
                f"{what} ({size} bytes from {info.compress_size} compressed)",
                "compression_ratio",
                field=info.filename,
            )

    def _bounded(self, info: zipfile.ZipInfo, chunks: Iterator[bytes]) -> bytes:
        """The chunks joined, stopped as soon as they pass the size or ratio limit."""
        out = bytearray()
        for chunk in chunks:
            out += chunk
            self._check_size(info, len(out), "the decompressed data")
        return bytes(out)

    def _read_zstd(self, info: zipfile.ZipInfo) -> bytes:
        def corrupt(why: str) -> InputFormatError:
            return InputFormatError(self.name, f"corrupt zstd entry: {why}", field=info.filename)

        offset = info.header_offset
        if offset < 0 or offset + LOCAL_HEADER.size > len(self._data):
            raise corrupt("local header lies outside the file")
        fields = LOCAL_HEADER.unpack_from(self._data, offset)
        signature, name_length, extra_length = fields[0], fields[-2], fields[-1]
        if signature != LOCAL_SIGNATURE:
            raise corrupt("bad local header signature")
        if fields[2] & 0x1:
            raise corrupt("the entry is encrypted")
        start = offset + LOCAL_HEADER.size + name_length + extra_length
        end = start + info.compress_size
        if end > len(self._data):
            raise corrupt("compressed data is truncated")
        # Read in chunks: a frame may state any content size, or none.
        reader = zstandard.ZstdDecompressor().stream_reader(self._data[start:end])
        try:
            out = self._bounded(info, iter(lambda: reader.read(CHUNK), b""))
        except zstandard.ZstdError as e:
            raise corrupt(str(e)) from None
        if len(out) != info.file_size:
            raise corrupt(f"{len(out)} bytes where the directory states {info.file_size}")
        if zlib.crc32(out) != info.CRC:
            raise corrupt("bad CRC-32")
        return out
