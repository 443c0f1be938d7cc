"""Edges of reading and showing input: keys stated twice (JSON, YAML), arrays past their
bound, NUL bytes, and text a terminal would act on, shown escaped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchledger.adapters.formats import limits, yaml_bounded
from benchledger.adapters.formats.common import loads, loads_all, long_array
from benchledger.adapters.formats.limits import Limits
from benchledger.commands.messages import error_text
from benchledger.commands.output import cell_text, json_text, printable, table
from benchledger.domain.errors import InputFormatError, InputLimitError


def refusal(text: str, **options: object) -> InputFormatError:
    with pytest.raises(InputFormatError) as e:
        loads("f.json", text, **options)  # type: ignore[arg-type]
    return e.value


class TestKeysStatedTwice:
    def test_json_refuses_a_repeat_naming_key_and_line(self) -> None:
        e = refusal('{\n  "a": 1,\n  "b": {"x": 1,\n "x": 2}\n}')
        assert str(e) == 'f.json:4: duplicate key "x" in one object'

    def test_json_refuses_a_repeat_on_every_path_through_the_decoder(self) -> None:
        long_int = "1" * 150  # past the digit limit: read by the checked decoder
        assert 'duplicate key "k"' in str(refusal('{"k": 1, "k": 2}'))
        with limits.applied(Limits(int_digits=200)):
            assert 'duplicate key "k"' in str(refusal(f'{{"k": {long_int}, "k": 2}}'))

    def test_distinct_keys_and_the_same_key_in_different_objects_are_read(self) -> None:
        assert loads("f.json", '[{"k": 1}, {"k": 2}]') == [{"k": 1}, {"k": 2}]
        assert loads("f.json", '{"k": 1, "K": 2}') == {"k": 1, "K": 2}

    def test_a_repeat_may_still_be_read_where_asked(self) -> None:
        assert loads("f.json", '{"k": 1, "k": 2}', unique_keys=False) == {"k": 2}

    def test_the_texts_of_a_table_row_refuse_a_repeat_naming_the_column(self) -> None:
        with pytest.raises(InputFormatError) as e:
            loads_all("db", ['{"a": 1}', '{"n": 1, "n": 2}'], ["t.a_json", "t.b_json"])
        assert e.value.field == "t.b_json" and 'duplicate key "n"' in str(e.value)
        assert loads_all("db", ['{"a": 1}', "[1]"], ["x", "y"]) == [{"a": 1}, [1]]

    def test_yaml_refuses_a_repeat_naming_key_and_line(self, tmp_path: Path) -> None:
        with pytest.raises(InputFormatError) as e:
            yaml_bounded.load(tmp_path / "m.yaml", b"a: 1\nb:\n  c: 1\n  c: 2\n")
        assert str(e.value).endswith("m.yaml:4: invalid YAML: duplicate key 'c' in one mapping")

    def test_yaml_lets_a_mapping_override_what_a_merge_brings(self, tmp_path: Path) -> None:
        text = b"base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  x: 5\n"
        loaded = yaml_bounded.load(tmp_path / "m.yaml", text)
        assert loaded["derived"] == {"x": 5, "y": 2}


class TestArraysAndNulBytes:
    def test_an_array_past_the_limit_is_refused_naming_where_it_is(self) -> None:
        doc = json.dumps({"metrics": {"ok": [1, 2], "big": list(range(11))}})
        with limits.applied(Limits(array_length=10)), pytest.raises(InputLimitError) as e:
            loads("f.json", doc)
        assert e.value.field == "metrics.big"
        assert "an array of 11 elements exceeds the limit of 10 elements" in str(e.value)
        with limits.applied(Limits(array_length=11)):
            assert loads("f.json", doc)["metrics"]["big"] == list(range(11))

    def test_long_array_finds_the_first_array_past_the_limit(self) -> None:
        assert long_array({"a": [[1, 2, 3]], "b": [1]}, 2) == ("a[0]", 3)
        assert long_array([1, 2, 3], 2) == ("", 3)
        assert long_array({"a": [1, 2]}, 2) is None

    def test_a_nul_byte_is_refused_before_decoding(self) -> None:
        e = refusal(b'{"a":\n "\x00"}'.decode())  # a str: the scanner refuses it
        assert "f.json:2:" in str(e)
        with pytest.raises(InputFormatError) as raw:
            loads("f.json", b'{"a":\n "\x00"}')
        assert str(raw.value) == "f.json:2: invalid JSON: a NUL byte (at byte 8)"

    def test_yaml_refuses_a_nul_byte(self, tmp_path: Path) -> None:
        with pytest.raises(InputFormatError) as e:
            yaml_bounded.load(tmp_path / "m.yaml", b"a: 1\nb: \x00\n")
        assert "m.yaml:2: invalid YAML: a NUL byte" in str(e.value)


class TestTextForATerminal:
    OSC = "title\x1b]0;pwned\x07 csi\x9b2J del\x7f"

    def test_printable_escapes_what_a_terminal_acts_on_and_keeps_tab_and_newline(self) -> None:
        shown = printable(self.OSC + "\tx\ny\rz\x00")
        assert shown == "title\\x1b]0;pwned\\x07 csi\\x9b2J del\\x7f\tx\ny\\x0dz\\x00"
        assert printable("plain — unicode ✓") == "plain — unicode ✓"

    def test_a_cell_is_one_line(self) -> None:
        assert cell_text("a\nb\tc\r") == "a\\nb\\tc\\r"
        rows = table(["name", "n"], [["two\nlines", "1"], ["x", "2"]]).splitlines()
        assert len(rows) == 4 and "two\\nlines" in rows[2]

    def test_json_output_escapes_del_and_c1_and_states_the_same_value(self) -> None:
        value = {"e": self.OSC + " é"}
        text = json_text(value)
        assert not any(c in text for c in "\x1b\x07\x9b\x7f")
        assert "é" in text and json.loads(text) == value

    def test_an_error_is_shown_escaped_wrapped_or_not(self) -> None:
        for width in (None, 60):
            assert "\x1b" not in error_text(f"f.json: {self.OSC}", width)
            assert "\\x1b]0;pwned" in error_text(f"f.json: {self.OSC}", width)

    def test_the_commands_that_echo_a_stored_text_escape_it(self) -> None:
        """Texts a command prints as they are (a comparison, a head-to-head report, a
        preflight or review line) go through `printable` too."""
        import click
        from click.testing import CliRunner

        from benchledger.commands import head_to_head

        @click.command()
        def failing() -> None:
            head_to_head._preflight(f"agent not ready: {self.OSC}")

        result = CliRunner().invoke(failing)
        assert "\x1b" not in result.stderr and "\\x1b]0;pwned" in result.stderr
        for module in ("compare", "head_to_head", "review", "checks", "variant_matrices"):
            source = (Path(__file__).parents[2] / "commands" / f"{module}.py").read_text(
                encoding="utf-8"
            )
            assert "printable(" in source, module
