"""Fast reading of the few vLLM families the exporter needs from a Prometheus text payload.

A vLLM payload is mostly histogram buckets we never look at. Instead of tokenising every line,
``parse_needed`` searches the raw bytes for ``\\n<name>`` once per wanted family, and parses only the
lines it lands on. A payload that declares its families (``# TYPE`` lines, as every prometheus_client
payload does: each family's lines in one block after its declaration) is searched only inside the blocks
of the wanted families, found in one pass over the declarations; a family it does not declare is taken
as absent. A payload without declarations (or with more than ``MAX_DECLARED`` of them) is searched whole,
once per family. Exact-name matching means ``*_created`` samples (and any other family whose name
merely starts like a wanted one) are never picked up. ``max_samples`` bounds the work a hostile
payload can cause: past that many lines of one family, the rest of it is not read. A line with a
label value longer than ``MAX_LABEL_VALUE`` is skipped as malformed: ``model_name`` and ``engine``
are copied into several derived series, and a megabyte-long model name has no business there.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from obspack.catalogue.vllm import (
    CACHE_CONFIG_INFO,
    GPU_CACHE_USAGE,
    GPU_PREFIX_CACHE_HIT_RATE,
    GPU_PREFIX_CACHE_HITS,
    GPU_PREFIX_CACHE_QUERIES,
    KV_CACHE_USAGE,
    NUM_REQUESTS_RUNNING,
    PREFIX_CACHE_HITS,
    PREFIX_CACHE_QUERIES,
)

NEEDED: tuple[str, ...] = (
    CACHE_CONFIG_INFO,
    NUM_REQUESTS_RUNNING,
    KV_CACHE_USAGE,
    GPU_CACHE_USAGE,
    PREFIX_CACHE_HITS,
    PREFIX_CACHE_QUERIES,
    GPU_PREFIX_CACHE_HITS,
    GPU_PREFIX_CACHE_QUERIES,
    GPU_PREFIX_CACHE_HIT_RATE,
)

# Characters that may follow a metric name on a sample line: labels, or the space before the value.
_AFTER_NAME = frozenset(b"{ \t")
_FIRST_CHAR = frozenset(b"#_:abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
_ESCAPE = re.compile(r"\\(.)")
_UNESCAPED = {"n": "\n", "\\": "\\", '"': '"'}
MAX_LABEL_VALUE = 4096  # characters
MAX_DECLARED = 10_000  # `# TYPE` lines; past that, the payload is searched whole (bounded work either way)
_TYPE = b"# TYPE "
_NEWLINE = ord("\n")
_MAX_OTHER_HASHES = 2 * MAX_DECLARED + 2  # a HELP line per family, and a little more


class PayloadError(ValueError):
    """The payload is not a complete Prometheus text exposition (garbage, binary or truncated)."""


class Sample(NamedTuple):
    """One sample line of a wanted family: its labels and value (timestamps are ignored). A named tuple:
    one is built per needed line of every scrape, and a tuple is built faster than a frozen dataclass."""

    labels: Mapping[str, str]
    value: float


@dataclass(slots=True)
class Parsed:
    """The samples found per wanted family, how many wanted lines were malformed and skipped, and
    the families that had more than ``max_samples`` lines (the rest of them was not read)."""

    families: dict[str, list[Sample]] = field(default_factory=dict)
    skipped: int = 0
    truncated: list[str] = field(default_factory=list)


def check_payload(payload: bytes) -> None:
    """Raise PayloadError unless ``payload`` looks like a whole text exposition.

    Cheap on purpose: the first non-blank byte must start a comment or a metric name, and a
    non-empty payload must end with a newline (every exposition writer ends its last line; a body
    cut short by a dropped connection usually does not).
    """
    stripped = payload.lstrip()
    if not stripped:
        return
    if stripped[0] not in _FIRST_CHAR:
        raise PayloadError(f"payload does not start like Prometheus text (first byte {stripped[:1]!r})")
    if not payload.endswith(b"\n"):
        raise PayloadError("payload does not end with a newline: it was truncated")


def parse_needed(payload: bytes, names: Iterable[str] = NEEDED, max_samples: int | None = None) -> Parsed:
    """Return the samples of the families in ``names`` found in ``payload``.

    Lines whose labels or value cannot be read, or with a label value over ``MAX_LABEL_VALUE``
    characters, are skipped and counted in ``Parsed.skipped``. At most ``max_samples`` lines of each
    family are read (None: all); a family that has more is listed in ``Parsed.truncated``. Call
    ``check_payload`` first to reject payloads that are not expositions at all.
    """
    parsed = Parsed()
    declared = declarations(payload)
    for name in names:
        wanted = name.encode()
        if declared is None:
            regions = [(0, len(payload))]
        else:  # a counter may be declared with or without its _total
            regions = sorted({*declared.get(wanted, ()), *declared.get(wanted.removesuffix(b"_total"), ())})
        lines = (line for start, end in regions for line in _lines_of(payload, wanted, start, end))
        for count, line in enumerate(lines):
            if max_samples is not None and count >= max_samples:
                parsed.truncated.append(name)
                break
            try:
                sample = _read_line(line, len(name))
            except (ValueError, IndexError):
                parsed.skipped += 1
                continue
            # A value is no longer than its line: only a line over the cap needs its values measured.
            if len(line) > MAX_LABEL_VALUE and any(len(v) > MAX_LABEL_VALUE for v in sample.labels.values()):
                parsed.skipped += 1
                continue
            parsed.families.setdefault(name, []).append(sample)
    return parsed


def declarations(payload: bytes) -> dict[bytes, list[tuple[int, int]]] | None:
    """Where each family the payload declares is: from its ``# TYPE`` line to the next one (or the end).
    None when the payload declares nothing, or more than MAX_DECLARED families."""
    starts = []
    for start in _type_lines(payload):
        starts.append(start)
        if len(starts) > MAX_DECLARED:
            return None
    if not starts:
        return None
    spans: dict[bytes, list[tuple[int, int]]] = {}
    ends = [*starts[1:], len(payload)]
    for start, end in zip(starts, ends):
        name_start = start + len(_TYPE)
        line_end = payload.find(b"\n", name_start, end)
        space = payload.find(b" ", name_start, end if line_end == -1 else line_end)
        if space != -1:
            spans.setdefault(payload[name_start:space], []).append((start, end))
    return spans


def _type_lines(payload: bytes) -> Iterable[int]:
    """Where each ``# TYPE`` line begins, in order.

    The search goes from ``#`` to ``#`` (one ``memchr`` each, about eight times faster over a megabyte
    than searching for the whole ``\\n# TYPE ``, whose first byte is on every line). Past
    ``_MAX_OTHER_HASHES`` ``#`` that begin no declaration (HELP lines, comments, ``#`` in label
    values), it searches for the whole needle from there, so a payload full of ``#`` costs no more
    than the whole-needle search plus that many steps."""
    if payload.startswith(_TYPE):
        yield 0
    others = 0
    found = payload.find(b"#", 1)
    while found != -1:
        if payload[found - 1] == _NEWLINE and payload.startswith(_TYPE, found):
            yield found
        else:
            others += 1
            if others > _MAX_OTHER_HASHES:
                break
        found = payload.find(b"#", found + 1)
    needle = b"\n" + _TYPE
    found = payload.find(needle, found) if found != -1 else -1
    while found != -1:
        yield found + 1
        found = payload.find(needle, found + 1)


def _lines_of(payload: bytes, name: bytes, begin: int = 0, stop: int | None = None) -> Iterable[bytes]:
    """Yield every line of ``payload`` whose metric name is exactly ``name``, among the lines that begin
    within ``[begin, stop)``."""
    needle = b"\n" + name
    size = len(payload)
    stop = size if stop is None else stop
    # ``start`` is where a candidate line begins (-1: no more); the first line has no newline before it.
    first = begin == 0 and payload.startswith(name)
    start = 0 if first else _after(payload.find(needle, max(begin - 1, 0), stop))
    while start != -1:
        end_of_name = start + len(name)
        if end_of_name < size and payload[end_of_name] in _AFTER_NAME:
            end = payload.find(b"\n", end_of_name)
            if end == -1:
                end = size
            yield payload[start:end]
        start = _after(payload.find(needle, end_of_name, stop))


def _after(newline: int) -> int:
    """The index just after a found newline, or -1 when none was found."""
    return -1 if newline == -1 else newline + 1


# A target sends the same series every scrape, only the values change: the labels of a line are read once
# and kept, keyed by the line's bytes up to its closing brace. At most LABELS_KEPT label sets of at most
# LABELS_KEPT_BYTES each are kept (a few MiB at worst; a vLLM engine needs about 10), shared by the
# Samples that carry them, which nothing changes.
LABELS_KEPT = 1024
LABELS_KEPT_BYTES = 2048
_OPEN_BRACE = ord("{")


def _read_line(line: bytes, name_len: int) -> Sample:
    """``parse_sample_line`` of the line's text, with the labels of a line seen before taken as kept."""
    close = line.rfind(b"}")
    if close < LABELS_KEPT_BYTES and name_len < close and line[name_len] == _OPEN_BRACE:
        labels = _kept_labels(line[: close + 1], name_len)
        if labels is not None:
            return Sample(labels, _value_of(line[close + 1 :].decode("utf-8")))
    return parse_sample_line(line.decode("utf-8"), name_len)


