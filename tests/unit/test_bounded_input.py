"""Every parser reads within the limits, and refuses what lies beyond them by name."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters import formats
from benchledger.adapters.formats import limits, native, yaml_bounded
from benchledger.adapters.formats.common import read_bytes
from benchledger.adapters.formats.limits import Limits
from benchledger.domain.errors import InputFormatError, InputLimitError
from benchledger.domain.records import RunRecord
from tests.unit.test_format_inspect_ai import eval_entries, log_doc, zip_bytes
from tests.unit.test_format_lm_eval import results_doc

DEFLATED, ZSTD = 8, 93
RUN = {"benchmark": "b", "agent": "a", "model": "m", "status": "succeeded"}
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def native_json(**extra: Any) -> str:
    return json.dumps({"schema": native.SCHEMA_ID, **RUN, **extra})


def native_jsonl(cell: str) -> str:
    return json.dumps({"type": "run", **RUN}) + "\n" + cell + "\n"


def parse(name: str, data: bytes | str, **bounds: int) -> list[Any]:
    """What the importer would keep, under `bounds` changed from the defaults."""
    raw = data.encode() if isinstance(data, str) else data
    path = Path(name)
    with limits.applied(Limits(**bounds)):
        return formats.parse(formats.detect(path, raw), path, raw)


def refusal(name: str, data: bytes | str, **bounds: int) -> InputFormatError:
    with pytest.raises(InputFormatError) as e:
        parse(name, data, **bounds)
    return e.value


def zip_entry(name: str, body: bytes, *, method: int, crc: int, size: int) -> bytes:
    """A one-entry zip whose directory states `size`: it may lie."""
    raw = name.encode()
    fields = (crc, len(body), size, len(raw))
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0x21, *fields, 0)
    central = struct.pack(
        "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, *fields, 0, 0, 0, 0, 0, 0
    )
    out = local + raw + body
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(central) + len(raw), len(out), 0)
    return out + central + raw + end


def deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


class TestLimitsSettings:
    def test_defaults_hold_without_configuration(self) -> None:
        assert Limits.from_env({}) == Limits()
        assert Limits().file_size == 512 * limits.MiB

    def test_the_environment_sets_a_limit_with_a_unit(self) -> None:
        bounds = Limits.from_env({"BENCHLEDGER_LIMIT_FILE_SIZE": "2GiB"})
        assert bounds.file_size == 2 * limits.GiB

    def test_an_option_names_a_limit_with_dashes(self) -> None:
        assert Limits().updated({"string-length": "10k"}).string_length == 10 * limits.KiB

    def test_an_unknown_limit_or_a_bad_amount_is_refused_by_name(self) -> None:
        with pytest.raises(InputFormatError, match=r"unknown limit 'size'.*file-size"):
            Limits().updated({"size": "1"})
        with pytest.raises(InputFormatError, match=r"BENCHLEDGER_LIMIT_DEPTH: 'deep'"):
            Limits.from_env({"BENCHLEDGER_LIMIT_DEPTH": "deep"})

    def test_a_file_over_the_size_limit_is_refused_before_it_is_read(self, tmp_path: Path) -> None:
        path = tmp_path / "r.jsonl"
        path.write_text(native_jsonl('{"type": "cell", "key": "a", "outcome": "passed"}'))
        with limits.applied(Limits(file_size=10)), pytest.raises(InputLimitError) as e:
            read_bytes(path)
        assert e.value.limit == "file-size"
        assert str(e.value) == (
            f"{path}: a file of {path.stat().st_size} bytes exceeds the limit of 10 bytes "
            "(raise it with --limit file-size=N or BENCHLEDGER_LIMIT_FILE_SIZE)"
        )


class TestZipBombs:
    def test_a_deflate_entry_past_the_decompressed_size_is_refused_before_it_is_all_read(
        self,
    ) -> None:
        zeros = bytes(8 * limits.MiB)  # 8 KiB on disk
        data = zip_entry(
            "header.json", deflate(zeros), method=DEFLATED, crc=zlib.crc32(zeros), size=len(zeros)
        )
        e = refusal("bomb.eval", data, decompressed_size=limits.MiB)
        assert isinstance(e, InputLimitError) and e.limit == "decompressed-size"
        assert e.field == "header.json" and "--limit decompressed-size" in str(e)

    def test_an_entry_expanding_past_the_ratio_is_refused(self) -> None:
        zeros = bytes(4 * limits.MiB)
        data = zip_entry(
            "header.json", deflate(zeros), method=DEFLATED, crc=zlib.crc32(zeros), size=len(zeros)
        )
        e = refusal("bomb.eval", data)
        assert isinstance(e, InputLimitError) and e.limit == "compression-ratio"

    def test_a_stated_size_of_gigabytes_is_refused_without_decompressing(self) -> None:
        data = zip_entry("header.json", deflate(b"{}"), method=DEFLATED, crc=0, size=3 << 30)
        e = refusal("bomb.eval", data)
        assert isinstance(e, InputLimitError) and "3221225472 bytes" in str(e)

    def test_a_zstd_frame_stating_a_small_size_is_stopped_at_the_limit(self) -> None:
        zeros = bytes(8 * limits.MiB)
        body = zstandard.ZstdCompressor(write_content_size=False).compress(zeros)
        data = zip_entry("header.json", body, method=ZSTD, crc=zlib.crc32(zeros), size=100)
        e = refusal("bomb.eval", data, decompressed_size=limits.MiB)
        assert isinstance(e, InputLimitError) and e.limit == "decompressed-size"

    def test_a_real_log_well_within_the_limits_still_reads(self) -> None:
        for method in (DEFLATED, ZSTD):
            [record] = parse("log.eval", zip_bytes(eval_entries(log_doc()), method))
            assert isinstance(record, RunRecord) and record.cells


BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


class TestYaml:
    def test_billion_laughs_is_refused_for_its_aliases(self, tmp_path: Path) -> None:
        path = tmp_path / "metadata.yaml"
        path.write_text(BILLION_LAUGHS)
        with pytest.raises(InputLimitError) as e:
            yaml_bounded.load(path)
        assert e.value.limit == "yaml-aliases" and "BENCHLEDGER_LIMIT_YAML_ALIASES" in str(e.value)

    def test_a_few_ordinary_aliases_load(self, tmp_path: Path) -> None:
        path = tmp_path / "metadata.yaml"
        path.write_text("base: &b {x: 1}\none: *b\ntwo:\n  <<: *b\n  y: 2\n")
        assert yaml_bounded.load(path) == {
            "base": {"x": 1},
            "one": {"x": 1},
            "two": {"x": 1, "y": 2},
        }

    def test_an_alias_inside_its_own_anchor_is_refused(self, tmp_path: Path) -> None:
        path = tmp_path / "metadata.yaml"
        path.write_text("info: &x\n  name: [*x]\n")
        with pytest.raises(InputFormatError) as e:
            yaml_bounded.load(path)
        assert str(e.value) == f"{path}:2: invalid YAML: alias *x refers to a node holding it"

    def test_deep_nesting_is_refused_without_a_recursion_error(self, tmp_path: Path) -> None:
        path = tmp_path / "metadata.yaml"
        path.write_text("[" * 100_000 + "]" * 100_000)
        with pytest.raises(InputLimitError) as e:
            yaml_bounded.load(path)
        assert e.value.limit == "depth" and e.value.line == 1

    def test_a_swebench_submission_with_a_billion_laughs_metadata_is_refused(
        self, tmp_path: Path
    ) -> None:
        from tests.unit.test_format_swebench import submission

        path = submission(tmp_path, metadata=BILLION_LAUGHS)
        with pytest.raises(InputLimitError) as e:
            parse(str(path), path.read_bytes())
        assert e.value.path.endswith("metadata.yaml")


DEEP = "[" * 100_000 + "]" * 100_000


class TestJsonBounds:
    @pytest.mark.parametrize(
        ("name", "text"),
        [
            ("r.json", native_json(metrics={"x": "@"}).replace('"@"', DEEP)),
            (
                "r.jsonl",
                native_jsonl(
                    '{"type": "cell", "key": "a", "outcome": "passed", '
                    f'"metrics": {{"x": {DEEP}}}}}'
                ),
            ),
            ("results.json", json.dumps(results_doc(extra="@")).replace('"@"', DEEP)),
            ("log.json", json.dumps(log_doc(extra="@")).replace('"@"', DEEP)),
        ],
    )
    def test_100k_deep_nesting_is_a_clean_refusal(self, name: str, text: str) -> None:
        e = refusal(name, text)
        assert isinstance(e, InputLimitError) and e.limit == "depth"

    def test_nesting_past_the_limit_but_within_python_is_refused_too(self) -> None:
        deep = "[" * 300 + "]" * 300
        e = refusal("r.json", native_json(metrics={"x": "@"}).replace('"@"', deep))
        assert isinstance(e, InputLimitError) and e.limit == "depth"

    @pytest.mark.parametrize("digits", [101, 401, 5000])
    def test_an_integer_of_too_many_digits_is_refused_naming_where(self, digits: int) -> None:
        cell = '{"type": "cell", "key": "a", "outcome": "passed", "metrics": {"n": @}}'
        e = refusal("r.jsonl", native_jsonl(cell.replace("@", "9" * digits)))
        assert isinstance(e, InputLimitError) and e.limit == "int-digits"
        assert f"an integer of {digits} digits exceeds the limit of 100 digits" in str(e)
        # The line when the JSON reader refuses it, the field when the cell would keep it.
        assert e.line == 2 or e.field == "record 1: cells[0].metrics.n"

    def test_an_integer_of_too_many_digits_in_a_json_document_names_its_line(self) -> None:
        text = native_json(metrics={"n": "@"}).replace(", ", ",\n").replace('"@"', "9" * 401)
        e = refusal("r.json", text)
        assert isinstance(e, InputLimitError) and e.limit == "int-digits" and e.line == 6

    def test_an_lm_eval_file_with_a_401_digit_integer_is_refused(self) -> None:
        text = json.dumps(results_doc()).replace('"batch_size": "8"', '"batch_size": ' + "7" * 401)
        e = refusal("results.json", text)
        assert isinstance(e, InputLimitError) and e.limit == "int-digits"

    def test_a_string_over_the_cap_that_the_run_would_keep_is_refused_naming_the_field(
        self,
    ) -> None:
        doc = results_doc()
        doc["config"]["model_args"] = "pretrained=x," + "y" * 5000
        e = refusal("results.json", json.dumps(doc), string_length=1000)
        assert isinstance(e, InputLimitError) and e.limit == "string-length"
        assert e.field is not None and "header.config.model_args" in e.field

    def test_a_lone_surrogate_escape_is_refused_with_its_line(self) -> None:
        text = native_json(metrics={"x": "@"}).replace('"@"', '"\\ud800"').replace(", ", ",\n")
        e = refusal("r.json", text)
        assert "surrogate" in str(e) and e.line is not None and e.field == "metrics.x"

    def test_a_surrogate_pair_written_as_escapes_is_valid_text(self) -> None:
        [record] = parse("r.json", native_json(metrics={"x": "\U0001f600"}))
        assert record.header.metrics == {"x": "\U0001f600"}


HOSTILE = st.one_of(
    st.integers(1, 400).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 400).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.integers(90, 6000).map(lambda n: "9" * n),
    st.integers(0, 3000).map(lambda n: json.dumps("x" * n)),
    st.sampled_from(['"\\ud800"', '"\\udc00x"', '"\\ud83d\\ude00"', "true", "-0", "1e999"]),
    st.sampled_from(['"0.5"', "null", "[]", "{}", '{"a": 1, "a": 2}', "NaN", "-Infinity"]),
)


def places(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            found += places(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            found += places(v, (*prefix, i))
    return found


def with_hostile(doc: Any, data: st.DataObject) -> str:
    """`doc` as JSON text with one value replaced by raw hostile JSON text."""
    spot = data.draw(st.sampled_from(places(doc)))
    parent = doc
    for part in spot[:-1]:
        parent = parent[part]
    parent[spot[-1]] = "\0HOSTILE\0"
    return json.dumps(doc).replace('"\\u0000HOSTILE\\u0000"', data.draw(HOSTILE))


def parses_or_refuses(name: str, text: str) -> None:
    """The contract: records that serialise, or an InputFormatError naming the file."""
    try:
        records = parse(name, text, string_length=1000)
    except InputFormatError as e:
        assert e.path == name or e.path.startswith("--")
        return
    for record in records:
        record.json_bytes()


class TestHostileValuesInEveryJsonParser:
    @FUZZ
    @given(data=st.data())
    def test_native_json(self, data: st.DataObject) -> None:
        doc = {
            **{"schema": native.SCHEMA_ID, **RUN, "score": 0.5, "tokens": {"input": 3}},
            "metrics": {"n": [1, {"k": "v"}]},
            "cells": [{"key": "a", "outcome": "passed"}],
        }
        parses_or_refuses("r.json", with_hostile(doc, data))

    @FUZZ
    @given(data=st.data())
    def test_native_jsonl(self, data: st.DataObject) -> None:
        cell = {"type": "cell", "key": "a", "outcome": "passed", "score": 1, "metrics": {"m": [1]}}
        head = json.dumps({"type": "run", **RUN})
        parses_or_refuses("r.jsonl", head + "\n" + with_hostile(cell, data) + "\n")

    @FUZZ
    @given(data=st.data())
    def test_lm_eval(self, data: st.DataObject) -> None:
        parses_or_refuses("results.json", with_hostile(results_doc(), data))

    @FUZZ
    @given(data=st.data())
    def test_inspect_ai(self, data: st.DataObject) -> None:
        parses_or_refuses("log.json", with_hostile(log_doc(), data))


class _SlipperyFormat:
    """A parser that misses a case and lets a library error out."""

    NAME = SYSTEM = "slippery"

    def detect(self, path: Path, head: bytes) -> bool:
        return True

    def parse(self, path: Path, data: bytes, defaults: dict[str, Any] | None = None) -> Any:
        raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")


class TestOneFileFailsAlone:
    def test_a_library_error_a_parser_let_through_fails_that_file_by_name(self) -> None:
        with pytest.raises(InputFormatError) as e:
            formats.parse(_SlipperyFormat(), Path("odd.json"), b"{}")
        assert str(e.value) == (
            "odd.json: cannot be read as slippery: "
            "Exceeds the limit (4300 digits) for integer string conversion"
        )


YAML_HOSTILE = st.one_of(
    st.text(max_size=200),
    st.integers(1, 3000).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 3000).map(lambda n: "".join(f"{' ' * i}k{i}:\n" for i in range(n)) + "x"),
    st.integers(1, 12).map(lambda n: BILLION_LAUGHS.splitlines()[: n + 1]).map("\n".join),
    st.integers(90, 6000).map(lambda n: "n: " + "9" * n),
    st.sampled_from(["a: &x [*x]", "a: *missing", "? [a]\n: b", "!!python/object:os.system x"]),
)


class TestYamlFuzzing:
    @FUZZ
    @given(text=YAML_HOSTILE)
    def test_any_metadata_yaml_loads_or_is_refused(self, text: str) -> None:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "metadata.yaml"
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            try:
                yaml_bounded.load(path)
            except InputFormatError as e:
                assert e.path == str(path)
