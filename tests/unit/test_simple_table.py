"""The table renderer pads plain cells itself, and prints exactly what tabulate would."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st
from tabulate import tabulate

from benchledger.commands.output import simple_table, table

# Printable ASCII, with spaces, and the words tabulate might read as booleans or numbers.
TEXT = st.one_of(
    st.text(alphabet=string.printable[:95], max_size=8),
    st.sampled_from(["", " ", "  x ", "True", "False", "None", "1.5", "-2", "1e5", "nan"]),
)


def by_tabulate(headers: list[str], body: list[list[str]]) -> str:
    return str(tabulate(body, headers=headers, tablefmt="simple", disable_numparse=True))


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[list[str]]]:
    columns = draw(st.integers(min_value=1, max_value=5))
    headers = draw(st.lists(TEXT, min_size=columns, max_size=columns))
    body = draw(
        st.lists(st.lists(TEXT, min_size=columns, max_size=columns), min_size=1, max_size=5)
    )
    return headers, body


class TestSimpleTable:
    @given(tables())
    def test_prints_plain_cells_exactly_as_tabulate_does(
        self, drawn: tuple[list[str], list[list[str]]]
    ) -> None:
        headers, body = drawn
        assert simple_table(headers, body) == by_tabulate(headers, body)

    def test_leaves_wide_or_unprintable_text_and_ragged_rows_to_tabulate(self) -> None:
        assert simple_table(["a"], [["caf\u00e9"]]) is None
        assert simple_table(["a"], [["\x01"]]) is None
        assert simple_table(["a", "b"], [["1"]]) is None
        assert simple_table(["a"], []) is None
        assert simple_table([], [[]]) is None

    def test_a_table_of_other_text_is_tabulated(self) -> None:
        headers, body = ["name", "score"], [["caf\u00e9", "0.5"], ["plain", "1"]]
        assert table(headers, body) == by_tabulate(headers, body)
