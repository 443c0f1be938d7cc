from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.adapters import formats
from benchledger.adapters.formats import junit
from benchledger.domain.errors import InputFormatError
from benchledger.domain.records import RunRecord, RunStatus
from tests.conftest import Invoke

# What `pytest --junitxml` (pytest 8, xunit2) writes: one suite named "pytest".
PYTEST = """<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests">
  <testsuite name="pytest" errors="0" failures="1" skipped="2" tests="5" time="1.250"
             timestamp="2025-03-04T10:11:12.345678+01:00" hostname="ci-runner-7">
    <testcase classname="tests.test_math" name="test_adds" time="0.001" />
    <testcase classname="tests.test_math" name="test_divides[0-1]" time="0.002">
      <failure message="assert 0.5 == 0">def test_divides(a, b):
&gt;       assert a / b == 0
E       assert 0.5 == 0</failure>
    </testcase>
    <testcase classname="tests.test_math" name="test_gpu" time="0.000">
      <skipped type="pytest.skip" message="no GPU">tests/test_math.py:30: no GPU</skipped>
    </testcase>
    <testcase classname="tests.test_math" name="test_known_bug" time="0.004">
      <skipped type="pytest.xfail" message="issue 12" />
    </testcase>
    <testcase classname="tests.test_io" name="test_reads" time="0.010">
      <properties><property name="dataset" value="small" /></properties>
    </testcase>
  </testsuite>
</testsuites>
"""

# What Maven Surefire 3 writes: a bare suite per test class, Java properties, flaky reruns.
SUREFIRE = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
    xsi:noNamespaceSchemaLocation="https://maven.apache.org/surefire/maven-surefire-plugin/xsd/surefire-test-report-3.0.xsd"
    version="3.0" name="com.example.CalculatorTest" time="1,234.567"
    tests="5" errors="1" skipped="1" failures="1">
  <properties>
    <property name="java.version" value="17.0.2"/>
    <property name="user.home" value="/home/builder"/>
  </properties>
  <testcase name="adds" classname="com.example.CalculatorTest" time="0.012"/>
  <testcase name="divides" classname="com.example.CalculatorTest" time="0.003">
    <failure message="expected: &lt;2&gt; but was: &lt;3&gt;"
             type="org.opentest4j.AssertionFailedError">at Calculator.divide</failure>
    <system-out>dividing</system-out>
  </testcase>
  <testcase name="parses" classname="com.example.CalculatorTest" time="0.001">
    <error type="java.lang.NullPointerException">java.lang.NullPointerException: input
	at com.example.Calculator.parse(Calculator.java:40)</error>
  </testcase>
  <testcase name="ignored" classname="com.example.CalculatorTest" time="0">
    <skipped message="disabled until 2.0"/>
  </testcase>
  <testcase name="retries" classname="com.example.CalculatorTest" time="1.5">
    <flakyFailure message="timed out" type="java.util.concurrent.TimeoutException">
      <stackTrace>java.util.concurrent.TimeoutException</stackTrace>
    </flakyFailure>
  </testcase>
</testsuite>
"""

# A Terminal-Bench-style suite: one testcase per task, who ran it in properties.
TERMINAL_BENCH = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="terminal-bench" tests="3" failures="1" errors="1" time="1843.2">
  <testsuite name="terminal-bench-core" timestamp="2025-06-01T08:00:00Z" time="1843.2"
             tests="3" failures="1" errors="1" skipped="0">
    <properties>
      <property name="benchmark" value="terminal-bench-core"/>
      <property name="agent" value="terminus"/>
      <property name="provider" value="anthropic"/>
      <property name="model" value="claude-sonnet-4"/>
      <property name="run_id" value="2025-06-01__08-00-00"/>
    </properties>
    <testcase classname="terminal-bench-core" name="hello-world" time="42.1"/>
    <testcase classname="terminal-bench-core" name="fix-git" time="610.0">
      <failure message="tests failed: 2 of 5">test_outputs.py::test_log FAILED</failure>
    </testcase>
    <testcase classname="terminal-bench-core" name="build-linux-kernel" time="1191.1">
      <error message="agent timed out after 1200s"/>
    </testcase>
  </testsuite>
</testsuites>
"""


