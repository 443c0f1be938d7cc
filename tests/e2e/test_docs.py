"""The documentation site builds without a broken link, and every command it shows runs.

A fenced block holding `benchledger` commands is preceded by an HTML comment saying what
it is: `<!-- run: FIXTURE -->` (each `$ benchledger ...` line is run, in order, in a fresh
folder prepared as FIXTURE names, and must exit 0, or N when the line ends `# exits N`),
`<!-- not run: REASON -->` (it needs what a test cannot have; NOT_RUN lists every one) or
`<!-- synopsis -->` (a command's syntax, not a command). The README's session is run by
test_readme.py, the inspect page's (`<!-- inspect-session -->`) by test_inspect_hooks.py.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchledger.commands.cli import cli

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MKDOCS = Path(sys.executable).parent / "mkdocs"
BLOCK = re.compile(
    r"(?:<!-- (?P<tag>[^>]*?) -->\n)?^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```", re.S | re.M
)
EXITS = re.compile(r"\s+#\s*exits (\d+)\s*$")
FIXTURES = ("empty", "demo", "examples", "examples-imported", "examples-postgres")
# A page's PostgreSQL URL; in the `examples-postgres` fixture it names a fresh schema of
# BENCHLEDGER_TEST_POSTGRES_URL's database, and the block skips without that variable.
DOC_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/ledger"
POSTGRES_URL = os.environ.get("BENCHLEDGER_TEST_POSTGRES_URL")

# Every block shown but not run, and why: a registry, a server or a checkout a test lacks.
NOT_RUN = {
    ("running.md", "needs a registry (benchledger.toml) and the benchmarks' checkouts"),
    ("publishing.md", "needs a registry, the benchmarks and credentials"),
    ("publishing.md", "serve runs until stopped (the README's main command is tested serving)"),
    ("serve.md", "serve runs until stopped (the README's main command is tested serving)"),
    ("comparisons.md", "runs benchmarks from a registry against a model server"),
    ("orchestrator.md", "needs an orchestrator results root"),
    ("head-to-head.md", "needs a head-to-head report's summary.json from an earlier run"),
    ("profiles.md", "needs a registry (benchledger.toml) and the orchestrator's profiles"),
    ("static-checks.md", "needs a registry (benchledger.toml) and the benchmarks' checkouts"),
    ("models.md", "needs the shared corpus of real result files"),
    ("inspect.md", "installs from a package index"),
}


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    tag: str
    body: str

    @property
    def commands(self) -> list[str]:
        lines = [line.strip() for line in self.body.splitlines()]
        return [line.removeprefix("$ ") for line in lines if shows_a_command(line)]


def shows_a_command(line: str) -> bool:
    return line.startswith(("$ benchledger", "benchledger ")) or line.startswith("$ ")


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in BLOCK.finditer(text):
            if match["lang"] in ("json", "toml", "yaml", "jsonl"):
                continue
            block = Block(
                page.name,
                text[: match.start("body")].count("\n"),
                (match["tag"] or "").strip(),
                match["body"],
            )
            if block.commands:
                found.append(block)
    return found


def to_run() -> list[Block]:
    return [b for b in blocks() if b.tag.startswith("run:")]


class TestEveryCommandShownIsAccountedFor:
    def test_each_block_of_commands_says_whether_it_is_run(self) -> None:
        unmarked = [
            f"{b.page}:{b.line}"
            for b in blocks()
            if not b.tag.startswith(("run:", "not run:", "synopsis"))
            and b.tag not in ("session", "main-command", "test-command", "inspect-session")
        ]
        assert unmarked == []

    def test_the_blocks_not_run_are_the_few_listed_here(self) -> None:
        not_run = {
            (b.page, b.tag.removeprefix("not run:").strip())
            for b in blocks()
            if b.tag.startswith("not run:")
        }
        assert not_run == NOT_RUN

    def test_a_run_block_names_a_fixture_and_holds_only_benchledger_commands(self) -> None:
        assert len(to_run()) >= 15
        for block in to_run():
            assert block.tag.removeprefix("run:").strip() in FIXTURES, block
            assert all(c.startswith("benchledger ") for c in block.commands), block


@pytest.fixture(scope="module")
def demo_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("demo")
    result = CliRunner().invoke(cli, ["--db", str(folder / "ledger.db"), "demo"])
    assert result.exit_code == 0, result.output
    return folder / "ledger.db"


README_IMPORTS = [
    "import examples/lm_eval examples/inspect_ai",
    "import examples/swebench/Qwen__Qwen2.5-7B-Instruct.dev-1.json --agent mini-swe-agent"
    " --provider vllm --model Qwen/Qwen2.5-7B-Instruct",
    "import examples/swebench/meta-llama__Llama-3.1-8B-Instruct.dev-2.json"
    " --agent mini-swe-agent --provider vllm --model meta-llama/Llama-3.1-8B-Instruct",
]


def prepare(fixture: str, folder: Path, demo_ledger: Path) -> None:
    if fixture == "demo":
        shutil.copy(demo_ledger, folder / "ledger.db")
    if fixture.startswith("examples"):
        shutil.copytree(ROOT / "examples", folder / "examples")
    if fixture == "examples-imported":
        for command in README_IMPORTS:
            result = CliRunner().invoke(cli, shlex.split(command))
            assert result.exit_code == 0, result.output


@pytest.fixture
def postgres_schema() -> Iterator[str]:
    """A fresh schema of the test database, as tests/integration/test_postgres.py uses."""
    import psycopg

    if not POSTGRES_URL:
        pytest.skip("set BENCHLEDGER_TEST_POSTGRES_URL to run the PostgreSQL page's commands")
    schema = f"bl_docs_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield f"{POSTGRES_URL}{'&' if '?' in POSTGRES_URL else '?'}schema={schema}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.parametrize("block", to_run(), ids=lambda b: f"{b.page}:{b.line}")
def test_each_command_shown_runs_and_exits_as_shown(
    block: Block,
    demo_ledger: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BENCHLEDGER_DB", raising=False)
    monkeypatch.delenv("BENCHLEDGER_EVENT_STORE", raising=False)
    fixture = block.tag.removeprefix("run:").strip()
    store = request.getfixturevalue("postgres_schema") if fixture.endswith("postgres") else ""
    prepare(fixture, tmp_path, demo_ledger)
    for command in block.commands:
        expected = EXITS.search(command)
        argv = shlex.split(
            EXITS.sub("", command).replace(DOC_POSTGRES_URL, store or DOC_POSTGRES_URL)
        )
        result = CliRunner().invoke(cli, argv[1:])
        assert result.exit_code == (int(expected[1]) if expected else 0), (
            f"{block.page}:{block.line}: {command}\n{result.output}\n{result.exception!r}"
        )
        assert "Traceback" not in result.output


needs_mkdocs = pytest.mark.skipif(
    not MKDOCS.exists(), reason="mkdocs is not installed (pip install -e '.[docs]')"
)


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MKDOCS, "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": str(MKDOCS.parent), "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )


@needs_mkdocs
class TestTheSite:
    def test_it_builds_strictly_with_every_page(self, tmp_path: Path) -> None:
        done = build(ROOT / "mkdocs.yml", tmp_path / "site")
        assert done.returncode == 0, done.stderr
        for page in (ROOT / "docs").glob("*.md"):
            built = "" if page.stem == "index" else f"{page.stem}/"
            assert (tmp_path / "site" / built / "index.html").is_file(), page.name

    def test_a_broken_link_fails_the_build(self, tmp_path: Path) -> None:
        shutil.copytree(ROOT / "docs", tmp_path / "docs")
        shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
        with (tmp_path / "docs" / "importing.md").open("a") as page:
            page.write("\nSee [the missing page](no-such-page.md).\n")
        done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
        assert done.returncode != 0
        assert "no-such-page.md" in done.stderr


class TestTheReadmeLinks:
    def test_every_page_it_links_exists(self) -> None:
        text = (ROOT / "README.md").read_text()
        links = re.findall(r"\]\((docs/[^)#]+)", text)
        assert len(links) >= 9
        assert [link for link in links if not (ROOT / link).is_file()] == []
