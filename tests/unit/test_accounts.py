"""Credential pools: which accounts a selection names, how runs rotate over them, what
of their homes is masked, and how the registry declares them."""

from __future__ import annotations

import builtins
import json
import os
import pathlib
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from benchledger.adapters.execution.accounts import AccountPool, choose, home_secrets
from benchledger.adapters.execution.registry import load_registry
from benchledger.domain import run_rules
from benchledger.domain.errors import InputFormatError, NotFoundError
from benchledger.domain.run import RunStarted


def pool_with(tmp_path: Path, *ids: str) -> AccountPool:
    """A Codex pool of logged-in accounts: each home holds an auth.json."""
    root = tmp_path / "homes"
    for account in ids:
        (root / account).mkdir(parents=True)
        (root / account / "auth.json").write_text('{"auth_mode": "chatgpt"}')
    return AccountPool(name="codex", root=root, env="CODEX_HOME")


class TestChoosingAccounts:
    def test_a_count_takes_the_first_ids_in_sorted_order(self, tmp_path: Path) -> None:
        pool = pool_with(tmp_path, "zed", "amy", "kim")
        choice = choose(pool, "2")
        assert [a.id for a in choice.accounts] == ["amy", "kim"] and choice.problems == ()

    def test_a_list_takes_those_ids_in_the_order_given(self, tmp_path: Path) -> None:
        choice = choose(pool_with(tmp_path, "a", "b", "c"), "c, a")
        assert [a.id for a in choice.accounts] == ["c", "a"]

    def test_nothing_takes_every_account_but_hidden_folders_and_files(self, tmp_path: Path) -> None:
        pool = pool_with(tmp_path, "b", "a", ".cache")
        (pool.root / "notes.txt").write_text("not an account")
        assert [a.id for a in choose(pool, None).accounts] == ["a", "b"]

    def test_a_missing_id_is_named_with_where_its_home_should_be(self, tmp_path: Path) -> None:
        pool = pool_with(tmp_path, "a")
        [problem] = choose(pool, "a,ghost").problems
        assert problem == f"account 'ghost' has no home at {pool.root / 'ghost'}"

    def test_asking_for_more_than_there_are_says_how_many_there_are(self, tmp_path: Path) -> None:
        pool = pool_with(tmp_path, "a", "b")
        assert choose(pool, "3").problems == (f"3 accounts asked for, 2 under {pool.root} (a, b)",)

    def test_a_missing_root_has_no_accounts(self, tmp_path: Path) -> None:
        pool = AccountPool(name="codex", root=tmp_path / "absent", env="CODEX_HOME")
        assert choose(pool, None).problems == (f"no account homes under {pool.root}",)

    def test_zero_accounts_is_a_problem(self, tmp_path: Path) -> None:
        assert choose(pool_with(tmp_path, "a"), "0").problems == (
            "--accounts needs at least 1 account",
        )


