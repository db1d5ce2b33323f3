"""Tests of obspack.exporter.parse: picking the needed families out of raw payloads."""

from __future__ import annotations

import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from obspack.exporter import parse as p
from obspack.exporter.parse import PayloadError, Sample, check_payload, parse_labels, parse_needed

from .conftest import FIXTURES, payload


def test_reads_the_needed_families_of_a_v1_payload() -> None:
    parsed = parse_needed(payload("v1_single.prom"))
    engine = {"engine": "0", "model_name": "acme/llm-7b"}
    assert parsed.skipped == 0
    assert parsed.families[p.NUM_REQUESTS_RUNNING] == [Sample(engine, 10.0)]
    assert parsed.families[p.KV_CACHE_USAGE] == [Sample(engine, 0.25)]
    assert parsed.families[p.PREFIX_CACHE_HITS] == [Sample(engine, 250.0)]
    assert parsed.families[p.PREFIX_CACHE_QUERIES] == [Sample(engine, 1000.0)]
    (config,) = parsed.families[p.CACHE_CONFIG_INFO]
    assert config.labels["num_gpu_blocks"] == "1000"
    assert config.labels["block_size"] == "16"
    assert config.labels["kv_cache_dtype_skip_layers"] == "[]"
    assert set(parsed.families) == {
        p.NUM_REQUESTS_RUNNING,
        p.KV_CACHE_USAGE,
        p.PREFIX_CACHE_HITS,
        p.PREFIX_CACHE_QUERIES,
        p.CACHE_CONFIG_INFO,
    }


def test_created_series_and_look_alike_names_are_not_picked_up() -> None:
    text = (
        b'vllm:prefix_cache_hits_created{engine="0",model_name="m"} 1.7e9\n'
        b'vllm:prefix_cache_hits_total_extra{engine="0",model_name="m"} 7\n'
        b'vllm:gpu_prefix_cache_hits_total{engine="0",model_name="m"} 3\n'
        b'xvllm:prefix_cache_hits_total{engine="0",model_name="m"} 5\n'
        b"# HELP vllm:prefix_cache_hits_total mentions vllm:prefix_cache_hits_total 9\n"
        b'vllm:prefix_cache_hits_total{engine="0",model_name="m"} 4\n'
    )
    parsed = parse_needed(text)
    assert parsed.skipped == 0
    assert parsed.families[p.PREFIX_CACHE_HITS] == [Sample({"engine": "0", "model_name": "m"}, 4.0)]
    assert parsed.families[p.GPU_PREFIX_CACHE_HITS] == [Sample({"engine": "0", "model_name": "m"}, 3.0)]


def test_first_line_without_labels_and_with_timestamp() -> None:
    parsed = parse_needed(b"vllm:num_requests_running 3 1700000000000\nvllm:kv_cache_usage_perc\t0.5\n")
    assert parsed.families[p.NUM_REQUESTS_RUNNING] == [Sample({}, 3.0)]
    assert parsed.families[p.KV_CACHE_USAGE] == [Sample({}, 0.5)]


def test_last_line_without_newline_is_still_read() -> None:
    parsed = parse_needed(b'# x\nvllm:num_requests_running{model_name="m"} 7')
    assert parsed.families[p.NUM_REQUESTS_RUNNING] == [Sample({"model_name": "m"}, 7.0)]


def test_escaped_quotes_commas_backslashes_in_labels() -> None:
    parsed = parse_needed(payload("escaped_labels.prom"))
    (running,) = parsed.families[p.NUM_REQUESTS_RUNNING]
    assert running.labels == {"engine": "0", "model_name": 'my "fast", model\\v2}'}
    (config,) = parsed.families[p.CACHE_CONFIG_INFO]
    assert config.labels["kv_cache_dtype_skip_layers"] == '["a", "b"]'
    assert config.labels["num_gpu_blocks"] == "100"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{a="1"}', {"a": "1"}),
        ('{ a = "1" , b="2", }', {"a": "1", "b": "2"}),
        ('{a="x\\\\"}', {"a": "x\\"}),
        ('{a="\\\\\\""}', {"a": '\\"'}),
        ('{a="line\\nbreak"}', {"a": "line\nbreak"}),
        ('{a="}{,="}', {"a": "}{,="}),
        ("{}", {}),
    ],
)
def test_parse_labels(text: str, expected: dict[str, str]) -> None:
    labels, end = parse_labels(text, 1)
    assert labels == expected
    assert end == len(text)


