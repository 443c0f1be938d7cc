"""The ledger in a real browser: `benchledger serve` on a free port, pages loaded by
headless Chromium, assertions on the DOM after its scripts ran.

Chromium's own command line does the loading (`--dump-dom`, `--screenshot`): no driver
to keep in step with the browser. Screenshots go to BENCHLEDGER_SCREENSHOTS (default: a
pytest temporary folder). Without Chromium the tests skip, unless
BENCHLEDGER_REQUIRE_BROWSER=1 (set by CI), where they fail.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests.ledgers import PLANTED_ERROR, build_browsable

CLI = [sys.executable, "-c", "from benchledger.commands.cli import cli; cli()"]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Virtual time: the page's scripts and fetches finish before the DOM is read, without a
# wall-clock wait (virtual time only advances while the page is idle).
BUDGET_MS = "30000"


def find_chromium() -> str | None:
    for name in BROWSERS:
        if found := shutil.which(name):
            return found
    return None


CHROMIUM = find_chromium()
MISSING = f"no Chromium on PATH (looked for {', '.join(BROWSERS)}); apt-get install -y chromium"
REQUIRED = os.environ.get("BENCHLEDGER_REQUIRE_BROWSER") == "1"
# Where the browser is required, a missing one fails every test (in the fixture) instead.
pytestmark = pytest.mark.skipif(CHROMIUM is None and not REQUIRED, reason=MISSING)


class Browser:
    """Headless Chromium against one served ledger, saving a screenshot of every page."""

    def __init__(self, base: str, profile: Path, screenshots: Path) -> None:
        self.base = base
        self.profile = profile
        self.screenshots = screenshots

    def run(self, url: str, *args: str) -> str:
        assert CHROMIUM is not None
        flags = [
            "--headless",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--window-size=1400,1700",
            f"--user-data-dir={self.profile}",
            f"--virtual-time-budget={BUDGET_MS}",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            flags.append("--no-sandbox")  # Chromium refuses to sandbox as root (CI)
        done = subprocess.run(
            [CHROMIUM, *flags, *args, url], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"chromium {args} {url}: {done.stderr[-2000:]}"
        return done.stdout

    def load(self, path: str, name: str) -> str:
        """The page's DOM once its scripts ran; its screenshot saved as NAME.png."""
        url = self.base + path
        dom = self.run(url, "--dump-dom")
        assert "<html" in dom, f"{url}: no DOM"
        shot = self.screenshots / f"{name}.png"
        self.run(url, f"--screenshot={shot}")
        assert shot.stat().st_size > 0, shot
        return dom


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_browsable(tmp_path_factory.mktemp("browser") / "ledger.db")


@pytest.fixture(scope="module")
def browser(ledger: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    if CHROMIUM is None:
        pytest.fail(f"BENCHLEDGER_REQUIRE_BROWSER=1 but {MISSING}")
    configured = os.environ.get("BENCHLEDGER_SCREENSHOTS")
    screenshots = Path(configured) if configured else tmp_path_factory.mktemp("screenshots")
    screenshots.mkdir(parents=True, exist_ok=True)
    server = subprocess.Popen(
        [*CLI, "--db", str(ledger), "serve", "--port", "0"], stderr=subprocess.PIPE, text=True
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        match = re.search(r"at (http://127\.0\.0\.1:\d+)/ledger ", line)
        assert match, line
        yield Browser(match.group(1), tmp_path_factory.mktemp("profile"), screenshots)
    finally:
        server.terminate()
        server.wait(10)


def scalar(db: Path, sql: str) -> str:
    with closing(sqlite3.connect(db)) as conn:
        value: str = conn.execute(sql).fetchone()[0]
        return value


def invalidated_run(db: Path) -> str:
    return scalar(db, "SELECT run_id FROM runs WHERE invalidated = 1")


class TestInTheBrowser:
    def test_the_index_links_to_the_ledger_and_its_dashboard(self, browser: Browser) -> None:
        dom = browser.load("/", "index")
        assert "<h1>benchledger</h1>" in dom
        assert 'href="/ledger"' in dom
        assert 'href="/-/dashboards/ledger"' in dom

    def test_a_run_page_shows_its_flagged_status_rounded_score_and_payloads(
        self, browser: Browser, ledger: Path
    ) -> None:
        run_id = invalidated_run(ledger)
        dom = browser.load(f"/ledger/runs/{run_id}", "run")
        assert re.search(r'<td class="col-status[^"]*">succeeded \(invalidated\)</td>', dom)
        assert re.search(r'<td class="col-score[^"]*"><span title="[0-9.]+">[0-9.]+</span>', dom)
        assert '<pre class="benchledger-json">' in dom

    def test_a_run_page_links_to_its_cells_and_events(self, browser: Browser, ledger: Path) -> None:
        run_id = invalidated_run(ledger)
        dom = browser.load(f"/ledger/runs/{run_id}", "run-links")
        hrefs = set(re.findall(r'href="([^"]+)"', dom))
        assert any(h.startswith("/ledger/cells?") and run_id in h for h in hrefs), hrefs
        assert any(h.startswith("/ledger/events?") and run_id in h for h in hrefs), hrefs

    def test_the_dashboard_draws_its_charts_offline(self, browser: Browser) -> None:
        dom = browser.load("/-/dashboards/ledger", "dashboard")
        charts = re.findall(r'<svg[^>]*class="marks"', dom)
        assert len(charts) == 4, "score over time, matrix, pass rates, quarantine reasons"
        # Drawn: marks with geometry, not an empty frame.
        assert len(re.findall(r'<g class="mark-(?:line|symbol|rect|text)', dom)) >= 4
        assert re.search(r'<path [^>]*d="M[0-9]', dom)
        # The latest head-to-head report, as a table.
        assert dom.count("inconclusive") + dom.count("superior") >= 1
        # Nothing is fetched from another host: the chart libraries are served locally.
        sources = re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', dom)
        assert sources and all(s.startswith("/") or s.startswith(browser.base) for s in sources)

    def test_a_search_finds_the_planted_error(self, browser: Browser) -> None:
        """The full-text `search` query, with words of the error that the run's other
        text does not hold: it finds that run's error, and only it."""
        query = urlencode({"q": PLANTED_ERROR.split(": ")[1]})
        dom = browser.load(f"/ledger/search?{query}", "search")
        assert PLANTED_ERROR in dom
        assert re.search(r"\b1 row\b", dom), "exactly the planted run's error"

    def test_a_filter_finds_the_planted_error(self, browser: Browser) -> None:
        query = urlencode({"error__contains": PLANTED_ERROR.split(": ")[1]})
        dom = browser.load(f"/ledger/runs?{query}", "filter")
        assert PLANTED_ERROR in dom
        assert re.search(r"<h3>\s*1 row\s", dom), "exactly the planted run"