def parse(text: str | bytes, name: str = "report.xml", **defaults: Any) -> RunRecord:
    data = text.encode() if isinstance(text, str) else text
    [record] = junit.parse(Path(name), data, defaults or None)
    assert isinstance(record, RunRecord)
    return record


def outcomes(record: RunRecord) -> dict[str, str]:
    return {cell.key: cell.outcome for cell in record.cells}


def suite(*cases: str, name: str = "s", **attrs: str) -> str:
    extra = "".join(f' {k}="{v}"' for k, v in attrs.items())
    return f'<testsuite name="{name}"{extra}>{"".join(cases)}</testsuite>'


def case(name: str, classname: str = "c", child: str = "") -> str:
    return f'<testcase classname="{classname}" name="{name}">{child}</testcase>'


def broken(text: str, name: str = "report.xml") -> InputFormatError:
    with pytest.raises(InputFormatError) as e:
        junit.parse(Path(name), text.encode(), None).__next__()
    assert e.value.path == name
    return e.value


class TestDetectingReports:
    @pytest.mark.parametrize("text", [PYTEST, SUREFIRE, TERMINAL_BENCH])
    def test_claims_xml_files_whose_root_is_a_test_suite(self, text: str) -> None:
        path = Path("TEST-report.xml")
        assert junit.detect(path, text.encode()[:4096])
        assert formats.detect(path, text.encode()) is junit

    def test_leaves_other_xml_and_other_suffixes_alone(self) -> None:
        assert not junit.detect(Path("pom.xml"), b"<project><modules/></project>")
        assert not junit.detect(Path("report.json"), PYTEST.encode())
        assert not junit.detect(Path("notes.xml"), b"<testsuitex/>")


class TestReadingPytestReports:
    def test_testcases_become_cells_keyed_by_classname_and_name(self) -> None:
        record = parse(PYTEST)
        assert outcomes(record) == {
            "tests.test_math::test_adds": "passed",
            "tests.test_math::test_divides[0-1]": "failed",
            "tests.test_math::test_gpu": "skipped",
            "tests.test_math::test_known_bug": "skipped",
            "tests.test_io::test_reads": "passed",
        }
        assert [c.score for c in record.cells] == [1.0, 0.0, None, None, 1.0]

    def test_the_score_is_the_pass_rate_of_tests_that_ran(self) -> None:
        header = parse(PYTEST).header
        assert header.score == pytest.approx(2 / 3)
        assert (header.unit, header.higher_is_better) == ("pass_rate", True)
        assert header.status is RunStatus.SUCCEEDED and header.error is None

    def test_counts_and_time_are_metrics(self) -> None:
        assert parse(PYTEST).header.metrics == {
            "tests": 5,
            "passed": 2,
            "failures": 1,
            "errors": 0,
            "skipped": 2,
            "time": 1.25,
        }

    def test_times_come_from_the_suite_timestamp_in_utc(self) -> None:
        header = parse(PYTEST).header
        assert header.started_at == datetime(2025, 3, 4, 9, 11, 12, 345678, tzinfo=UTC)
        assert header.ended_at == datetime(2025, 3, 4, 9, 11, 13, 595678, tzinfo=UTC)

    def test_without_properties_or_defaults_the_suite_names_the_benchmark(self) -> None:
        header = parse(PYTEST).header
        assert (header.benchmark, header.agent, header.provider, header.model) == (
            "pytest",
            "junit",
            "",
            "unknown",
        )

    def test_failure_messages_and_skip_reasons_are_kept_on_the_cell(self) -> None:
        cells = {c.key: c for c in parse(PYTEST).cells}
        assert cells["tests.test_math::test_divides[0-1]"].metrics == {
            "time": 0.002,
            "message": "assert 0.5 == 0",
        }
        assert cells["tests.test_math::test_known_bug"].metrics["type"] == "pytest.xfail"
        assert cells["tests.test_io::test_reads"].metrics["properties"] == {"dataset": "small"}

    def test_matching_published_counts_raise_no_quirk(self) -> None:
        provenance = parse(PYTEST).header.provenance
        assert provenance["published"] == {"tests": 5, "failures": 1, "errors": 0, "skipped": 2}
        assert "quirks" not in provenance
        assert provenance["suites"] == ["pytest"]