@functools.lru_cache(maxsize=LABELS_KEPT)
def _kept_labels(head: bytes, name_len: int) -> Mapping[str, str] | None:
    """The labels of ``name{...}`` when the closing brace ends ``head``; else None (the whole line is
    then read as any other, with the same outcome)."""
    try:
        text = head.decode("utf-8")
        labels, end = parse_labels(text, name_len + 1)
    except (ValueError, IndexError):
        return None
    return labels if end == len(text) else None


def _value_of(rest: str) -> float:
    """The value of what follows the labels: a value and an optional timestamp."""
    fields = rest.split()
    if not 1 <= len(fields) <= 2:
        raise ValueError(f"expected a value and an optional timestamp, got {rest!r}")
    return float(fields[0])


# The usual line, as prometheus_client writes it: labels without spaces or escapes, a value, maybe a
# timestamp. One regular expression reads it; anything else goes through the label parser below.
_PLAIN_LINE = re.compile(r'\{((?:[a-zA-Z_][a-zA-Z0-9_]*="[^"\\\n]*",)*(?:[a-zA-Z_][a-zA-Z0-9_]*="[^"\\\n]*",?)?)\}[ \t]+(\S+)(?:[ \t]+\S+)?[ \t]*\Z')
_PLAIN_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"')


def parse_sample_line(line: str, name_len: int) -> Sample:
    """Parse ``name{labels} value [timestamp]``, where the name is the first ``name_len`` characters."""
    plain = _PLAIN_LINE.match(line, name_len)
    if plain is not None:
        return Sample(dict(_PLAIN_PAIR.findall(plain.group(1))), float(plain.group(2)))
    rest = line[name_len:]
    labels: dict[str, str] = {}
    if rest.startswith("{"):
        labels, end = parse_labels(rest, 1)
        rest = rest[end:]
    return Sample(labels, _value_of(rest))


