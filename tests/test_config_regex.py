"""Regexes in the config: checked with RE2 everywhere one is accepted, refused with the real problem at
FILE:LINE (never with a hint that turns a match into an equality), the verdict the same as Prometheus'
own (promtool), and a user's text never taken for a runbook placeholder."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from obspack.config import load_config
from obspack.config.regex import problem
from obspack.errors import ConfigError
from obspack.pack import build
from tests.support.tools import require_tool

LOOKAHEAD = "llm-(?!canary).*"
REFUSED = (
    "'llm-(?!canary).*' is not a regular expression Prometheus accepts: a negative lookahead (?!...) is not "
    "supported by RE2, Prometheus' regex engine"
)

# Every setting that holds a regex, as YAML, with the line of the setting.
REGEX_SETTINGS = {
    "vllm_containers.image_regex": ({"vllm_containers": {"image_regex": LOOKAHEAD}}, 2),
    "vllm_containers.name_regex": ({"vllm_containers": {"name_regex": LOOKAHEAD}}, 2),
    "alerts.VLLMTargetDown.job_regex": ({"alerts": {"VLLMTargetDown": {"job_regex": LOOKAHEAD}}}, 3),
    "slos.availability.handler_regex": ({"slos": {"availability": {"handler_regex": LOOKAHEAD}}}, 3),
    "slos.models.0.model_regex": ({"slos": {"models": [{"model_regex": LOOKAHEAD}]}}, 3),
    "scope.namespace_regex": ({"scope": {"namespace_regex": LOOKAHEAD}}, 2),
    "scope.cluster_regex": ({"scope": {"cluster_regex": LOOKAHEAD}}, 2),
}
SOURCES = ("vllm", "cadvisor", "kube_state_metrics", "dcgm", "exporter")


def _load(tmp_path: Path, data: object) -> list[str]:
    path = tmp_path / "obspack.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    return [p.replace(str(path), "FILE") for p in err.value.problems]


@pytest.mark.parametrize("key", sorted(REGEX_SETTINGS))
def test_every_regex_setting_is_checked_with_re2(tmp_path: Path, key: str) -> None:
    data, line = REGEX_SETTINGS[key]
    assert _load(tmp_path, data) == [f"FILE:{line}: {key}: {REFUSED}"]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("op", ["=~", "!~"])
def test_every_regex_matcher_of_every_selector_is_checked_with_re2(tmp_path: Path, source: str, op: str) -> None:
    data = {"selectors": {source: f'job="vllm", namespace{op}"{LOOKAHEAD}"'}}
    assert _load(tmp_path, data) == [f'FILE:2: selectors.{source}: namespace{op}"{LOOKAHEAD}": {REFUSED}']


# What users write, and the problem each message must name.
SELECTOR_MISTAKES = {
    'namespace=~"llm-(prod|staging"': "'llm-(prod|staging' is not a regular expression Prometheus accepts: "
    "a group is opened with ( and never closed (missing ))",
    "namespace=~'llm-['": "'llm-[' is not a regular expression Prometheus accepts: the character class [ is "
    "never closed (missing ])",
    'namespace=~"llm-(?!canary).*"': REFUSED,
    'pod=~"(vllm)-\\\\1"': "'(vllm)-\\\\1' is not a regular expression Prometheus accepts: a backreference (\\1) is "
    "not supported by RE2, Prometheus' regex engine",
    'pod!~"(?<=x)y"': "'(?<=x)y' is not a regular expression Prometheus accepts: a lookbehind (?<=...) is not "
    "supported by RE2, Prometheus' regex engine",
    "pod=~`vllm++`": "'vllm++' is not a regular expression Prometheus accepts: ++ repeats a repetition, which RE2 "
    "does not allow (write one operator)",
    'job=~"*vllm*"': "'*vllm*' is not a regular expression Prometheus accepts: * has nothing before it to repeat "
    "(for any text write .*)",
    'job=~"a)|(b"': "'a)|(b' is not a regular expression Prometheus accepts: a ) closes no group (unbalanced "
    "parenthesis)",
}


@pytest.mark.parametrize("matcher", sorted(SELECTOR_MISTAKES))
def test_a_bad_regex_in_a_selector_gets_its_real_problem_and_no_equality_hint(tmp_path: Path, matcher: str) -> None:
    [message] = _load(tmp_path, {"selectors": {"dcgm": matcher}})
    shown = matcher.replace("`vllm++`", '"vllm++"')  # a raw string is shown as the double-quoted one
    assert message == f"FILE:2: selectors.dcgm: {shown}: {SELECTOR_MISTAKES[matcher]}"
    assert "must be in quotes" not in message


def test_an_unquoted_regex_value_gets_the_regex_operator_back(tmp_path: Path) -> None:
    assert _load(tmp_path, {"selectors": {"vllm": "job=~vllm"}}) == [
        "FILE:2: selectors.vllm: 'job=~vllm' is not a list of label matchers "
        '(the value of job must be in quotes: job=~"vllm")'
    ]


# Regexes with Prometheus' verdict: promtool (Go's regexp) must agree with obspack on each.
VERDICTS = [
    ".*vllm.*", "llm-(prod|staging)", "(?i)llama.*", "[[:alpha:]]+", "vllm-\\d+", "(?P<name>x)", "a{1000}", "\\pL",
    "llm-(prod|staging", "llm-[", "llm-(?!canary).*", "(a)\\1", "a++", "a**", "a{1001}", "(?<n>x)", "*vllm*",
    "\\C", "\\Z", "a)|(b", "[z-a]", "(?#c)", "x\\", "(?i", "a{2,1}", "((a{100}){100}){100}", "\\8",
]


@pytest.mark.tool
def test_obspack_refuses_exactly_what_promtool_refuses(tmp_path: Path) -> None:
    promtool = require_tool("promtool")
    rules = [{"record": f"obspack:regex:r{i}", "expr": f"up{{job=~{json_string(r)}}}"} for i, r in enumerate(VERDICTS)]
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "regexes", "rules": rules}]}), encoding="utf-8")
    out = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    refused_by_go = {VERDICTS[i] for i, r in enumerate(rules) if f'"{r["record"]}": could not parse' in out.stdout + out.stderr}
    refused_by_obspack = {
        r for r in VERDICTS if (problem(r) or "").startswith((f"{r!r} is not a regular", f"{r!r} names a group"))
    }
    assert refused_by_obspack == refused_by_go
    # and obspack refuses a few more that Prometheus takes but its own parsers cannot read, saying so
    assert problem("\\pL") == (
        "'\\\\pL' is a regular expression Prometheus accepts, but obspack cannot read it (bad escape \\p at "
        "position 0); write it without that construct"
    )


def json_string(value: str) -> str:
    import json

    return json.dumps(value)


@pytest.mark.parametrize(
    "selectors",
    [
        {"vllm": 'namespace!="<none>"', "dcgm": 'namespace!="<none>"'},
        {"vllm": 'pod=~"(?P<x>.*)"', "cadvisor": 'pod=~"(?P<pod>.*)"'},
    ],
    ids=["<none>", "named group"],
)
def test_a_users_text_is_never_a_runbook_placeholder(tmp_path: Path, selectors: dict[str, str]) -> None:
    path = tmp_path / "obspack.yaml"
    path.write_text(yaml.safe_dump({"selectors": selectors, "grafana": {"url": "https://grafana/<team>"}}))
    pack = build(load_config(path))
    pages = "\n".join(text for _, text in pack.runbooks)
    for selector in selectors.values():
        assert selector in pages, "the selector is on the pages as written"
    assert "`<none>`" not in pages and "`<x>`" not in pages and "`<team>`" not in pages