@pytest.mark.parametrize(
    "line",
    [
        'vllm:num_requests_running{model_name="m} 3',  # quote never closed
        "vllm:num_requests_running{model_name=m} 3",  # value not quoted
        'vllm:num_requests_running{model_name="m" engine="0"} 3',  # no comma
        'vllm:num_requests_running{1bad="m"} 3',  # bad label name
        'vllm:num_requests_running{model_name="m"} three',  # bad value
        'vllm:num_requests_running{model_name="m"}',  # no value
        'vllm:num_requests_running{model_name="m"} 3 4 5',  # too many fields
        'vllm:num_requests_running{model_name="m"',  # cut inside the labels
    ],
)
def test_malformed_needed_lines_are_skipped_and_counted(line: str) -> None:
    text = f'{line}\nvllm:kv_cache_usage_perc{{model_name="m"}} 0.5\n'.encode()
    parsed = parse_needed(text)
    assert parsed.skipped == 1
    assert p.NUM_REQUESTS_RUNNING not in parsed.families
    assert parsed.families[p.KV_CACHE_USAGE] == [Sample({"model_name": "m"}, 0.5)]


def test_invalid_utf8_in_a_needed_line_is_skipped() -> None:
    parsed = parse_needed(b'vllm:num_requests_running{model_name="\xff"} 3\n')
    assert parsed.skipped == 1
    assert parsed.families == {}


def test_special_float_values_parse() -> None:
    parsed = parse_needed(
        b'vllm:kv_cache_usage_perc{model_name="a"} NaN\nvllm:kv_cache_usage_perc{model_name="b"} +Inf\n'
    )
    values = [s.value for s in parsed.families[p.KV_CACHE_USAGE]]
    assert values[0] != values[0]  # NaN
    assert values[1] == float("inf")


@pytest.mark.parametrize(
    "body",
    [
        b"<html><body>502 Bad Gateway</body></html>\n",
        b'{"error": "not found"}\n',
        b"\x00\x01\x02\xff garbage",
        b'vllm:num_requests_running{model_name="m"} 3\nvllm:kv_cache_usage_perc{model_na',
        b"# HELP vllm:num_requests_running Number",
    ],
    ids=["html", "json", "binary", "truncated-in-labels", "truncated-in-help"],
)
def test_check_payload_rejects_garbage_and_truncation(body: bytes) -> None:
    with pytest.raises(PayloadError):
        check_payload(body)


@pytest.mark.parametrize("body", [b"", b"\n", b"# only a comment\n", b"up 1\n", b"  \n# TYPE x gauge\nx 1\n"])
def test_check_payload_accepts_expositions(body: bytes) -> None:
    check_payload(body)


@pytest.mark.parametrize("name", sorted(path.name for path in FIXTURES.glob("*.prom")))
def test_fixture_values_match_the_reference_parser(name: str) -> None:
    """Every sample found agrees with prometheus_client's parser on the same text."""
    text = payload(name)
    reference = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
        if s.name in p.NEEDED
    }
    parsed = parse_needed(text)
    ours = {
        (family, tuple(sorted(sample.labels.items()))): sample.value
        for family, samples in parsed.families.items()
        for sample in samples
    }
    assert parsed.skipped == 0
    assert ours == reference


def test_at_most_max_samples_lines_of_a_family_are_read() -> None:
    text = b"".join(b'vllm:num_requests_running{model_name="m%d"} 1\n' % i for i in range(10))
    text += b'vllm:kv_cache_usage_perc{model_name="m0"} 0.5\n'
    parsed = parse_needed(text, max_samples=4)
    assert [s.labels["model_name"] for s in parsed.families[p.NUM_REQUESTS_RUNNING]] == [
        "m0",
        "m1",
        "m2",
        "m3",
    ]
    assert parsed.truncated == [p.NUM_REQUESTS_RUNNING]
    assert parsed.families[p.KV_CACHE_USAGE] == [Sample({"model_name": "m0"}, 0.5)]
    assert parse_needed(text, max_samples=10).truncated == []


