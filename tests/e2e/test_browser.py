"""The ledger in a real browser: `benchledger serve` on a free port, pages loaded by
headless Chromium, assertions on the DOM after its scripts ran.

Chromium's own command line does the loading (`--dump-dom`, `--screenshot`): no driver
to keep in step with the browser. Screenshots go to BENCHLEDGER_SCREENSHOTS (default: a
pytest temporary folder). Without Chromium the tests skip, unless
BENCHLEDGER_REQUIRE_BROWSER=1 (set by CI), where they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from urllib.parse import urlencode
from urllib.request import urlopen

import pytest

from tests.conftest import CORPUS
from tests.ledgers import PLANTED_ERROR, build_browsable, build_corpus

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


@contextmanager
def serving(ledger: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """`benchledger serve` over `ledger` on a free port, and a browser pointed at it."""
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
        match = re.search(rf"at (http://127\.0\.0\.1:\d+)/{ledger.stem} ", line)
        assert match, line
        yield Browser(match.group(1), tmp_path_factory.mktemp("profile"), screenshots)
    finally:
        server.terminate()
        server.wait(10)


@pytest.fixture(scope="module")
def browser(ledger: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with serving(ledger, tmp_path_factory) as served:
        yield served


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


# The page's rows, measured where Chromium laid them out: the page as served, with a
# script that writes each row's top (px from the top of the page) into the DOM.
MEASURE_ROWS = """<script>
addEventListener("load", () => {
  const rows = document.querySelectorAll("table.rows-and-columns tbody tr");
  const tops = [...rows].map(r => Math.round(r.getBoundingClientRect().top + scrollY));
  const heights = [...rows].map(r => Math.round(r.getBoundingClientRect().height));
  const out = document.createElement("pre");
  out.id = "measured";
  out.textContent = JSON.stringify({tops, heights});
  document.body.append(out);
});
</script>"""


def measured_rows(browser: Browser, path: str, work: Path) -> dict[str, list[int]]:
    """Row tops and heights of a page in a 1400 px wide window, laid out by Chromium."""
    with urlopen(browser.base + path) as response:
        html = response.read().decode()
    html = html.replace("<head>", f'<head><base href="{browser.base}/">', 1)
    html = html.replace("</body>", MEASURE_ROWS + "</body>", 1)
    page = work / (re.sub(r"\W+", "-", path).strip("-") + ".html")
    page.write_text(html)
    dom = browser.run(page.as_uri(), "--dump-dom")
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found, f"{path}: the measuring script did not run"
    measured: dict[str, list[int]] = json.loads(found.group(1))
    return measured


@pytest.fixture(scope="module")
def corpus_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"no corpus at {CORPUS}")
    return build_corpus(tmp_path_factory.mktemp("corpus") / "ledger.db", CORPUS)


@pytest.fixture(scope="module")
def corpus_browser(
    corpus_ledger: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Browser]:
    with serving(corpus_ledger, tmp_path_factory) as served:
        yield served


def chart_parts(dom: str) -> dict[str, str]:
    """Each dashboard chart's HTML, by its slug."""
    found = re.finditer(r'<div id="chart-(?!tooltip-)([\w-]+)"', dom)
    starts = [(m.start(), m.group(1)) for m in found]
    ends = [start for start, _ in starts[1:]] + [len(dom)]
    return {slug: dom[start:end] for (start, slug), end in zip(starts, ends, strict=True)}


class TestAtTheScaleOfTheCorpus:
    """The whole corpus (hundreds of runs, models and benchmarks), as a team imports it."""

    @pytest.mark.parametrize("table", ["runs", "latest", "cells"])
    def test_the_first_screen_of_a_table_shows_rows_one_line_tall(
        self, corpus_browser: Browser, table: str, tmp_path: Path
    ) -> None:
        corpus_browser.load(f"/ledger/{table}", f"corpus-{table}")
        rows = measured_rows(corpus_browser, f"/ledger/{table}", tmp_path)
        within = [top for top in rows["tops"] if top + 40 <= 1000]
        assert len(within) >= 15, f"{table}: {len(within)} rows in the first 1,000 px: {rows}"
        assert max(rows["heights"]) <= 40, f"{table}: a row is {max(rows['heights'])} px tall"

    def test_a_run_page_shows_its_payloads_whole(
        self, corpus_browser: Browser, corpus_ledger: Path
    ) -> None:
        run_id = scalar(
            corpus_ledger,
            "SELECT run_id FROM runs WHERE length(config) > 200 ORDER BY run_id LIMIT 1",
        )
        dom = corpus_browser.load(f"/ledger/runs/{run_id}", "corpus-run")
        assert '<pre class="benchledger-json">{' in dom

    def test_the_models_page_lists_models(self, corpus_browser: Browser) -> None:
        dom = corpus_browser.load("/models", "corpus-models")
        assert "<h1>Models</h1>" in dom
        assert dom.count("<tr>") > 50

    @pytest.mark.parametrize("query", ["", "?benchmark=arc_easy", "?model=gpt-4o-mini"])
    def test_no_dashboard_chart_is_empty_without_saying_so(
        self, corpus_browser: Browser, query: str
    ) -> None:
        name = "corpus-dashboard" + re.sub(r"\W+", "-", query).rstrip("-")
        dom = corpus_browser.load(f"/-/dashboards/ledger{query}", name)
        charts = chart_parts(dom)
        assert set(charts) >= {"score-over-time", "matrix", "pass-rates", "quarantine-reasons"}
        for slug, html in charts.items():
            if slug == "head-to-head":
                assert "<td" in html and ("No data" in html or "inconclusive" in html), slug
                continue
            drawn = re.search(r'<g class="mark-(?:symbol|rect|tick|line)[^>]*>\s*<path', html)
            said = re.search(r"<text[^>]*>No data[^<]*</text>", html)
            assert drawn or said, f"{slug} ({query}) is empty without saying so"
            if slug == "score-over-time" and drawn:
                # The chart derives both texts from each row's unit, benchmark and agent.
                assert re.search(r"<text[^>]*>Scores in \w[^<]*</text>", html), html[:2000]
                assert re.search(r"<text[^>]*>[^<>]+ / [^<>]+</text>", html), "no series legend"
            assert re.search(r'class="mark-text role-axis-title"', html), f"{slug}: no axis title"