class TestReadingSurefireReports:
    def test_a_bare_suite_is_one_run_with_flaky_reruns_counted_as_passes(self) -> None:
        record = parse(SUREFIRE, "TEST-com.example.CalculatorTest.xml")
        assert list(outcomes(record).values()) == ["passed", "failed", "error", "skipped", "passed"]
        assert record.header.benchmark == "com.example.CalculatorTest"
        assert record.cells[-1].metrics == {"time": 1.5, "reruns": 1, "flaky": True}

    def test_thousands_separators_in_times_are_read(self) -> None:
        assert parse(SUREFIRE).header.metrics["time"] == 1234.567

    def test_an_error_without_message_keeps_its_first_line_and_type(self) -> None:
        cell = parse(SUREFIRE).cells[2]
        assert cell.metrics["message"] == "java.lang.NullPointerException: input"
        assert cell.metrics["type"] == "java.lang.NullPointerException"

    def test_host_properties_are_not_copied_into_the_ledger(self) -> None:
        assert "/home/builder" not in parse(SUREFIRE).model_dump_json()

    def test_without_timestamps_the_content_is_the_run_key(self) -> None:
        header = parse(SUREFIRE).header
        assert header.started_at is None and header.ended_at is None
        assert header.run_key and "@content:" in header.run_key
        assert parse(SUREFIRE).header.run_key == header.run_key
        changed = SUREFIRE.replace('time="0.012"', 'time="0.013"')
        assert parse(changed).header.run_key != header.run_key


class TestReadingTerminalBenchStyleSuites:
    def test_each_task_is_a_cell_and_properties_say_who_ran_it(self) -> None:
        record = parse(TERMINAL_BENCH)
        header = record.header
        assert (header.benchmark, header.agent, header.provider, header.model) == (
            "terminal-bench-core",
            "terminus",
            "anthropic",
            "claude-sonnet-4",
        )
        assert header.run_key == "2025-06-01__08-00-00"
        assert header.provenance["run_id"] == "2025-06-01__08-00-00"
        assert outcomes(record) == {
            "terminal-bench-core::hello-world": "passed",
            "terminal-bench-core::fix-git": "failed",
            "terminal-bench-core::build-linux-kernel": "error",
        }
        assert header.score == pytest.approx(1 / 3)
        assert record.cells[2].metrics["message"] == "agent timed out after 1200s"

    def test_a_zulu_timestamp_is_utc(self) -> None:
        header = parse(TERMINAL_BENCH).header
        assert header.started_at == datetime(2025, 6, 1, 8, 0, tzinfo=UTC)
        assert header.ended_at == datetime(2025, 6, 1, 8, 30, 43, 200000, tzinfo=UTC)


class TestChoosingWhoRan:
    WHO = {"benchmark": "unit", "agent": "eliza", "provider": "cerebras", "model": "gpt-oss"}

    def test_the_callers_defaults_fill_what_the_report_leaves_out(self) -> None:
        header = parse(PYTEST, **self.WHO, config={"limit": 3}, status="failed").header
        assert (header.benchmark, header.agent, header.provider, header.model) == (
            "unit",
            "eliza",
            "cerebras",
            "gpt-oss",
        )
        assert header.config == {"limit": 3}
        assert header.status is RunStatus.SUCCEEDED  # the report, not the caller, says

    def test_properties_in_the_report_win_over_defaults(self) -> None:
        header = parse(TERMINAL_BENCH, **self.WHO).header
        assert (header.agent, header.model) == ("terminus", "claude-sonnet-4")

    def test_two_suites_naming_different_models_are_refused(self) -> None:
        prop = '<properties><property name="model" value="{}"/></properties>'
        text = "<testsuites>{}{}</testsuites>".format(
            suite(prop.format("a"), case("t"), name="one"),
            suite(prop.format("b"), case("u"), name="two"),
        )
        error = broken(text)
        assert error.field == "testsuite[1].properties.property[0]"
        assert "'b'" in error.message and "'a'" in error.message

    def test_several_suites_take_the_benchmark_from_the_testsuites_name(self) -> None:
        body = suite(case("t"), name="one") + suite(case("u"), name="two")
        assert parse(f'<testsuites name="nightly">{body}</testsuites>').header.benchmark == (
            "nightly"
        )
        assert parse(f"<testsuites>{body}</testsuites>", "smoke.xml").header.benchmark == "smoke"

    def test_a_defaults_value_of_the_wrong_type_names_the_field(self) -> None:
        with pytest.raises(InputFormatError) as e:
            parse(PYTEST, agent=7)
        assert e.value.field == "agent"