def parse_labels(text: str, pos: int) -> tuple[dict[str, str], int]:
    """Parse the label pairs starting at ``pos`` (just after ``{``); return them and the index after ``}``.

    Values may contain escaped quotes, backslashes and newlines, and commas or braces inside quotes.
    """
    labels: dict[str, str] = {}
    while True:
        pos = _skip_spaces(text, pos)
        if text[pos] == "}":
            return labels, pos + 1
        eq = text.index("=", pos)
        name = text[pos:eq].strip()
        if not _LABEL_NAME.match(name):
            raise ValueError(f"bad label name {name!r}")
        pos = _skip_spaces(text, eq + 1)
        if text[pos] != '"':
            raise ValueError(f"label {name} has no opening quote")
        close = _closing_quote(text, pos + 1)
        raw = text[pos + 1 : close]
        labels[name] = _ESCAPE.sub(_unescape, raw) if "\\" in raw else raw
        pos = _skip_spaces(text, close + 1)
        if text[pos] == ",":
            pos += 1
        elif text[pos] != "}":
            raise ValueError(f"expected ',' or '}}' after label {name}")


def _closing_quote(text: str, start: int) -> int:
    """Index of the first ``"`` at or after ``start`` that is not escaped by a backslash."""
    pos = start
    while True:
        quote = text.index('"', pos)
        backslashes = 0
        back = quote - 1
        while back >= start and text[back] == "\\":
            backslashes += 1
            back -= 1
        if backslashes % 2 == 0:
            return quote
        pos = quote + 1


def _skip_spaces(text: str, pos: int) -> int:
    while text[pos] in " \t":
        pos += 1
    return pos


def _unescape(match: re.Match[str]) -> str:
    char = match.group(1)
    return _UNESCAPED.get(char, "\\" + char)
