"""The names `discover` gives the files of a directory: those `display_path` gives each."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchledger.adapters.store.importer import discover, display_path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A folder of results: nested files, a hidden one, a link to a file outside it, a
    link to a file inside it, a broken link and a link to a directory (not followed)."""
    root = tmp_path / "results"
    (root / "deep" / "deeper").mkdir(parents=True)
    (root / ".hidden").mkdir()
    outside = tmp_path / "elsewhere" / "outside.jsonl"
    outside.parent.mkdir()
    for path in (
        root / "a.jsonl",
        root / "deep" / "b.jsonl",
        root / "deep" / "deeper" / "c.jsonl",
        root / ".hidden" / "d.jsonl",
        outside,
    ):
        path.write_text("{}\n")
    (root / "out.jsonl").symlink_to(outside)
    (root / "deep" / "in.jsonl").symlink_to(root / "a.jsonl")
    (root / "broken.jsonl").symlink_to(tmp_path / "gone.jsonl")
    (root / "dir-link").symlink_to(root / "deep")
    return root


class TestDiscoveredNames:
    @pytest.mark.parametrize("where", ["above", "inside", "elsewhere"])
    def test_each_file_is_named_as_display_path_names_it(
        self, tree: Path, where: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        cwd = {
            "above": tree.parent,
            "inside": tree / "deep",
            "elsewhere": tree.parent / "elsewhere",
        }
        monkeypatch.chdir(cwd[where])
        found = list(discover([tree]))
        assert [f.name for f in found] == [display_path(f.path, tree) for f in found]
        assert {f.path.relative_to(tree).as_posix() for f in found} == {
            "a.jsonl",
            "broken.jsonl",
            "deep/b.jsonl",
            "deep/deeper/c.jsonl",
            "deep/in.jsonl",
            "out.jsonl",
        }

    def test_a_folder_given_relative_names_its_files_from_the_working_directory(
        self, tree: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tree.parent)
        names = {f.name for f in discover([Path("results")])}
        assert "results/deep/deeper/c.jsonl" in names
        assert "elsewhere/outside.jsonl" in names  # a link is named as the file it points to
        assert "results/broken.jsonl" in names  # a broken link as itself
        assert os.path.islink(tree / "deep" / "in.jsonl") and "results/a.jsonl" in names

    def test_a_folder_outside_the_working_directory_names_files_from_the_folder_above_it(
        self, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        elsewhere = tmp_path / "cwd"
        elsewhere.mkdir()
        monkeypatch.chdir(elsewhere)
        names = {f.name for f in discover([tree])}
        assert {"results/a.jsonl", "results/deep/b.jsonl", "elsewhere/outside.jsonl"} <= names

    def test_each_folder_names_its_files_from_the_folder_above_itself(
        self, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        other = tmp_path / "more" / "runs"
        other.mkdir(parents=True)
        (other / "e.jsonl").write_text("{}\n")
        monkeypatch.chdir(other)
        names = [f.name for f in discover([tree, other.parent, tree / "deep"])]
        assert names == [
            *("results/a.jsonl", "results/broken.jsonl", "results/deep/b.jsonl"),
            *("results/deep/deeper/c.jsonl", "results/a.jsonl"),
            "elsewhere/outside.jsonl",
            "e.jsonl",  # under the working directory
            *("deep/b.jsonl", "deep/deeper/c.jsonl", "a.jsonl"),  # from the folder above deep
        ]
