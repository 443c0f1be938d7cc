"""Secrets of every shape, under secret names and inside any text, are masked; token
counts, scores and keys never are; a run's secrets are masked in every spelling."""

from __future__ import annotations

import base64
import os
import random
import re
import time
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchledger.adapters.execution.secrets import Redactor, secret_values, spellings
from benchledger.adapters.formats.native_cells import row_of
from benchledger.domain import secret_text, secrets
from benchledger.domain.cells import CellRows
from benchledger.domain.masked_records import masked_cells, masked_record
from benchledger.domain.records import Cell, RunHeader, RunRecord, RunStatus, SkipRecord
from benchledger.domain.secrets import MASK, mask_config, mask_text, mask_value

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9P"


class TestSecretNamesWhateverTheShape:
    def test_a_secret_own_name_masks_numbers_lists_and_nested_objects(self) -> None:
        config = {
            "password": 12345678,
            "api_key": ["one-key", "two-key"],
            "credentials": {"user": "bob", "pin": 1234, "enabled": True, "note": None},
            "Client-Secret": "letters",
            "private_key": "keymaterial",
            "access_key": 42,
            "cookie": "session=abc",
        }
        assert mask_config(config) == {
            "password": MASK,
            "api_key": [MASK, MASK],
            "credentials": {"user": MASK, "pin": MASK, "enabled": True, "note": None},
            "Client-Secret": MASK,
            "private_key": MASK,
            "access_key": MASK,
            "cookie": MASK,
        }

    @pytest.mark.parametrize(
        "name",
        ["tokens", "total_tokens", "max_tokens", "input_tokens", "num_prompt_tokens",
         "reasoning_tokens", "token_budget", "token_limit", "password_length",
         "secrets_found", "key_count", "cache_read_input_tokens", "top_k_per_token"],
    )  # fmt: skip
    def test_counts_about_secrets_and_tokens_stay(self, name: str) -> None:
        assert mask_value({name: 4096}) == {name: 4096}

    @pytest.mark.parametrize(
        ("name", "value"),
        [("tokenizer_eos_token", "<|endoftext|>"), ("eos_token", "</s>"),
         ("pad_token", "<pad>"), ("createAuthToken", '{"username": "johndoe"}'),
         ("sort_key", "score"), ("use_auth", "true")],
    )  # fmt: skip
    def test_vocabulary_tokens_function_calls_and_plain_words_stay(
        self, name: str, value: str
    ) -> None:
        assert mask_value({name: value}) == {name: value}

    def test_what_holds_nothing_to_mask_is_returned_itself(self) -> None:
        value: dict[str, Any] = {"a": [1, "text", {"b": "c"}], "n": 2.5}
        assert mask_value(value) is value


class TestCommandLinesKeptAsLists:
    """A command recorded as a list (an orchestrator row's `command_json`, a run's argv):
    the value after an option naming a secret is masked as that name says, whatever its
    shape; options and values that name none stay."""

    @pytest.mark.parametrize(
        ("command", "masked_at"),
        [
            (["python", "-m", "bfcl", "--api-key", "q1w2e3r4t5y6"], 4),
            (["run", "--hf-token", "abcdefgh12345678", "--limit", "5"], 2),
            (("serve", "--password", "hunter2"), 2),
            (["x", "--client-secret", "s3cr3tValue"], 2),
        ],
    )
    def test_the_value_after_a_secret_option_is_masked(
        self, command: list[str] | tuple[str, ...], masked_at: int
    ) -> None:
        for value, found in ((command, mask_value(command)), (command, None)):
            held = {"command": value, "n": 1}
            masked = mask_value(held)["command"] if found is None else found
            assert masked[masked_at] == MASK, masked
            assert [m for i, m in enumerate(masked) if i != masked_at] == [
                c for i, c in enumerate(command) if i != masked_at
            ]
            assert type(masked) is type(command)
        assert not secrets.masks_nothing([{"command": command}])

    @pytest.mark.parametrize(
        "command",
        [
            ["--model", "gpt-4o", "--max-tokens", "4096"],
            ["--sort-key", "score", "--token", "--verbose"],
            ["--api-key"],
            ["eval", "--auth-mode", "none"],
        ],
    )
    def test_options_naming_no_secret_and_flags_stay(self, command: list[str]) -> None:
        assert mask_value(command) is command
        held = {"command": command}
        assert mask_value(held) is held

    def test_a_secret_option_value_is_hunted_elsewhere(self) -> None:
        config = {"argv": ["run", "--api-key", "q1w2e3r4t5y6"]}
        assert secrets.config_secrets(config) == ["q1w2e3r4t5y6"]


