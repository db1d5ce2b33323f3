"""Prometheus durations: the syntax model.ParseDuration takes, its range, and the one way obspack writes them."""

import pytest

from obspack.durations import format_ms, format_s, parse_ms


@pytest.mark.parametrize(
    ("text", "ms"),
    [("0", 0), ("0s", 0), ("250ms", 250), ("30s", 30_000), ("1h30m", 5_400_000), ("1d", 86_400_000),
     ("1y2w3d4h5m6s7ms", ((365 + 14 + 3) * 86_400 + 4 * 3600 + 5 * 60 + 6) * 1000 + 7), ("090s", 90_000),
     ("292y", 292 * 365 * 86_400_000)],
)
def test_parses_what_prometheus_parses(text: str, ms: int) -> None:
    assert parse_ms(text) == ms


@pytest.mark.parametrize("text", ["", "5", "5 m", "m", "1.5m", "-1m", "1m1h", "1m1m", "5M", "1mo", "0x10s", "1h 30m"])
def test_refuses_what_prometheus_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="not a Prometheus duration"):
        parse_ms(text)


def test_refuses_what_overflows_go_nanoseconds() -> None:
    with pytest.raises(ValueError, match="out of Prometheus' range"):
        parse_ms("293y")
    with pytest.raises(ValueError, match="out of Prometheus' range"):
        parse_ms("99999999999999999999s")


@pytest.mark.parametrize(("ms", "text"), [(0, "0s"), (1000, "1s"), (90_000, "1m30s"), (86_400_000, "1d"), (1500, "1s500ms")])
def test_formats_the_shortest_spelling(ms: int, text: str) -> None:
    assert format_ms(ms) == text
    assert parse_ms(text) == ms


@pytest.mark.parametrize(("ms", "text"), [(3_600_000, "1h"), (4_320_000, "72m"), (90_000, "90s"), (1500, "1500ms"), (0, "0s")])
def test_formats_one_unit_for_windows_that_rules_name(ms: int, text: str) -> None:
    assert format_ms(ms, one_unit=True) == text
    assert parse_ms(text) == ms


@pytest.mark.parametrize(
    ("seconds", "coarse", "text"),
    [(0.5, False, "500ms"), (90, False, "1m30s"), (0.5, True, "0s"), (59.9, True, "59s"), (95.4, True, "2m"),
     (5400, True, "1h30m"), (604_800, True, "7d"), (-3, True, "0s")],
)
def test_formats_seconds_exactly_or_coarsely_for_messages(seconds: float, coarse: bool, text: str) -> None:
    assert format_s(seconds, coarse=coarse) == text
