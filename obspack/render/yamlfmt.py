"""Deterministic YAML: keys in the order the model gives them, multi-line strings as literal blocks.

The emitter is libyaml's (PyYAML's C dumper) when PyYAML has it, as its wheels do: four times faster than
the pure-Python one, which is the fallback and writes the same bytes (tests/render/test_yamlfmt.py). The
plain containers and strings of the pack are turned into nodes by `_Dumper.represent_data`; `PureDumper`
keeps PyYAML's own representer, and the tests compare the two."""

from __future__ import annotations

from typing import Any

import yaml

_Base: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # type: ignore[assignment]


_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


class _Dumper(_Base):  # type: ignore[misc, valid-type]
    def represent_data(self, data: Any) -> yaml.Node:
        """Dicts, lists and strings straight to nodes, without PyYAML's bookkeeping for anchors and its
        lookup of a representer by type (half the time of writing the pack's YAML); anything else as PyYAML
        represents it. An object met twice in one document is written twice in full, never as an alias."""
        kind = type(data)
        if kind is str:
            self.alias_key = None
            return _str(self, data)
        if kind is dict:
            pairs = [(self.represent_data(k), self.represent_data(v)) for k, v in data.items()]
            return yaml.MappingNode(_MAP, pairs, flow_style=False)
        if kind is list:
            return yaml.SequenceNode(_SEQ, [self.represent_data(v) for v in data], flow_style=False)
        return super().represent_data(data)


class PureDumper(yaml.SafeDumper):
    """The pure-Python emitter with the same representers (the fallback, and the tests' reference)."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        cleaned = "\n".join(line.rstrip() for line in value.splitlines())
        return dumper.represent_scalar("tag:yaml.org,2002:str", cleaned, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)
PureDumper.add_representer(str, _str)


def dump(data: Any, dumper: type[yaml.SafeDumper] | None = None) -> str:
    return yaml.dump(data, Dumper=dumper or _Dumper, sort_keys=False, width=4096, allow_unicode=True, default_flow_style=False)


def dump_all(docs: list[Any]) -> str:
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, width=4096, allow_unicode=True, default_flow_style=False)
