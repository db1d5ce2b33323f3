"""Deterministic YAML: keys in the order the model gives them, multi-line strings as literal blocks.

The emitter is libyaml's (PyYAML's C dumper) when PyYAML has it, as its wheels do: four times faster than
the pure-Python one, which is the fallback and writes the same bytes (tests/render/test_yamlfmt.py)."""

from __future__ import annotations

from typing import Any

import yaml

_Base: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # type: ignore[assignment]


class _Dumper(_Base):  # type: ignore[misc, valid-type]
    pass


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