def test_a_line_with_an_overlong_label_value_is_skipped() -> None:
    long_name = "x" * (p.MAX_LABEL_VALUE + 1)
    text = (
        f'vllm:num_requests_running{{model_name="{long_name}"}} 1\n'
        f'vllm:num_requests_running{{model_name="{long_name[:-1]}"}} 2\n'
    ).encode()
    parsed = parse_needed(text)
    assert parsed.skipped == 1
    assert parsed.families[p.NUM_REQUESTS_RUNNING] == [Sample({"model_name": long_name[:-1]}, 2.0)]


def _whole(payload_bytes: bytes, monkeypatch: pytest.MonkeyPatch) -> p.Parsed:
    """What parse_needed reads when it searches the whole payload (no use of the declarations)."""
    with monkeypatch.context() as m:
        m.setattr(p, "declarations", lambda _payload: None)
        return parse_needed(payload_bytes)


@pytest.mark.parametrize("name", sorted(f.name for f in FIXTURES.glob("*.prom")))
def test_reading_through_the_declarations_finds_what_the_whole_search_finds(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    body = payload(name)
    assert p.declarations(body) is not None, "the fixtures declare their families, as vLLM does"
    assert parse_needed(body) == _whole(body, monkeypatch)


def test_a_counter_declared_without_its_total_and_several_blocks_of_one_family() -> None:
    text = (
        b"# TYPE vllm:prefix_cache_hits counter\n"
        b'vllm:prefix_cache_hits_total{model_name="a"} 4\n'
        b"# TYPE vllm:num_requests_running gauge\n"
        b'vllm:num_requests_running{model_name="a"} 1\n'
        b"# TYPE other gauge\nother 1\n"
        b"# TYPE vllm:num_requests_running gauge\n"  # a second registry's block, concatenated
        b'vllm:num_requests_running{model_name="b"} 2\n'
    )
    parsed = parse_needed(text)
    assert parsed.families[p.PREFIX_CACHE_HITS] == [Sample({"model_name": "a"}, 4.0)]
    assert parsed.families[p.NUM_REQUESTS_RUNNING] == [Sample({"model_name": "a"}, 1.0), Sample({"model_name": "b"}, 2.0)]


def test_a_payload_that_declares_families_is_read_only_in_their_blocks() -> None:
    """The text format keeps a family's lines in one block after its declaration: a sample of a wanted
    family outside its block (or of a family never declared, beside declared ones) is not read."""
    text = (
        b"# TYPE vllm:num_requests_running gauge\n"
        b'vllm:num_requests_running{model_name="a"} 1\n'
        b"# TYPE other gauge\n"
        b'vllm:num_requests_running{model_name="stray"} 9\n'
        b'vllm:kv_cache_usage_perc{model_name="a"} 0.5\n'
    )
    parsed = parse_needed(text)
    assert parsed.families == {p.NUM_REQUESTS_RUNNING: [Sample({"model_name": "a"}, 1.0)]}


def test_too_many_declarations_fall_back_to_the_whole_search() -> None:
    text = b"".join(b"# TYPE f%d gauge\nf%d 1\n" % (i, i) for i in range(p.MAX_DECLARED + 1))
    text += b'vllm:num_requests_running{model_name="a"} 1\n'
    assert p.declarations(text) is None
    assert parse_needed(text).families == {p.NUM_REQUESTS_RUNNING: [Sample({"model_name": "a"}, 1.0)]}


@pytest.mark.parametrize("name", sorted(f.name for f in FIXTURES.glob("*.prom")))
def test_the_plain_line_fast_path_reads_what_the_label_parser_reads(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    body = payload(name)
    fast = parse_needed(body)
    monkeypatch.setattr(p, "_PLAIN_LINE", re.compile(r"(?!)"))  # never matches: every line through parse_labels
    assert parse_needed(body) == fast
    assert fast.families, name


def _type_line_starts(payload_bytes: bytes) -> list[int]:
    """Every ``# TYPE `` at the start of a line, by the definition (a regular expression)."""
    return [m.start() for m in re.finditer(rb"^# TYPE ", payload_bytes, re.MULTILINE)]


@pytest.mark.parametrize(
    "text",
    [
        b"# TYPE a gauge\na 1\n# HELP b B.\n# TYPE b gauge\nb 1\n",
        b"# HELP a A # with a hash\n# TYPE a gauge\n#comment\n# TYPEX x\nx # TYPE y\n# TYPE",
        b'# TYPE a gauge\na{v="#"} 1\na{v="\\n# TYPE fake"} 2\n#\n# TYPE b counter\n',
        b"#" * 5 + b"\n# TYPE a gauge\n",
        b"",
        b"no declarations at all\n",
    ],
    ids=["plain", "hashes-and-lookalikes", "hashes-in-values", "hashes-first", "empty", "none"],
)
def test_the_declaration_search_finds_every_type_line_and_nothing_else(text: bytes) -> None:
    assert list(p._type_lines(text)) == _type_line_starts(text)


def test_a_payload_full_of_hashes_switches_to_the_whole_search_and_misses_nothing() -> None:
    """Past the cap of other ``#``, the rest is searched for the whole needle: declarations before
    and after the switch, and one right after the ``#`` where it happens, are all found."""
    stray = b'x{v="' + b"#" * (p._MAX_OTHER_HASHES + 5) + b'"} 1\n'
    text = b"# TYPE a gauge\n" + stray + b"# TYPE b gauge\nb 1\n" + stray + b"# TYPE c gauge\n"
    assert list(p._type_lines(text)) == _type_line_starts(text)
    assert len(_type_line_starts(text)) == 3


@pytest.mark.parametrize("name", sorted(f.name for f in FIXTURES.glob("*.prom")))
def test_the_declaration_search_on_the_fixtures(name: str) -> None:
    body = payload(name)
    assert list(p._type_lines(body)) == _type_line_starts(body)


KEPT_LINES = [
    'vllm:num_requests_running{model_name="m",engine="0"} 3',
    'vllm:num_requests_running{engine="0",model_name="m",} 4 1700000000000',  # trailing comma, a timestamp
    'vllm:num_requests_running{ model_name = "m" , engine="1" } 5',  # spaces inside the braces
    'vllm:num_requests_running{model_name="a}b"} 6',  # a brace inside a value
    'vllm:num_requests_running{model_name="a\\"q\\\\b\\n"} 7',  # escapes
    'vllm:num_requests_running{model_name="m"}8',  # no space before the value
    'vllm:num_requests_running{model_name="m"} 9 }',  # a brace where the timestamp goes (the old reading)
    'vllm:num_requests_running{model_name="m"} +Inf',
    'vllm:num_requests_running{model_name="m"} 1 2 3',  # too many fields
    'vllm:num_requests_running{model_name="m"} three',
    'vllm:num_requests_running{model_name="m",} } 3',
    'vllm:num_requests_running{model_name="m"',
    'vllm:num_requests_running{model_name=m} 3',
    'vllm:num_requests_running{1bad="m"} 3',
    'vllm:num_requests_running 10',
    'vllm:num_requests_running{} 11',
]


def _reference(line: bytes) -> Sample | None:
    """What reading the line's text from scratch gives (None: skipped)."""
    try:
        return p.parse_sample_line(line.decode("utf-8"), len(p.NUM_REQUESTS_RUNNING))
    except (ValueError, IndexError):
        return None


@pytest.mark.parametrize("line", [*(text.encode() for text in KEPT_LINES), b'vllm:num_requests_running{model_name="m"} 1\xff'])
def test_labels_kept_from_an_earlier_scrape_give_what_a_fresh_read_gives(line: bytes) -> None:
    p._kept_labels.cache_clear()
    expected = _reference(line)
    for _ in range(3):  # the first read keeps the labels, the next ones use them
        parsed = parse_needed(line + b"\n")
        assert parsed.skipped == (expected is None)
        assert parsed.families.get(p.NUM_REQUESTS_RUNNING, []) == ([] if expected is None else [expected])


def test_kept_labels_are_bounded_in_number_and_size() -> None:
    p._kept_labels.cache_clear()
    body = "".join(f'vllm:num_requests_running{{model_name="m{n}"}} {n}\n' for n in range(p.LABELS_KEPT + 50))
    parsed = parse_needed(body.encode())
    assert [s.value for s in parsed.families[p.NUM_REQUESTS_RUNNING]] == [float(n) for n in range(p.LABELS_KEPT + 50)]
    assert p._kept_labels.cache_info().currsize == p.LABELS_KEPT
    p._kept_labels.cache_clear()
    long_name = "m" * p.LABELS_KEPT_BYTES
    parsed = parse_needed(f'vllm:num_requests_running{{model_name="{long_name}"}} 1\n'.encode())
    assert parsed.families[p.NUM_REQUESTS_RUNNING] == [Sample({"model_name": long_name}, 1.0)]
    assert p._kept_labels.cache_info().currsize == 0