class TestRepeatedTests:
    def test_a_failure_in_call_and_an_error_in_teardown_stay_two_cells(self) -> None:
        # pytest writes such a test as two testcases with the same name.
        text = suite(
            case("test_x", child='<failure message="assert False"/>'),
            case("test_x", child='<error message="failed on teardown"/>'),
            case("test_y"),
        )
        record = parse(text)
        assert outcomes(record) == {
            "c::test_x": "failed",
            "c::test_x#2": "error",
            "c::test_y": "passed",
        }
        assert record.cells[1].metrics == {"message": "failed on teardown"}
        assert any("#2" in q for q in record.header.provenance["quirks"])
        assert record.header.score == 1 / 3

    def test_testcases_with_the_same_name_get_distinct_keys_in_document_order(self) -> None:
        record = parse(suite(case("t"), case("t", child="<failure/>"), case("t")))
        assert [c.key for c in record.cells] == ["c::t", "c::t#2", "c::t#3"]
        assert [c.outcome for c in record.cells] == ["passed", "failed", "passed"]
        assert record.header.metrics["tests"] == 3

    def test_a_numbered_key_never_collides_with_a_test_named_like_it(self) -> None:
        record = parse(suite(case("t#2"), case("t"), case("t")))
        assert [c.key for c in record.cells] == ["c::t#2", "c::t", "c::t#3"]

    def test_the_same_test_in_two_suites_gets_keys_that_name_the_suite(self) -> None:
        text = "<testsuites>{}{}</testsuites>".format(
            suite(case("t"), case("u"), name="py311"),
            suite(case("t", child="<failure/>"), name="py312"),
        )
        record = parse(text)
        assert outcomes(record) == {
            "py311::c::t": "passed",
            "py311::c::u": "passed",
            "py312::c::t": "failed",
        }
        assert any("several suites" in q for q in record.header.provenance["quirks"])

    def test_a_testcase_with_several_outcome_children_takes_the_worst(self) -> None:
        text = suite(case("t", child='<skipped/><error message="boom"/><failure/>'))
        assert outcomes(parse(text)) == {"c::t": "error"}

    def test_a_googletest_case_that_did_not_run_is_skipped(self) -> None:
        text = suite(
            '<testcase name="Adds" status="run" result="completed" classname="Calc"/>',
            '<testcase name="DISABLED_Big" status="notrun" result="suppressed" classname="Calc"/>',
        )
        assert outcomes(parse(text)) == {"Calc::Adds": "passed", "Calc::DISABLED_Big": "skipped"}

    def test_a_testcase_without_classname_is_keyed_by_its_name(self) -> None:
        assert outcomes(parse(suite('<testcase name="task-1"/>'))) == {"task-1": "passed"}

    def test_nested_suites_contribute_their_testcases(self) -> None:
        inner = suite(case("deep"), name="inner")
        record = parse(f"<testsuites>{suite(case('top'), inner, name='outer')}</testsuites>")
        assert outcomes(record) == {"c::top": "passed", "c::deep": "passed"}
        assert record.header.provenance["suites"] == ["outer"]


