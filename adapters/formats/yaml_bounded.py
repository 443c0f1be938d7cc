"""YAML within the limits: safe types only, bounded nesting and bounded alias expansion.

A safe loader shares the object behind an alias, so a billion-laughs document loads
quickly but is exponentially large to anything that walks it. Aliases are therefore
counted as expanded: an alias of a node that itself holds aliases counts them all again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode

from benchledger.adapters.formats import limits
from benchledger.adapters.formats.common import read_bytes, refuse_nul
from benchledger.domain.errors import InputFormatError


class _Refused(Exception):
    def __init__(self, what: str, limit: str | None, line: int | None) -> None:
        self.what, self.limit, self.line = what, limit, line


class _BoundedLoader(yaml.SafeLoader):
    def __init__(self, stream: str | bytes) -> None:
        super().__init__(stream)
        bounds = limits.current()
        self.max_aliases, self.max_depth = bounds.yaml_aliases, bounds.depth
        self.expanded_aliases = 0
        self.depth = 0
        self.aliases_inside: dict[int, int] = {}
        self.open_anchors: set[str] = set()  # anchors of the nodes being composed

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        line = event.start_mark.line + 1 if event.start_mark else None
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self.open_anchors:
                # A node holding itself: anything walking it would never end.
                raise _Refused(f"alias *{event.anchor} refers to a node holding it", None, line)
            target = self.anchors.get(event.anchor)
            if target is not None:
                self.expanded_aliases += 1 + self.aliases_inside.get(id(target), 0)
                if self.expanded_aliases > self.max_aliases:
                    raise _Refused("the alias count, counted as expanded,", "yaml_aliases", line)
            return super().compose_node(parent, index)
        self.depth += 1
        if self.depth > self.max_depth:
            raise _Refused("the nesting", "depth", line)
        before = self.expanded_aliases
        anchor = getattr(event, "anchor", None)
        if anchor:
            self.open_anchors.add(anchor)
        try:
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
            self.open_anchors.discard(anchor or "")
        if node is not None:
            self.aliases_inside[id(node)] = self.expanded_aliases - before
        return node

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        """A mapping, refusing a key stated twice in it (YAML forbids it; PyYAML would keep
        the last). A key a merge (`<<: *base`) brings may be restated: that is an override."""
        if isinstance(node, MappingNode):
            seen: set[tuple[str, str]] = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE:
                    continue
                key = (key_node.tag, key_node.value)
                if key in seen:
                    line = key_node.start_mark.line + 1 if key_node.start_mark else None
                    raise _Refused(f"duplicate key {key_node.value!r} in one mapping", None, line)
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


_MERGE = "tag:yaml.org,2002:merge"


def load(path: Path, data: bytes | None = None) -> Any:
    """The YAML document in `path` (read within the file-size limit unless `data` is given)."""
    name = str(path)
    raw = read_bytes(path) if data is None else data
    refuse_nul(name, raw, what="YAML")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputFormatError(name, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    try:
        loader = _BoundedLoader(text)
    except yaml.YAMLError as e:  # characters YAML does not allow, found on reading
        raise InputFormatError(name, f"invalid YAML: {e}") from None
    try:
        return loader.get_single_data()
    except _Refused as e:
        if e.limit is None:
            raise InputFormatError(name, f"invalid YAML: {e.what}", line=e.line) from None
        raise limits.exceeded(name, e.what, e.limit, line=e.line) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise InputFormatError(name, f"invalid YAML: {e}", line=line) from None
    except RecursionError:
        raise limits.exceeded(name, "the nesting", "depth") from None
    except ValueError as e:  # an integer past Python's own digit limit
        raise InputFormatError(name, f"unreadable YAML: {e}") from None
    finally:
        loader.dispose()
