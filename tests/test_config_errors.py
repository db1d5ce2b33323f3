"""Every class of config error: one example each, the exact message it gets, and the same table in
docs/config.md (each message must appear there word for word, FILE standing for the config's path)."""

from __future__ import annotations

from pathlib import Path

import pytest

from obspack.config import Alerts, load_config
from obspack.errors import ConfigError
from obspack.yamlsource import MAX_BYTES

DOCS = Path(__file__).resolve().parents[1] / "docs" / "config.md"
ALL_DISABLED = "alerts:\n" + "".join(f"  {name}: {{enabled: false}}\n" for name in Alerts.model_fields)

# class: (file content, the first error line with the path written FILE)
ERRORS: dict[str, tuple[bytes | None, str]] = {
    "unreadable file": (None, "FILE: cannot read the config file (No such file or directory)"),
    "file too large": (
        b"# " + b"x" * MAX_BYTES,
        "FILE: the config file is larger than 16 MiB (a complete one is a few KB)",
    ),
    "not UTF-8": (b"cluster_label: \xff\n", "FILE:1: the config is not UTF-8 text (byte 0xff); save it as UTF-8"),
    "binary content": (b"cluster_label: a\x00\n", "FILE:1: not valid YAML (control characters are not allowed '\\x00')"),
    "not YAML": (b"alerts: {VLLMTargetDown: {enabled: false}\n", "FILE:2: not valid YAML (did not find expected ',' or '}')"),
    "a tab in the indentation": (
        b"alerts:\n\tVLLMTargetDown:\n    enabled: false\n",
        "FILE:2: not valid YAML (a tab at column 1: YAML indents with spaces, never tabs)",
    ),
    "nested too deeply": (
        b"a: " + b"[" * 65 + b"]" * 65 + b"\n",
        "FILE:1: nested more than 64 levels deep (settings are at most 4)",
    ),
    "too many values": (
        "".join(f"k{i}: 1\n" for i in range(10_001)).encode(),
        "FILE:5000: more than 10000 keys and values (a complete config has about 250)",
    ),
    "not a mapping": (b"- cluster_label\n", "FILE:1: the config must be a mapping of settings (see `obspack init`)"),
    "duplicate key": (b"cluster_label: a\ncluster_label: b\n", "FILE:2: cluster_label: duplicate key"),
    "unknown key": (
        b"alerts:\n  VLLMKVCacheUsageHigh:\n    ratoi: 0.8\n",
        "FILE:3: alerts.VLLMKVCacheUsageHigh.ratoi: unknown key (did you mean 'ratio'? "
        "allowed: enabled, for, labels, ratio, severity)",
    ),
    "moved key": (
        b"cost:\n  role_label: llm-d.ai/role\n",
        "FILE:2: cost.role_label: moved to disaggregation.role_label: set it there (same values), it is shared by "
        "the alerts, dashboards and cost records",
    ),
    "text expected": (
        b"cluster_label: 1\n",
        "FILE:1: cluster_label: expected text, got the number 1 (quote it if you mean the text)",
    ),
    "number expected": (
        b"alerts:\n  VLLMKVCacheUsageHigh:\n    ratio: yes\n",
        "FILE:3: alerts.VLLMKVCacheUsageHigh.ratio: expected a number, got the boolean true "
        "(allowed: 0.001 to 0.999, below the critical one)",
    ),
    "boolean expected": (
        b"alerts:\n  VLLMTargetDown:\n    enabled: 'no'\n",
        "FILE:3: alerts.VLLMTargetDown.enabled: expected true or false, got the text 'no'",
    ),
    "mapping expected": (b"alerts: [VLLMTargetDown]\n", "FILE:1: alerts: expected a mapping of settings, got a list"),
    "list expected": (b"grafana:\n  tags: obspack\n", "FILE:2: grafana.tags: expected a list, got the text 'obspack'"),
    "not a finite number": (
        b"alerts:\n  VLLMKVCacheUsageHigh:\n    ratio: 1e400\n",
        "FILE:3: alerts.VLLMKVCacheUsageHigh.ratio: inf is not a finite number "
        "(allowed: 0.001 to 0.999, below the critical one)",
    ),
    "number out of range": (
        b"alerts:\n  VLLMRequestQueueBacklog:\n    min_waiting: 0\n",
        "FILE:3: alerts.VLLMRequestQueueBacklog.min_waiting: 0 is out of range (allowed: 1 to 100000)",
    ),
    "a percentage where a share goes": (
        b"alerts:\n  VLLMKVCacheUsageHigh:\n    ratio: 85\n",
        "FILE:3: alerts.VLLMKVCacheUsageHigh.ratio: 85 is out of range: a share is a fraction, not a percentage "
        "(did you mean 0.85?) (allowed: 0.001 to 0.999, below the critical one)",
    ),
    "a latency threshold written as a duration": (
        b"slos:\n  time_to_first_token:\n    threshold: 1s\n",
        "FILE:3: slos.time_to_first_token.threshold: expected a number of seconds, got the duration '1s' (write 1; "
        "allowed: seconds, a bucket bound vLLM exports: 0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, "
        "0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560)",
    ),
    "not one of the choices": (
        b"alerts:\n  VLLMTargetDown:\n    severity: page\n",
        "FILE:3: alerts.VLLMTargetDown.severity: 'page' is not 'critical', 'warning' or 'info'",
    ),
    "not a duration": (
        b"alerts:\n  VLLMKVCacheUsageHigh:\n    for: 30s1m\n",
        "FILE:3: alerts.VLLMKVCacheUsageHigh.for: '30s1m' is not a Prometheus duration (allowed: whole numbers "
        "with units y, w, d, h, m, s, ms, biggest first, e.g. 30s, 5m, 1h30m)",
    ),
    "duration beyond Prometheus' range": (
        b"alerts:\n  VLLMKVCacheUsageHigh:\n    for: 300y\n",
        "FILE:3: alerts.VLLMKVCacheUsageHigh.for: '300y' is out of Prometheus' range (at most about 292y)",
    ),
    "duration out of range": (
        b"alerts:\n  VLLMZeroThroughput:\n    window: 0s\n",
        "FILE:3: alerts.VLLMZeroThroughput.window: '0s' is out of range "
        "(allowed: above 0, at most 1d, and at least twice scrape_interval)",
    ),
    "window shorter than two scrapes": (
        b"scrape_interval: 1m\nalerts:\n  VLLMZeroThroughput:\n    window: 90s\n",
        "FILE:4: alerts.VLLMZeroThroughput.window: '90s' is shorter than two scrapes (scrape_interval 1m, FILE:1), "
        "so it can hold a single sample and the rate is empty (allowed: at least 2m)",
    ),
    "window shorter than for": (
        b"alerts:\n  VLLMContainerOOMKilled:\n    for: 5m\n    window: 6m\n",
        "FILE:4: alerts.VLLMContainerOOMKilled.window: '6m' is shorter than `for` (5m, FILE:3) plus two evaluations "
        "of a minute: the event leaves the window before the alert can fire (allowed: at least 7m)",
    ),
    "window shorter than for and two rule evaluations": (
        b"rule_interval: 10s\nalerts:\n  VLLMContainerOOMKilled:\n    for: 1m\n    window: 70s\n",
        "FILE:5: alerts.VLLMContainerOOMKilled.window: '70s' is shorter than `for` (1m, FILE:4) plus two evaluations "
        "of rule_interval 10s: the event leaves the window before the alert can fire (allowed: at least 1m20s)",
    ),
    "contradicting thresholds": (
        b"alerts:\n  VLLMKVCacheUsageHigh:\n    ratio: 0.96\n  VLLMKVCacheUsageCritical:\n    ratio: 0.95\n",
        "FILE:3: alerts.VLLMKVCacheUsageHigh.ratio: 0.96 is not below alerts.VLLMKVCacheUsageCritical.ratio "
        "(0.95, FILE:5) (allowed: the warning threshold below the critical one)",
    ),
    "more reversals than the window holds": (
        b"alerts:\n  VLLMAutoscalerThrashing:\n    reversals: 16\n",
        "FILE:3: alerts.VLLMAutoscalerThrashing.reversals: 16 rises and as many falls cannot fit in the window "
        "(30m, the default): the replicas are compared minute by minute, so it holds at most 15 of each "
        "(allowed: at most 15 with this window, or a longer window)",
    ),
    "every alert disabled": (
        ALL_DISABLED.encode(),
        "FILE:1: alerts: every alert is disabled (allowed: at least one enabled)",
    ),
    "not a label name": (
        b"cluster_label: k8s-cluster\n",
        "FILE:1: cluster_label: 'k8s-cluster' is not a valid label name (allowed: [a-zA-Z_][a-zA-Z0-9_]*)",
    ),
    "reserved label name": (
        b"cluster_label: __name__\n",
        "FILE:1: cluster_label: '__name__' is reserved: label names starting with __ are Prometheus' own",
    ),
    "label the rules set": (
        b"common_labels:\n  severity: page\n",
        "FILE:1: common_labels: labels may not set ['severity']: the alerts carry them from their rules "
        "(set severity with the 'severity' key)",
    ),
    "cluster label the rules use": (
        b"cluster_label: pod\n",
        "FILE:1: cluster_label: 'pod' is a label obspack's rules use for something else (allowed: another label name)",
    ),
    "static label on the cluster label": (
        b"cluster_label: k8s_cluster\ncommon_labels:\n  k8s_cluster: prod\n",
        "FILE:3: common_labels.k8s_cluster: sets the cluster label (k8s_cluster, FILE:1), which each alert takes "
        "from its rule (allowed: other label names)",
    ),
    "static label on the cluster label, on the burn alert": (
        b"slos:\n  labels:\n    cluster: prod\n",
        "FILE:3: slos.labels.cluster: sets the cluster label (cluster, the default), which each alert takes "
        "from its rule (allowed: other label names)",
    ),
    "template in a label value": (
        b"common_labels:\n  team: '{{ $labels.namespace }}'\n",
        "FILE:2: common_labels.team: '{{ $labels.namespace }}' contains '{{' or '}}', "
        "which Prometheus would expand as a template (allowed: plain text)",
    ),
    "control character": (
        b'grafana:\n  folder: "vLLM\\tGPU"\n',
        "FILE:2: grafana.folder: contains U+0009, a control character (allowed: one line of printable text)",
    ),
    "line separator": (
        b'grafana:\n  tags: [obspack, "a\\u2028b"]\n',
        "FILE:2: grafana.tags.1: contains U+2028, a line separator (allowed: one line of printable text)",
    ),
    "non-character": (
        b'grafana:\n  datasource: "prom\\uFFFF"\n',
        "FILE:2: grafana.datasource: contains U+FFFF, a non-character or unassigned code point "
        "(allowed: one line of printable text)",
    ),
    "invisible character": (
        b'common_labels:\n  team: "ml\\u202eplatform"\n',
        "FILE:2: common_labels.team: contains U+202E, an invisible format character "
        "(allowed: one line of printable text)",
    ),
    "too long": (
        b"common_labels:\n  team: " + b"x" * 1025 + b"\n",
        "FILE:2: common_labels.team: 1025 characters is too long (allowed: at most 1024)",
    ),
    "too many entries": (
        ("common_labels:\n" + "".join(f"  l{i}: x\n" for i in range(33))).encode(),
        "FILE:1: common_labels: 33 entries are too many (allowed: at most 32)",
    ),
    "not a regular expression": (
        b"vllm_containers:\n  image_regex: '(vllm'\n",
        "FILE:2: vllm_containers.image_regex: '(vllm' is not a regular expression Prometheus accepts: "
        "a group is opened with ( and never closed (missing ))",
    ),
    "regular expression RE2 refuses": (
        b"vllm_containers:\n  image_regex: 'vllm.{1,1001}'\n",
        "FILE:2: vllm_containers.image_regex: 'vllm.{1,1001}' is not a regular expression Prometheus accepts: "
        "the repetition {1,1001} is over RE2's limit of 1000",
    ),
    "regular expression in a selector": (
        b"selectors:\n  dcgm: namespace=~\"llm-(?!canary).*\"\n",
        "FILE:2: selectors.dcgm: namespace=~\"llm-(?!canary).*\": 'llm-(?!canary).*' is not a regular expression "
        "Prometheus accepts: a negative lookahead (?!...) is not supported by RE2, Prometheus' regex engine",
    ),
    "regular expression obspack cannot read": (
        b"vllm_containers:\n  image_regex: '\\pL'\n",
        "FILE:2: vllm_containers.image_regex: '\\\\pL' is a regular expression Prometheus accepts, but obspack "
        "cannot read it (bad escape \\p at position 0); write it without that construct",
    ),
    "not label matchers": (
        b"selectors:\n  vllm: job=vllm\n",
        "FILE:2: selectors.vllm: 'job=vllm' is not a list of label matchers "
        "(the value of job must be in quotes: job=\"vllm\")",
    ),
    "duration without a unit": (
        b"scrape_interval: 30\n",
        "FILE:1: scrape_interval: expected a duration with a unit, got the number 30 "
        "(write '30s' for seconds; units: ms, s, m, h, d)",
    ),
    "not one of the periods": (b"slos:\n  period: 7d\n", "FILE:2: slos.period: '7d' is not '30d' or '28d'"),
    "selector on the metric name": (
        b'selectors:\n  vllm: __name__="up"\n',
        "FILE:2: selectors.vllm: selectors may not match __name__ (the metric name comes from obspack)",
    ),
    "not a Kubernetes name": (
        b"prometheus_rule:\n  namespace: Monitoring\n",
        "FILE:2: prometheus_rule.namespace: 'Monitoring' is not a Kubernetes name "
        "(allowed: lower-case a-z, 0-9 and '-', at most 63)",
    ),
    "not a Kubernetes label": (
        b"prometheus_rule:\n  labels:\n    release: kube prometheus\n",
        "FILE:2: prometheus_rule.labels: release: 'kube prometheus' is not a Kubernetes label value "
        "(allowed: up to 63 of A-Z, a-z, 0-9, '-', '_', '.', starting and ending alphanumeric)",
    ),
    "not a URL": (
        b"runbook_base_url: 'https://wiki.example.com/run books'\n",
        "FILE:1: runbook_base_url: 'https://wiki.example.com/run books' is not a URL obspack can print as is "
        "(allowed: empty, or starting with a letter, digit, '.' or '/', without spaces, quotes, backslashes or braces)",
    ),
    "not a Grafana refresh": (
        b"grafana:\n  refresh: 1s\n",
        "FILE:2: grafana.refresh: '1s' is out of range (allowed: 5s, Grafana's default minimum, to 1d)",
    ),
    "prices without a currency": (
        b"cost:\n  gpus:\n    - {model_regex: 'NVIDIA H100.*', hourly: 2.5}\n",
        "FILE:2: cost.gpus: a price needs a currency, and cost.currency is GPU-hours (the default), the unit of a "
        "pack without prices (allowed: a currency such as USD or EUR)",
    ),
    "prices with OpenCost": (
        b"cost:\n  source: opencost\n  currency: USD\n  default_hourly: 2\n",
        "FILE:4: cost.default_hourly: a price here conflicts with cost.source opencost (FILE:2), which reads every "
        "price from OpenCost's node_gpu_hourly_cost (allowed: no prices with opencost, or source config)",
    ),
    "node pool without its label": (
        b"cost:\n  currency: USD\n  gpus:\n    - {model_regex: 'NVIDIA H100.*', hourly: 1.1, node_pool_regex: 'spot-.*'}\n",
        "FILE:4: cost.gpus.0.node_pool_regex: needs the node label that names the pool, and cost.node_pool_label is "
        "empty (the default) (allowed: set node_pool_label, e.g. karpenter.sh/nodepool, or leave node_pool_regex empty)",
    ),
    "not a currency": (
        b"cost:\n  currency: ''\n",
        "FILE:2: cost.currency: '' is not a currency (allowed: 1 to 16 characters, e.g. USD, EUR, GPU-hours)",
    ),
    "autoscaler replicas": (
        b"autoscaling:\n  autoscalers:\n    - name: chat\n      namespace: llm\n      model: m\n"
        b"      target: {name: vllm-chat}\n      min_replicas: 3\n      max_replicas: 2\n",
        "FILE:8: autoscaling.autoscalers.0.max_replicas: 2 is below min_replicas (3, FILE:7) "
        "(allowed: at least min_replicas, and at least 1)",
    ),
    "autoscaler at zero without a wake-up": (
        b"autoscaling:\n  autoscalers:\n    - {name: chat, namespace: llm, model: m, target: {name: a}, min_replicas: 0}\n",
        "FILE:3: autoscaling.autoscalers.0.min_replicas: 0 needs wake_query: with no replica the saturation signal "
        "has no series, so nothing would wake the model (set wake_query to the requests waiting for it elsewhere, "
        "e.g. at the inference gateway)",
    ),
}


@pytest.mark.parametrize("kind", sorted(ERRORS))
def test_each_error_class_has_its_message(tmp_path: Path, kind: str) -> None:
    content, expected = ERRORS[kind]
    path = tmp_path / "obspack.yaml"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert err.value.problems[0].replace(str(path), "FILE") == expected


def test_errors_come_in_the_order_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "obspack.yaml"
    path.write_text("alerts:\n  VLLMKVCacheUsageHigh: {ratio: 2}\ncluster_label: 1\nscrape_interval: 5x\nnope: 1\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert [int(p.split(":")[1]) for p in err.value.problems] == [2, 3, 4, 5]


def test_docs_list_every_error_class_with_its_message() -> None:
    section = DOCS.read_text(encoding="utf-8").split("\n## Errors\n")[1].split("\n## ")[0]
    rows = {line.split("|")[1].strip(): line for line in section.splitlines() if line.startswith("| ")}
    rows.pop("Class")
    assert set(rows) == set(ERRORS), "docs/config.md: the error table and tests/test_config_errors.py differ"
    for kind, (_, expected) in ERRORS.items():
        assert expected.replace("|", "\\|") in rows[kind], f"docs/config.md: message of {kind!r} differs"