class TestTotalsAndTimes:
    def test_published_counts_that_disagree_are_recorded_as_quirks(self) -> None:
        record = parse(suite(case("a"), case("b", child="<failure/>"), tests="3", failures="1"))
        assert record.header.provenance["published"] == {"tests": 3, "failures": 1}
        assert record.header.provenance["quirks"] == ["published tests=3 but the testcases give 2"]

    def test_published_counts_are_summed_over_suites(self) -> None:
        body = suite(case("a"), name="x", tests="1") + suite(case("b"), name="y", tests="1")
        header = parse(f"<testsuites>{body}</testsuites>").header
        assert header.provenance["published"] == {"tests": 2}

    def test_a_naive_timestamp_is_read_as_utc_and_said_so(self) -> None:
        header = parse(suite(case("a"), timestamp="2024-01-02T03:04:05", time="5")).header
        assert header.started_at == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
        assert header.ended_at == datetime(2024, 1, 2, 3, 4, 10, tzinfo=UTC)
        assert any("read as UTC" in q for q in header.provenance["quirks"])

    def test_several_suites_span_from_the_first_start_to_the_last_end(self) -> None:
        body = suite(case("a"), name="x", timestamp="2024-01-02T03:00:00Z", time="60")
        body += suite(case("b"), name="y", timestamp="2024-01-02T02:59:00Z", time="10")
        header = parse(f"<testsuites>{body}</testsuites>").header
        assert header.started_at == datetime(2024, 1, 2, 2, 59, tzinfo=UTC)
        assert header.ended_at == datetime(2024, 1, 2, 3, 1, tzinfo=UTC)

    def test_without_suite_times_the_testcase_times_are_summed(self) -> None:
        text = suite('<testcase name="a" time="1.5"/>', '<testcase name="b" time="2"/>')
        assert parse(text).header.metrics["time"] == 3.5

    def test_long_messages_are_truncated(self) -> None:
        cell = parse(suite(case("t", child=f'<failure message="{"x" * 5000}"/>'))).cells[0]
        assert len(cell.metrics["message"]) == 500 and cell.metrics["message"].endswith("…")

    def test_a_report_without_testcases_is_an_error_run_without_score(self) -> None:
        header = parse('<testsuite name="pytest" tests="0"/>').header
        assert (header.status, header.score) == (RunStatus.ERROR, None)
        assert header.error == "the report holds no testcases"

    def test_a_report_where_everything_was_skipped_has_no_score(self) -> None:
        header = parse(suite(case("t", child="<skipped/>"))).header
        assert (header.status, header.score) == (RunStatus.SUCCEEDED, None)


