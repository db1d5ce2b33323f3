"""A dashboard's plain model is what grafanalib's JSON encoder writes, read back: the same values, types
and key order for every dashboard, and the same answer as the encoder for every kind of value it meets."""

from __future__ import annotations

import enum
import json
from pathlib import Path

import pytest
from grafanalib._gen import DashboardEncoder
from grafanalib.core import Stat, Target

from obspack.config import load_config
from obspack.dashboards import BUILDERS
from obspack.dashboards.defaults import plain, to_model

CUSTOM = Path(__file__).resolve().parents[1] / "fixtures" / "custom.yaml"


def _through_json(value: object) -> object:
    return json.loads(json.dumps(value, cls=DashboardEncoder))


@pytest.mark.parametrize("config", [None, CUSTOM], ids=["defaults", "custom"])
def test_every_dashboard_is_what_the_encoder_writes_and_reads_back(config: Path | None) -> None:
    cfg = load_config(config)
    for name, build in BUILDERS.items():
        dashboard = build(cfg)
        expected = _through_json(dashboard.to_json_data())
        model = to_model(dashboard)
        assert model == expected, name
        # the same key order and number spelling, so the files keep their bytes
        assert json.dumps(model, indent=2) == json.dumps(expected, indent=2), name


class Colour(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Ratio(float):
    pass


class Titled(str):
    def to_json_data(self) -> dict[str, str]:  # the encoder never asks a str for it
        return {"title": str(self)}


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"a": (1, 2.5, None, True)}, id="tuple"),
        pytest.param({7: "x", 2.5: "y", True: "z", False: "f", None: "n", Level.HIGH: "l"}, id="keys-not-text"),
        pytest.param({Colour.RED: Colour.RED, "level": Level.HIGH, "ratio": Ratio(0.5), "t": Titled("x")}, id="subclasses"),
        pytest.param([Stat(title="t", targets=[Target(expr="up", refId="A")])], id="grafanalib-objects"),
        pytest.param({"nested": [{"deep": [(), {}]}], "inf": float("inf")}, id="nested-and-infinity"),
    ],
)
def test_plain_answers_as_the_encoder(value: object) -> None:
    expected = _through_json(value)
    got = plain(value)
    assert got == expected
    assert json.dumps(got) == json.dumps(expected)
    assert {type(v) for v in _leaves(got)} == {type(v) for v in _leaves(expected)}


@pytest.mark.parametrize("value", [{"when": object()}, {(1, 2): "tuple key"}, {"raw": b"bytes"}], ids=["object", "tuple-key", "bytes"])
def test_plain_refuses_what_the_encoder_refuses(value: object) -> None:
    with pytest.raises(TypeError):
        _through_json(value)
    with pytest.raises(TypeError):
        plain(value)


def _leaves(value: object) -> list[object]:
    if isinstance(value, dict):
        return [*value.keys(), *(leaf for v in value.values() for leaf in _leaves(v))]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]
