"""The names `discover` gives the files of a directory: those `display_path` gives each."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchledger.adapters.store.importer import _resolved, discover, display_path


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
    (root / "deep" / "loop.jsonl").symlink_to(root / "deep" / "loop.jsonl")
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
            "deep/loop.jsonl",
            "out.jsonl",
        }

    @pytest.mark.parametrize("given", ["itself", "a link to it", "through a linked folder"])
    def test_a_folder_reached_through_links_names_its_files_as_display_path(
        self, tree: Path, tmp_path: Path, given: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Each folder of a walk is resolved once for all its files: the names are those
        of resolving every file whole, whatever links the path to them goes through."""
        (tmp_path / "to-results").symlink_to(tree)
        (tmp_path / "to-parent").symlink_to(tree.parent)
        root = {
            "itself": tree,
            "a link to it": tmp_path / "to-results",
            "through a linked folder": tmp_path / "to-parent" / "results",
        }[given]
        monkeypatch.chdir(tmp_path / "elsewhere")
        found = list(discover([root]))
        assert [f.name for f in found] == [display_path(f.path, root) for f in found]
        assert len(found) == 7

    def test_members_are_resolved_as_resolving_them_whole(self, tree: Path, tmp_path: Path) -> None:
        (tmp_path / "to-results").symlink_to(tree)
        folders: dict[Path, Path] = {}
        paths = [
            *(f.path for f in discover([tmp_path / "to-results"])),
            tree / "deep" / "missing.jsonl",
            Path("relative.jsonl"),
        ]
        for path in paths:
            try:
                whole = path.resolve()
            except RuntimeError:  # the loop
                whole = path.absolute()
            assert _resolved(path, folders) == whole, path

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
            *("results/deep/deeper/c.jsonl", "results/a.jsonl", "results/deep/loop.jsonl"),
            "elsewhere/outside.jsonl",
            "e.jsonl",  # under the working directory
            # From the folder above deep; a link loop is named as itself.
            *("deep/b.jsonl", "deep/deeper/c.jsonl", "a.jsonl", "deep/loop.jsonl"),
        ]