class TestRejectingBrokenReports:
    def test_a_truncated_file_names_the_line(self) -> None:
        error = broken(PYTEST[: len(PYTEST) // 2])
        assert error.line is not None and "invalid XML" in error.message

    def test_a_dtd_is_refused(self) -> None:
        text = '<!DOCTYPE testsuite SYSTEM "junit.dtd"><testsuite name="s"/>'
        assert "DTD" in broken(text).message

    def test_an_entity_expansion_bomb_is_refused_without_expanding(self) -> None:
        levels = "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
        text = f'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY l0 "lol">{levels}]>'
        text += '<testsuite><testcase name="&l9;"/></testsuite>'
        assert "DTD" in broken(text).message

    def test_an_external_entity_is_refused(self) -> None:
        text = '<!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]><testsuite name="&x;"/>'
        assert "DTD" in broken(text).message

    def test_another_root_element_is_refused(self) -> None:
        assert "<project>" in broken("<project/>").message

    def test_a_testcase_without_a_name_names_the_field(self) -> None:
        nameless = '<testcase classname="c"/>'
        text = f"<testsuites>{suite(case('a'), nameless)}</testsuites>"
        assert broken(text).field == "testsuite[0].testcase[1].name"

    @pytest.mark.parametrize(
        ("attrs", "field"),
        [
            ({"time": "fast"}, "testsuite.time"),
            ({"time": "nan"}, "testsuite.time"),
            ({"time": "-1"}, "testsuite.time"),
            ({"tests": "three"}, "testsuite.tests"),
            ({"failures": "-1"}, "testsuite.failures"),
            ({"timestamp": "yesterday"}, "testsuite.timestamp"),
        ],
    )
    def test_a_malformed_suite_attribute_names_the_field(
        self, attrs: dict[str, str], field: str
    ) -> None:
        assert broken(suite(case("a"), **attrs)).field == field

    def test_a_malformed_testcase_time_names_the_field(self) -> None:
        text = suite(case("a"), '<testcase name="b" time="1s"/>')
        assert broken(text).field == "testsuite.testcase[1].time"

    def test_a_time_that_overflows_the_calendar_is_refused(self) -> None:
        text = suite(case("a"), timestamp="9999-12-31T23:59:59Z", time="9999")
        assert "out of range" in broken(text).message

    def test_bytes_that_are_not_xml_are_refused(self) -> None:
        with pytest.raises(InputFormatError):
            parse(b"\xff\xfe\x00garbage")

    def test_deeply_nested_suites_do_not_exhaust_the_stack(self) -> None:
        depth = 5000
        text = "<testsuites>" + '<testsuite name="s">' * depth + case("t")
        record = parse(text + "</testsuite>" * depth + "</testsuites>")
        assert outcomes(record) == {"c::t": "passed"}


class TestDeterminism:
    @pytest.mark.parametrize("text", [PYTEST, SUREFIRE, TERMINAL_BENCH])
    def test_the_same_bytes_give_identical_records(self, text: str) -> None:
        assert parse(text).json_bytes() == parse(text).json_bytes()

    def test_reindented_xml_gives_the_same_records(self) -> None:
        tree = ET.fromstring(SUREFIRE.encode())
        for element in tree.iter():
            element.tail = None
        compact = ET.tostring(tree, encoding="utf-8")
        assert parse(compact).json_bytes() == parse(SUREFIRE).json_bytes()


# Fuzzing: random trees of JUnit-ish elements and mutated copies of the fixtures.
TAGS = ["testsuites", "testsuite", "testcase", "failure", "error", "skipped", "properties"]
TAGS += ["property", "system-out", "flakyFailure", "rerunError", "other"]
ATTRS = ["name", "classname", "time", "timestamp", "tests", "failures", "errors", "skipped"]
ATTRS += ["message", "type", "value"]
Node = tuple[str, dict[str, str], list[Any]]
safe_text = st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=12)
plausible = st.sampled_from(["t1", "t2", "pytest", "c", "0.5", "3", "2024-01-02T03:04:05Z"])
odd = st.sampled_from(["0", "-1", "1,234.5", "nan", "inf", "1e400", "9e9", "", " ", "9999-12-31"])
identity = st.sampled_from(["benchmark", "agent", "provider", "model", "run_id"])
values = st.one_of(plausible, safe_text, odd, identity)
attributes = st.dictionaries(st.sampled_from(ATTRS), values, max_size=4)


def node(tag: str, attrs: dict[str, str], children: list[Node]) -> Node:
    return (tag, attrs, children)


leaves = st.builds(node, st.sampled_from(TAGS), attributes, st.just([]))
trees = st.recursive(
    leaves,
    lambda kids: st.builds(node, st.sampled_from(TAGS), attributes, st.lists(kids, max_size=4)),
    max_leaves=25,
)
names = st.sampled_from(["t1", "t2", "t3", "test_x[1]", "hello-world"])
outcome_children = st.builds(
    node, st.sampled_from(["failure", "error", "skipped", "flakyFailure"]), attributes, st.just([])
)
testcases = st.builds(
    node,
    st.just("testcase"),
    st.fixed_dictionaries({"name": names}, optional={"classname": names, "time": values}),
    st.lists(st.one_of(outcome_children, trees), max_size=3),
)
properties = st.builds(
    node,
    st.just("properties"),
    st.just({}),
    st.lists(
        st.builds(
            node,
            st.just("property"),
            st.fixed_dictionaries({"name": identity, "value": st.one_of(names, safe_text)}),
            st.just([]),
        ),
        max_size=3,
    ),
)
suite_attributes = st.fixed_dictionaries(
    {},
    optional={
        "name": names,
        "tests": st.one_of(st.sampled_from(["0", "2", "5"]), values),
        "time": st.one_of(st.sampled_from(["0.5", "12"]), values),
        "timestamp": st.one_of(st.sampled_from(["2024-01-02T03:04:05", "2024-01-02"]), values),
    },
)
suites = st.builds(
    node,
    st.just("testsuite"),
    suite_attributes,
    st.lists(st.one_of(testcases, testcases, properties, trees), max_size=6),
)
documents = st.one_of(
    suites, st.builds(node, st.just("testsuites"), attributes, st.lists(suites, max_size=3))
)


def build(tree: Node) -> ET.Element:
    tag, attrs, children = tree
    element = ET.Element(tag, attrs)
    element.extend(build(child) for child in children)
    return element


def parses_or_refuses(data: bytes, name: str = "fuzz.xml") -> None:
    try:
        records = list(junit.parse(Path(name), data, None))
    except InputFormatError as e:
        assert e.path == name
        return
    [record] = records
    assert isinstance(record, RunRecord)
    assert len({c.key for c in record.cells}) == len(record.cells)
    json.loads(record.json_bytes())


def mutate(tree: ET.Element, data: st.DataObject) -> None:
    elements = list(tree.iter())
    for _ in range(data.draw(st.integers(1, 4))):
        target = data.draw(st.sampled_from(elements))
        action = data.draw(st.sampled_from(["drop_attr", "set_attr", "drop_child", "retag"]))
        if action == "drop_attr" and target.attrib:
            del target.attrib[data.draw(st.sampled_from(sorted(target.attrib)))]
        elif action == "set_attr":
            target.set(data.draw(st.sampled_from(ATTRS)), data.draw(values))
        elif action == "drop_child" and len(target):
            target.remove(data.draw(st.sampled_from(list(target))))
        elif action == "retag":
            target.tag = data.draw(st.sampled_from(TAGS))


class TestFuzzing:
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(tree=st.one_of(documents, trees))
    def test_random_junit_like_trees_parse_or_are_refused(self, tree: Node) -> None:
        parses_or_refuses(ET.tostring(build(tree), encoding="utf-8"))

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(fixture=st.sampled_from([PYTEST, SUREFIRE, TERMINAL_BENCH]), data=st.data())
    def test_mutated_fixtures_parse_or_are_refused(self, fixture: str, data: st.DataObject) -> None:
        tree = ET.fromstring(fixture.encode())
        mutate(tree, data)
        parses_or_refuses(ET.tostring(tree, encoding="utf-8"))

    @settings(max_examples=200, deadline=None)
    @given(
        fixture=st.sampled_from([PYTEST, SUREFIRE, TERMINAL_BENCH]),
        cut=st.integers(0, 3000),
        flip=st.tuples(st.integers(0, 3000), st.integers(0, 255)),
    )
    def test_truncated_and_corrupted_bytes_parse_or_are_refused(
        self, fixture: str, cut: int, flip: tuple[int, int]
    ) -> None:
        data = bytearray(fixture.encode())
        position, byte = flip
        data[position % len(data)] = byte
        parses_or_refuses(bytes(data[: max(cut, 1)]))


class TestImportingThroughTheCli:
    def test_a_results_directory_imports_its_reports_once(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        results = tmp_path / "results"
        results.mkdir()
        (results / "pytest.xml").write_text(PYTEST)
        (results / "TEST-com.example.CalculatorTest.xml").write_text(SUREFIRE)
        (results / "terminal-bench.xml").write_text(TERMINAL_BENCH)
        (results / "pom.xml").write_text("<project/>")
        reports = json.loads(invoke("import", str(results), "--json").stdout)
        states = {Path(r["path"]).name: r["state"] for r in reports}
        assert states == {
            "TEST-com.example.CalculatorTest.xml": "imported",
            "pom.xml": "ignored",
            "pytest.xml": "imported",
            "terminal-bench.xml": "imported",
        }
        again = json.loads(invoke("import", str(results), "--json").stdout)
        assert {r["state"] for r in again if "pom" not in r["path"]} == {"unchanged"}
        runs = json.loads(invoke("runs", "--json").stdout)
        assert sorted((r["benchmark"], r["cells"]) for r in runs) == [
            ("com.example.CalculatorTest", 5),
            ("pytest", 5),
            ("terminal-bench-core", 3),
        ]

    def test_an_unsafe_report_fails_and_appends_nothing(
        self, invoke: Invoke, tmp_path: Path
    ) -> None:
        path = tmp_path / "bomb.xml"
        path.write_text('<!DOCTYPE t [<!ENTITY a "aaaa">]><testsuite name="&a;"/>')
        result = invoke("import", str(path), expect=1)
        assert "Error:" in result.stderr and "DTD" in result.stderr
        assert json.loads(invoke("runs", "--json").stdout) == []