class TestObjectsLookedAtWhole:
    """An object is first looked at whole (its names, then all its strings in one search);
    whatever that look lets through, the value-by-value masking would have kept."""

    NESTED_SECRETS: tuple[Any, ...] = (
        {"source_columns": {"cwd": "/srv", "env": {"gh_pat": "abcd1234efgh"}}},
        {"a": {"b": [{"c": 1}, {"hf_token": "hf_abcdefghijklmnopqrstu1"}]}},
        {"run": {"pin": 1, "args": ["--limit", "50", "--api-key=q1w2e3r4t5y6"]}},
        {"token_metrics": {"total_tokens": 9701, "refresh_token": 12345678}},
        {"a": ("plain", "https://user:hunter22@example.com/v1")},
        {"a": [["nested", "Bearer abcdefgh12345678"]]},
        {"a": {"credentials": {"user": "bob"}}},
        {"n": 1, 7: "sk-abcdefghijklmnop12345678"},
        {"n": 1, "log": "x" * 5000 + " password=hunter2hunter2"},
        {"n": 1, "logs": ["x" * (1 << 20), "password=hunter2hunter2"]},
    )

    @pytest.mark.parametrize("value", NESTED_SECRETS)
    def test_a_secret_deep_inside_plain_names_is_masked(self, value: dict[Any, Any]) -> None:
        masked = mask_value(value)
        assert masked is not value
        assert MASK in repr(masked)
        assert masked == secrets._masked(value, "", False)  # as masked value by value

    def test_an_object_with_nothing_to_mask_has_its_strings_searched_once(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        calls: list[str] = []
        real = secrets.mask_text

        def counted(text: str) -> str:
            calls.append(text)
            return real(text)

        monkeypatch.setattr(secrets, "mask_text", counted)
        value: dict[str, Any] = {
            "token_metrics": {"total_tokens": 9701, "telemetry_missing": False},
            "command": ["python", "-m", "benchmarks.bfcl", "--limit", "50"],
            "cwd": "/srv/eliza/benchmarks/bfcl",
            "artifacts": ["/srv/eliza/benchmark_results/rg_1/output"],
            "score": 0.5,
            "error": None,
        }
        assert mask_value(value) is value
        assert calls == []
        value["cwd"] = "https://user:hunter22@example.com/v1"
        assert mask_value(value)["cwd"] == f"https://user:{MASK}@example.com/v1"
        assert len(calls) == 7  # then each string on its own


class TestHintsOfSecretsInText:
    def test_the_hints_pattern_finds_what_any_hint_alone_finds(self) -> None:
        rng = random.Random(39)
        texts = [f"x{hint}y" for hint in secret_text._HINTS]
        texts += [hint[:-1] for hint in secret_text._HINTS]
        alphabet = "abcehikopstuwxyz:/-_ "
        texts += ["".join(rng.choices(alphabet, k=rng.randint(0, 40))) for _ in range(20_000)]
        for text in texts:
            found = secret_text._HINTED.search(text) is not None
            assert found == any(hint in text for hint in secret_text._HINTS), text

    # Texts made of hints, their pieces and what cuts them (slashes, line breaks, `:`),
    # with letters whose lower case is another letter, longer, or depends on its place.
    HINTED_TEXTS = st.lists(
        st.lists(
            st.one_of(
                st.sampled_from(secret_text._HINTS),
                st.sampled_from([h[: len(h) // 2] for h in secret_text._HINTS]),
                st.text(alphabet="abeiknoptwy:/-_\n KİΣ", max_size=8),
            ),
            max_size=6,
        ).map("".join),
        max_size=5,
    )

    @settings(max_examples=400, deadline=None)
    @given(calls=st.lists(HINTED_TEXTS, max_size=8), chars=st.integers(1, 60))
    def test_texts_are_hinted_as_their_one_search_finds_whatever_was_searched_before(
        self, calls: list[list[str]], chars: int
    ) -> None:
        # Pieces found free of hints are remembered (a few characters' worth, here) and
        # not searched again: each call still answers as one search of all its texts.
        clean = secret_text._CleanPieces()
        clean.CHARS = chars
        with mock.patch.object(secret_text, "_CLEAN", clean):
            for texts in calls:
                found = secret_text._HINTED.search(secret_text._lowered("\n".join(texts)))
                assert secret_text.any_hinted(texts) == (found is not None), texts

    def test_a_word_that_begins_another_stands_for_both(self) -> None:
        pattern = re.compile(secret_text._any_of(["key", "keyword", "token", "to"]))
        assert pattern.pattern == "(?:key|to)"
        assert [bool(pattern.search(t)) for t in ("keyw", "ke", "t", "tox")] == [
            True, False, False, True
        ]  # fmt: skip


class TestSecretsInText:
    @pytest.mark.parametrize(
        ("text", "masked"),
        [
            ("pretrained=m,base_url=https://u:pw@h/v1", f"pretrained=m,base_url=https://u:{MASK}@h/v1"),
            ("postgresql://bench:s3cret@db:5432/x", f"postgresql://bench:{MASK}@db:5432/x"),
            ("git clone https://ghp_0123456789abcdefghijAB@github.com/x",
             f"git clone https://{MASK}@github.com/x"),
            ("ssh://git@github.com/x", "ssh://git@github.com/x"),
            ("http://localhost:8080/v1", "http://localhost:8080/v1"),
            ("Authorization: Bearer x", f"Authorization: Bearer {MASK}"),
            ("authorization: Basic dXNlcjpw", f"authorization: Basic {MASK}"),
            ("Proxy-Authorization: Basic dXNlcjpw", f"Proxy-Authorization: Basic {MASK}"),
            ('-H "X-Api-Key: abc"', f'-H "X-Api-Key: {MASK}"'),
            ('{"api-key": "two words"}', f'{{"api-key": "{MASK}"}}'),
            ('{\\"password\\": \\"pa ss\\"}', f'{{\\"password\\": \\"{MASK}\\"}}'),
            ("model_args: pretrained=m,api_key=abc", f"model_args: pretrained=m,api_key={MASK}"),
            ("run --password hunter2 now", f"run --password {MASK} now"),
            (f"token {JWT} end", f"token {MASK} end"),
            ("use sk-proj-abcdEFGH12345678ijkl", f"use {MASK}"),
            ("AIzaSyA1234567890abcdefghijklmnopqrstuv", MASK),
            ("slack xoxb-123456789012-abcdefGHIJ", f"slack {MASK}"),
            ("-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----\nok",
             f"{MASK}\nok"),
            ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n", MASK),
        ],
    )  # fmt: skip
    def test_secrets_are_masked_where_they_stand(self, text: str, masked: str) -> None:
        assert mask_text(text) == masked
        assert mask_text(masked) == masked  # masking twice masks nothing more

    @pytest.mark.parametrize(
        "text",
        ["max_tokens=100 token_limit: 4096 total_tokens=5", "the bearer of news",
         "__workspace__RWKV-block__test__v7_goose__.hf_build__v7-1B5-world__",
         "sort_key=score", "tokens: 512", "scikit-learn__scikit-learn-12345"],
    )  # fmt: skip
    def test_ordinary_text_is_left_alone(self, text: str) -> None:
        assert mask_text(text) is text


def record(metrics: dict[str, Any], cell_metrics: dict[str, Any]) -> RunRecord:
    header = RunHeader(
        run_key="r1",
        benchmark="b",
        agent="a",
        model="m",
        config={"api_key": "abcdefgh12345", "limit": 5},
        status=RunStatus.FAILED,
        score=0.5,
        metrics=metrics,
        tokens={"input_tokens": 10},
        error="auth failed for key abcdefgh12345",
        provenance={"endpoint": "https://u:pw@h/v1"},
    )
    return RunRecord(
        header=header,
        cells=(
            Cell(key="c1", outcome="passed", score=1.0, metrics=cell_metrics),
            Cell(key="c2", outcome="failed", score=0.0),
        ),
    )


class TestMaskedRecords:
    def test_secrets_are_masked_and_scores_keys_tokens_and_signatures_stay(self) -> None:
        stated = record({"password": 1234, "n": 3}, {"log": "Authorization: Bearer abc"})
        masked = masked_record(stated)
        assert masked.header.metrics == {"password": MASK, "n": 3}
        assert masked.header.error == f"auth failed for key {MASK}"
        assert masked.header.provenance == {"endpoint": f"https://u:{MASK}@h/v1"}
        assert masked.cells[0].metrics == {"log": f"Authorization: Bearer {MASK}"}
        assert masked.cells[1] is stated.cells[1]
        for field in ("run_key", "score", "tokens", "status", "config"):
            assert getattr(masked.header, field) == getattr(stated.header, field)
        assert [(c.key, c.score, c.outcome) for c in masked.cells] == [
            (c.key, c.score, c.outcome) for c in stated.cells
        ]
        assert masked.header.signature == stated.header.signature
        assert masked.content_sha256() != stated.content_sha256()

    def test_a_record_with_nothing_to_mask_is_returned_itself(self) -> None:
        stated = record({"n": 3}, {"log": "fine"})
        stated = stated.model_copy(
            update={"header": stated.header.model_copy(update={"error": None, "provenance": {}})}
        )
        assert masked_record(stated) is stated

    @pytest.mark.parametrize("as_rows", [False, True], ids=["models", "rows"])
    @pytest.mark.parametrize(
        "odd",
        [{"api_key": 1234567890}, {"n": True}, {"note": "Bearer abcdefgh1234"}, {"s": "plain"}],
    )
    def test_among_many_cells_of_plain_numbers_the_one_to_mask_is_masked(
        self, odd: dict[str, Any], as_rows: bool
    ) -> None:
        """Cells held as models or as rows (a native JSONL file's): masked alike, the
        cells read left as they were."""
        cells = [
            Cell(key=f"k{i}", outcome="passed", metrics={"total_tokens": i}) for i in range(50)
        ]
        cells.insert(17, Cell(key="odd", outcome="failed", metrics=odd))
        held = CellRows.completed([row_of(c) for c in cells]) if as_rows else cells
        masked = masked_cells(held)
        assert isinstance(masked, CellRows) is as_rows
        assert masked[17] == cells[17].model_copy(update={"metrics": mask_value(odd)})
        assert [c for i, c in enumerate(masked) if i != 17] == cells[:17] + cells[18:]
        assert list(held) == cells

    def test_cells_of_plain_numbers_are_returned_themselves(self) -> None:
        cells = [
            Cell(key=f"k{i}", outcome="passed", metrics={"latency_ms": i, "cost": i / 3})
            for i in range(50)
        ]
        assert masked_cells(cells) is cells

    @pytest.mark.parametrize(
        ("field", "value", "masked"),
        [("metrics", {"run": {"gh_pat": "abcd1234efgh"}}, {"run": {"gh_pat": MASK}}),
         ("provenance", {"argv": ["--token=abcd1234efgh"]}, {"argv": [f"--token={MASK}"]}),
         ("error", "Bearer abcdefgh12345678", f"Bearer {MASK}")],
    )  # fmt: skip
    def test_one_secret_among_a_run_with_nothing_else_to_mask_is_masked(
        self, field: str, value: Any, masked: Any
    ) -> None:
        plain = record({"n": 3}, {"log": "fine"})
        header = plain.header.model_copy(update={"error": None, "provenance": {}, field: value})
        assert getattr(
            masked_record(plain.model_copy(update={"header": header})).header, field
        ) == (masked)

    def test_each_run_is_hunted_for_its_own_config_secrets_when_configs_repeat(self) -> None:
        def run(config: dict[str, Any], error: str) -> RunRecord:
            plain = record({"n": 3}, {"log": "fine"})
            update = {"config": config, "error": error, "provenance": {}}
            return plain.model_copy(update={"header": plain.header.model_copy(update=update)})

        # Configs are kept apart as their JSON is (5 and 5.0 are equal in Python only).
        first = {"api_key": "abcdefgh12345", "limit": 5}
        other = {"api_key": "zyxwvuts98765", "limit": 5}
        errors = "keys abcdefgh12345 and zyxwvuts98765"
        for config, masked in [
            (first, f"keys {MASK} and zyxwvuts98765"),
            (other, f"keys abcdefgh12345 and {MASK}"),
            (dict(first), f"keys {MASK} and zyxwvuts98765"),
            ({"api_key": "abcdefgh12345", "limit": 5.0}, f"keys {MASK} and zyxwvuts98765"),
            ({"limit": 5}, errors),
        ]:
            assert masked_record(run(config, errors)).header.error == masked

    def test_a_secret_in_a_run_supplement_is_masked(self) -> None:
        plain = record({"n": 3}, {"log": "fine"})
        stated = plain.model_copy(update={"supplement": {"note": "token=abcd1234efgh"}})
        assert masked_record(stated).supplement == {"note": f"token={MASK}"}

    def test_a_skip_detail_is_masked(self) -> None:
        skip = SkipRecord(benchmark="b", agent="a", reason="r", detail="Bearer abcdefgh1234")
        assert masked_record(skip).detail == f"Bearer {MASK}"


class TestRunSecretSpellings:
    def test_letters_only_values_of_secret_own_names_are_hunted_from_eight_characters(
        self,
    ) -> None:
        env = {
            "DB_PASSWORD": "correcthorse",
            "OPENAI_API_KEY": "dummy",
            "AUTH_MODE": "disabled",
            "GH_PAT": "abcdefghij",
            "SERVICE_TOKEN": "true",
        }
        assert secret_values(env) == ["correcthorse", "abcdefghij"]

    def test_a_url_password_under_any_name_is_hunted(self) -> None:
        env = {"DATABASE_URL": "postgresql://u:pgPassw0rd99@db/x", "HOME": "/root"}
        assert secret_values(env) == ["pgPassw0rd99"]

    @pytest.mark.parametrize("pad", ["", "a", "ab", "abc"])
    def test_base64_at_any_alignment_is_masked(self, pad: str) -> None:
        secret = "correcthorsebattery"
        redactor = Redactor([secret])
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode((pad + secret + "tail").encode()).decode()
            assert MASK in redactor.redact(encoded)

    def test_json_escaped_and_url_encoded_spellings(self) -> None:
        assert {'qu\\"ote\\\\x-12345', "qu%22ote%5Cx-12345"} <= spellings('qu"ote\\x-12345')

    def test_a_secret_split_across_writes_and_lines_is_masked_whole(self) -> None:
        secret = "correcthorsebattery"
        stream = Redactor([secret]).stream()
        pieces = [b"start corr", b"ecthorse", b"bat\n", b"tery end\n", b"next line\n"]
        written = b"".join(stream.feed(p) for p in pieces) + stream.end()
        assert written == f"start {MASK} end\nnext line\n".encode()


class TestLogPump:
    def test_an_abandoned_pipe_still_gets_what_the_mask_held_back(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from benchledger.adapters.execution import process

        monkeypatch.setattr(process, "_JOIN_SECONDS", 0.2)
        secret = "correcthorsebattery"
        read, write = os.pipe()
        log = (tmp_path / "stdout.log").open("wb")
        with os.fdopen(read, "rb") as source:
            pump = process._Pump(source, log, Redactor([secret]))
            os.write(write, f"key {secret} then the last line\n".encode())
            time.sleep(0.2)
            pump.finish()  # the writer still holds the pipe: abandoned
            os.close(write)
        assert (tmp_path / "stdout.log").read_bytes() == f"key {MASK} then the last line\n".encode()