class TestAuthFiles:
    def test_the_auth_file_defaults_by_the_pool_s_variable(self, tmp_path: Path) -> None:
        def auth_file(env: str, **given: str) -> str | None:
            return AccountPool(name="p", root=tmp_path, env=env, **given).auth_file

        assert auth_file("CODEX_HOME") == "auth.json"
        assert auth_file("CLAUDE_CONFIG_DIR") == ".credentials.json"
        assert auth_file("HERMES_HOME") == ""
        assert auth_file("HERMES_HOME", auth_file="token.json") == "token.json"
        assert auth_file("CODEX_HOME", auth_file="") == ""

    def test_a_home_without_its_auth_file_or_with_an_empty_one_cannot_be_used(
        self, tmp_path: Path
    ) -> None:
        pool = pool_with(tmp_path, "a", "b", "c", "d")
        (pool.root / "b" / "auth.json").unlink()
        (pool.root / "c" / "auth.json").write_text("")
        (pool.root / "d" / "auth.json").unlink()
        (pool.root / "d" / "auth.json").mkdir()
        assert choose(pool, None).problems == (
            f"account 'b' home {pool.root / 'b'} holds no auth.json",
            f"account 'c' auth.json in {pool.root / 'c'} is empty",
            f"account 'd' auth.json in {pool.root / 'd'} is not a regular file",
        )
        assert choose(pool, "a").problems == ()

    def test_the_auth_file_is_never_opened(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        pool = pool_with(tmp_path, "a")
        opened: list[str] = []
        real_open, real_path_open = builtins.open, pathlib.Path.open

        def watched(file: Any, *args: Any, **kwargs: Any) -> Any:
            opened.append(str(file))
            return real_open(file, *args, **kwargs)

        def watched_path(self: pathlib.Path, *args: Any, **kwargs: Any) -> Any:
            opened.append(str(self))
            return real_path_open(self, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", watched)
        monkeypatch.setattr(pathlib.Path, "open", watched_path)
        assert choose(pool, None).problems == ()
        assert not [f for f in opened if f.endswith("auth.json")]

    def test_a_pool_with_no_auth_file_checks_none(self, tmp_path: Path) -> None:
        (tmp_path / "homes" / "h1").mkdir(parents=True)
        pool = AccountPool(name="hermes", root=tmp_path / "homes", env="HERMES_HOME")
        assert choose(pool, None).problems == ()

    def test_an_auth_file_outside_the_home_is_refused(self, tmp_path: Path) -> None:
        path = tmp_path / "benchledger.toml"
        path.write_text('[accounts.codex]\nroot = "a"\nenv = "X"\nauth_file = "../auth.json"\n')
        with pytest.raises(InputFormatError) as raised:
            load_registry(path)
        assert raised.value.field == "accounts.codex.auth_file"


class TestActiveHome:
    def test_an_active_home_pointer_names_the_home_inside_the_account(self, tmp_path: Path) -> None:
        pool = pool_with(tmp_path, "a", "b")
        generation = pool.root / "a" / "generations" / "0123456789abcdef01234567"
        generation.mkdir(parents=True)
        (pool.root / "a" / "auth.json").rename(generation / "auth.json")
        (pool.root / "a" / "active-home").write_text("generations/0123456789abcdef01234567\n")
        (pool.root / "b" / "active-home").write_text(".")
        choice = choose(pool, None)
        assert choice.problems == ()
        assert [a.home for a in choice.accounts] == [generation, pool.root / "b"]
        assert choice.env(0)["CODEX_HOME"] == str(generation)

    @pytest.mark.parametrize("pointer", ["../b", "/etc", "generations/missing", ""])
    def test_a_pointer_leading_nowhere_inside_the_account_is_a_problem(
        self, tmp_path: Path, pointer: str
    ) -> None:
        pool = pool_with(tmp_path, "a", "b")
        (pool.root / "a" / "active-home").write_text(pointer)
        choice = choose(pool, None)
        assert [a.id for a in choice.accounts] == ["b"]
        assert choice.problems == (
            f"account 'a' active-home pointer {pool.root / 'a' / 'active-home'} names no "
            "directory inside the account's",
        )


class TestRotation:
    def test_run_i_gets_account_i_mod_n_and_every_run_the_whole_pool(self, tmp_path: Path) -> None:
        choice = choose(pool_with(tmp_path, "a", "b", "c"), "3")
        homes = os.pathsep.join(str(choice.pool.root / i) for i in "abc")
        assert [choice.env(i)["CODEX_HOME"] for i in range(4)] == [
            str(choice.pool.root / i) for i in "abca"
        ]
        assert {choice.env(i)["CODEX_HOMES"] for i in range(4)} == {homes}

    def test_the_pool_variable_can_be_named(self, tmp_path: Path) -> None:
        pool = AccountPool(name="p", root=tmp_path, env="CODEX_HOME", pool_env="ALL_HOMES")
        assert pool.pool_env == "ALL_HOMES"


class TestWhatAHomeHolds:
    def test_the_secret_looking_strings_of_its_json_files_are_to_be_masked(
        self, tmp_path: Path
    ) -> None:
        pool = pool_with(tmp_path, "a")
        auth = {"auth_mode": "chatgpt", "tokens": {"access_token": "tok-9f8e7d6c5b4a", "n": [1]}}
        (pool.root / "a" / "auth.json").write_text(json.dumps(auth))
        (pool.root / "a" / "broken.json").write_text("{not json")
        assert home_secrets(choose(pool, None).accounts) == ["tok-9f8e7d6c5b4a"]


class TestTheRegistryDeclaresPools:
    def test_a_pool_s_root_expands_home_and_is_relative_to_the_registry(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "benchledger.toml"
        path.write_text(
            textwrap.dedent(
                """\
                [accounts.codex]
                root = "auth/_codex-home"
                env = "CODEX_HOME"

                [accounts.other]
                root = "~/homes"
                env = "OTHER_HOME"
                pool_env = "OTHER_POOL"
                """
            )
        )
        registry = load_registry(path)
        codex = registry.account_pool("codex")
        assert codex is not None and codex.root == tmp_path / "auth" / "_codex-home"
        assert (codex.env, codex.pool_env) == ("CODEX_HOME", "CODEX_HOMES")
        other = registry.account_pool("codex", "other")
        assert other is not None and other.root == Path("~/homes").expanduser()
        assert registry.account_pool("eliza") is None
        with pytest.raises(NotFoundError, match="unknown account pool 'nope'"):
            registry.account_pool("codex", "nope")

    def test_an_unknown_key_in_a_pool_is_named(self, tmp_path: Path) -> None:
        path = tmp_path / "benchledger.toml"
        path.write_text('[accounts.codex]\nroot = "a"\nenv = "X"\ntoken = "no"\n')
        with pytest.raises(InputFormatError) as raised:
            load_registry(path)
        assert raised.value.field == "accounts.codex.token"


class TestTheRunRecordsItsAccount:
    def test_the_start_event_names_the_account_id(self) -> None:
        now = datetime.now(UTC)
        event = run_rules.begin(
            uuid4(),
            run_key="k",
            benchmark="b",
            agent="codex",
            provider="openai",
            model="m",
            config={},
            attempt=1,
            run_group_id=None,
            command=["x"],
            cwd=".",
            host="h",
            started_at=now,
            lease_expires_at=now,
            run_dir="d",
            account="acct-a",
        )
        assert event.account == "acct-a"

    def test_a_start_event_stored_before_accounts_existed_still_decodes(self) -> None:
        stored = {
            "originator_id": str(uuid4()),
            "originator_version": 1,
            "timestamp": datetime.now(UTC).isoformat(),
            "run_key": "k",
            "benchmark": "b",
            "agent": "a",
            "provider": "p",
            "model": "m",
            "config": {},
            "signature": "s",
            "comparison_signature": "c",
            "source": "executed",
        }
        assert RunStarted.model_validate(stored).account is None
