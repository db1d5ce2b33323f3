"""The config's promise, on generated configs: `obspack render` either refuses (exit 2, every line a
`FILE:LINE: key: ...` error, the previous output byte for byte as it was) or writes a pack that
`promtool check rules --lint-fatal` accepts, that ships a test of every alert it renders (or names, in
its README and on stderr, the ones its selectors leave no room for), and whose shipped unit tests pass
under `promtool test rules`.

Configs are drawn setting by setting from values a user could write, valid and not: durations in and out
of range, thresholds at their edges, non-finite numbers, booleans and numbers where text belongs,
reserved label names, template syntax, regexes Go refuses, aliases of whole sections, bytes that are not
UTF-8. CI runs a short derandomized profile; docs/config.md says how to run a long one.
"""

from __future__ import annotations

import os
import re
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from obspack.cli import app
from obspack.config import Alerts
from obspack.pack.shipped_tests.alerts import TOPIC_FILES
from tests.support.needed import load, needed_only
from tests.support.tools import require_tool

settings.register_profile(
    "ci", max_examples=20, derandomize=True, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "long", max_examples=2000, deadline=None, phases=[Phase.reuse, Phase.generate, Phase.shrink],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("OBSPACK_FUZZ_PROFILE", "ci"))

ALERTS = list(Alerts.model_fields)

# ---------------------------------------------------------------------------------------------------------
# Values a user could write, valid and invalid, per kind of setting


def mix(valid: st.SearchStrategy[Any], invalid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly values that should be accepted, one in eight that should not (so about half the configs render).
    sampled_from picks evenly (small integers are drawn more often than their share) and shrinks to valid."""
    return st.sampled_from([valid] * 7 + [invalid]).flatmap(lambda chosen: chosen)


UNITS = ["y", "w", "d", "h", "m", "s", "ms"]
duration = mix(
    st.one_of(
        st.sampled_from(["0", "0s", "1s", "2s", "10s", "30s", "45s", "1m", "90s", "2m", "5m", "10m", "15m", "1h", "1h30m", "1d"]),
        st.tuples(st.integers(0, 3), st.integers(0, 59), st.integers(0, 59)).map(
            lambda hms: "".join(f"{n}{u}" for n, u in zip(hms, "hms") if n) or "0s"
        ),
    ),
    st.one_of(
        st.lists(st.tuples(st.integers(0, 120), st.sampled_from(UNITS)), min_size=1, max_size=3).map(
            lambda parts: "".join(f"{n}{u}" for n, u in parts)
        ),
        st.sampled_from(["", "5 minutes", "m", "1.5m", "-1m", "1m1h", "99999999999y", "25h", "2d", "0x10s", 5, 0, True, None]),
    ),
)
ratio = mix(
    st.one_of(st.floats(0.001, 0.999), st.sampled_from([0.001, 0.999, 0.5, 0.9, 0.95, 0.97])),
    st.sampled_from([0.0009, 0.9995, 1, 0, 2, -0.5, True, "0.9", float("inf"), float("-inf"), float("nan"), None]),
)
number = mix(
    st.one_of(st.floats(0, 1000), st.integers(1, 10_000)),
    st.sampled_from([-1, 0, 10**7, 2e6, True, False, "3", float("inf"), float("nan"), None]),
)
boolean = mix(st.sampled_from([True, True, True, False]), st.sampled_from(["yes", 1, 0, "true", None]))
severity = mix(st.sampled_from(["critical", "warning", "info"]), st.sampled_from(["page", "Critical", 1, True]))
label_name = mix(
    st.one_of(st.from_regex(r"[a-zA-Z][a-zA-Z0-9_]{0,12}", fullmatch=True), st.sampled_from(["team", "k8s_cluster", "_x"])),
    st.sampled_from(["__name__", "__meta_x", "bad-label", "", "1abc", "alertname", "severity", "pod", "cluster", "ü", "x" * 200]),
)
label_value = mix(
    st.one_of(st.text(st.characters(exclude_categories=("Cc", "Cs")), min_size=1, max_size=12), st.sampled_from(["ml-platform", "$labels", "{x}"])),
    st.sampled_from(["", "{{ $value }}", "a}}b", "{{", "x" * 1100, "line\nbreak", "\x00", "tab\t", "a\u2028b", "\uffff",
                     "rtl\u202e", 1, True, 0.5, None]),
)
label_map = mix(st.dictionaries(label_name, label_value, max_size=3), st.sampled_from([[], "team=a", None]))
k8s_name = mix(
    st.from_regex(r"[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?", fullmatch=True),
    st.sampled_from(["Not_A_Name", "-x", "a" * 64, "", 7]),
)
k8s_labels = mix(
    st.dictionaries(
        st.sampled_from(["release", "app.kubernetes.io/part-of", "grafana_dashboard", "team"]),
        st.sampled_from(["1", "kube-prometheus-stack", "", "a.b_c-d"]),
        max_size=2,
    ),
    st.one_of(
        st.dictionaries(st.sampled_from(["Bad Key", "x/", "a" * 64]), st.just("1"), min_size=1, max_size=1),
        st.dictionaries(st.just("release"), st.sampled_from(["-bad", "has space", "a" * 64, 1]), min_size=1, max_size=1),
        st.just(None),
    ),
)
matchers = mix(
    st.sampled_from([
        "", 'job="vllm"', 'namespace=~"ml-.*"', '{job="kubelet", metrics_path="/metrics/cadvisor",}', 'job!="x"',
        'job="a\\"b"', 'cluster=~"prod|staging"', 'job=~".*vllm.*"', 'pod=~"vllm-\\\\d+"', "job=`kube\\state`",
        'namespace=~"inference-.*", pod!~"canary-.*"', 'engine="0"', 'cluster="prod"', 'model_name=~"(?i)llama.*"',
        'model_name!=""', 'model_name="meta-llama/Llama-3.1-8B-Instruct"', 'pod!=""', 'container!="", container!="POD"',
        'namespace!~"kube-.*"', 'exported_namespace=~"llm-.*"', 'Hostname=~"gpu-.*"', 'instance=~".+:8000"',
    ]),
    st.sampled_from([
        "job=vllm", '__name__="x"', '__meta_x="y"', 'a="b"} or vector(1) or up{c="d"', 'job=~"a++"', 'job=~"(?=x)"',
        'job=~"a{1001}"', "{", 5, True,
    ]),
)
regex = mix(
    st.sampled_from([".*vllm.*", "registry.internal/llm/.*", "", "(?i).*VLLM.*", "vllm|sglang", "[a-z]+/vllm:v[0-9.]+"]),
    st.sampled_from(["(unclosed", "a{1001}", "a++", "(?<n>x)", "(?=x)", "\\Z", "x" * 5000, 3, None]),
)
url = mix(
    st.sampled_from(["", "https://runbooks.example.com/vllm", "https://grafana.example.com/", "/relative/path"]),
    st.sampled_from(["has space", "http://a/{{ $labels.pod }}", 'say "hi"', "ftp://x\\y", "h" * 3000, 1, True]),
)
text = mix(
    st.text(st.characters(exclude_categories=("Cc", "Cs", "Cf", "Cn", "Zl", "Zp")), min_size=1, max_size=12),
    st.sampled_from(["", "x" * 300, 5, False, "\x07", "a\u2029b", "\ufffe", "\u200b"]),
)
tags = mix(st.lists(text, max_size=3), st.sampled_from([[f"t{i}" for i in range(40)], "obspack", None]))
window = mix(
    st.sampled_from(["1m", "90s", "2m", "5m", "10m", "15m", "30m", "1h", "1h30m", "1d", "2m30s"]),
    st.one_of(duration, st.sampled_from(["0s", "0", "1s", "25h"])),
)
scrape_interval = mix(st.sampled_from(["1s", "5s", "15s", "30s", "1m", "2m30s"]), duration)
refresh = mix(st.sampled_from(["30s", "1m", "", "5s", "1h", "1d"]), st.sampled_from(["1s", "2d", "5 s", "1h30m", "0s", 30]))

objective = mix(
    st.sampled_from([0.5, 0.9, 0.99, 0.995, 0.999, 0.9999, 0.99999, 0.999999]), st.sampled_from([0, 1, 1.5, "0.99", None])
)
slo_threshold = mix(st.sampled_from([0.5, 1, 2.5, 5]), st.sampled_from([0.3, 7.3, -1, "fast", None]))
slo_entry = st.fixed_dictionaries(
    {"model_regex": mix(st.sampled_from(["Qwen/.*", "(?i)llama.*", "mistral|gemma", ".*", "m[0-9]+"]), regex)},
    optional={
        "time_to_first_token": st.fixed_dictionaries({}, optional={"threshold": slo_threshold, "enabled": boolean}),
        "availability": st.fixed_dictionaries({}, optional={"objective": objective}),
        "min_requests": number,
    },
)

autoscaler = st.fixed_dictionaries(
    {
        "name": k8s_name, "namespace": k8s_name,
        "model": mix(st.sampled_from(["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B"]), label_value),
        "target": st.fixed_dictionaries(
            {"name": k8s_name}, optional={"kind": mix(st.sampled_from(["Deployment", "StatefulSet"]), st.sampled_from(["Pod", 1]))}
        ),
    },
    optional={
        "engine": mix(st.sampled_from(["keda", "hpa"]), st.sampled_from(["KEDA", "vpa", None])),
        "min_replicas": mix(st.sampled_from([0, 1, 2]), st.sampled_from([-1, 10**6, "1", None])),
        "max_replicas": mix(st.sampled_from([1, 4, 16]), st.sampled_from([0, -1, 10**6, "4"])),
        "scale_down_stabilization": window, "polling_interval": window,
        "wake_query": mix(st.sampled_from(['sum(vllm:num_requests_waiting{model_name="m"})', ""]),
                          st.sampled_from(["sum(", 'up{a="b"} or', 5])),
        "prometheus": st.fixed_dictionaries({}, optional={"address": url, "authentication": k8s_name}),
    },
)

ALERT_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "enabled": boolean, "for": duration, "severity": severity, "labels": label_map, "ratio": ratio,
    "window": window, "lookback": window, "vllm_down_window": window, "job_regex": regex, "rate": number, "waiting_to_running": number,
    "min_waiting": number, "min_query_tokens_per_second": number, "min_draft_tokens_per_second": number, "min_split_gib": number,
    "expired_ratio": ratio, "reversals": number, "saturation": number, "increase": number,
    "min_tokens_per_second": number, "waiting_per_pod": number, "kv_ratio": ratio, "room_kv_ratio": ratio,
    "queue_size": number, "seconds": mix(st.sampled_from([0.01, 0.05, 0.099]), st.sampled_from([0, 0.1, 1, -1, "x"])),
}
# Role patterns that keep the shipped tests' plain pods (llama-0, ...) doing both: the tests' prefill and
# decode pods are named for their role and follow whatever the config makes of them.
pod_regex = mix(
    st.sampled_from(["", ".*prefill.*", ".*decode.*", ".*-prefill-[0-9]+", "(?i).*DECODE.*", "ds-.*"]),
    st.sampled_from(["(unclosed", "a{1001}", "(?=x)", 3, None]),
)
price = mix(st.one_of(st.floats(0, 100), st.sampled_from([0, 2.5, 4])), st.sampled_from([-1, 1e6, "2.5", float("nan"), None]))
currency = mix(st.sampled_from(["USD", "EUR", "GPU-hours", "€"]), st.sampled_from(["", "x" * 20, 'a"b', "{{ x }}", 5]))
gpu_price = st.fixed_dictionaries(
    {"model_regex": mix(st.sampled_from(["NVIDIA H100.*", "(?i).*a100.*", "NVIDIA L4"]), regex), "hourly": price},
    optional={"cluster_regex": regex, "node_pool_regex": mix(st.sampled_from(["", "spot-.*"]), regex)},
)
SETTINGS: dict[str, st.SearchStrategy[Any]] = {
    "cluster_label": label_name,
    "scrape_interval": scrape_interval,
    "rule_interval": st.one_of(duration, st.none()),
    "common_labels": label_map,
    "runbook_base_url": url,
    "selectors": st.fixed_dictionaries(
        {}, optional={k: matchers for k in ("vllm", "cadvisor", "kube_state_metrics", "dcgm", "exporter", "epp")}
    ),
    "vllm_containers": st.fixed_dictionaries({}, optional={"image_regex": regex, "name_regex": regex}),
    "scope": st.fixed_dictionaries({}, optional={
        "namespace_regex": mix(st.sampled_from(["", "llm-.*", "inference|serving", "team-[a-z]+"]), regex),
        "cluster_regex": mix(st.sampled_from(["", "prod-.*", "prod-a"]), regex),
    }),
    "prometheus_rule": st.fixed_dictionaries({}, optional={"name": k8s_name, "namespace": k8s_name, "labels": k8s_labels}),
    "slos": st.fixed_dictionaries({}, optional={
        "enabled": boolean,
        "period": mix(st.sampled_from(["30d", "28d"]), st.sampled_from(["7d", 30, None])),
        "time_to_first_token": st.fixed_dictionaries({}, optional={"threshold": slo_threshold, "objective": objective}),
        "availability": st.fixed_dictionaries({}, optional={"enabled": boolean, "handler_regex": regex}),
        "models": mix(st.lists(slo_entry, max_size=3), st.sampled_from([[{"model_regex": f"m{i}"} for i in range(33)], "Qwen", None])),
        "labels": label_map,
    }),
    "cost": st.fixed_dictionaries({}, optional={
        "source": mix(st.sampled_from(["config", "opencost"]), st.sampled_from(["kubecost", 1])),
        "currency": currency,
        "gpus": mix(st.lists(gpu_price, max_size=3), st.sampled_from([[{"hourly": 1}], "H100", None])),
        "default_hourly": price,
        "node_pool_label": mix(st.sampled_from(["", "karpenter.sh/nodepool"]), st.sampled_from(["bad key/", 3])),
        "team_label": mix(st.sampled_from(["", "team", "app.kubernetes.io/part-of"]), st.sampled_from(["a b", None])),
    }),
    "disaggregation": st.fixed_dictionaries({}, optional={
        "role_label": mix(st.sampled_from(["", "llm-d.ai/role", "app.kubernetes.io/component"]), st.sampled_from(["bad key/", 3])),
        "prefill_pod_regex": pod_regex,
        "decode_pod_regex": pod_regex,
    }),
    "autoscaling": st.fixed_dictionaries({}, optional={
        "targets": st.fixed_dictionaries({}, optional={"queue": number, "kv_cache": ratio}),
        "models": mix(
            st.lists(st.fixed_dictionaries({"model_regex": regex}, optional={"queue": number, "kv_cache": ratio}), max_size=2),
            st.sampled_from([[{"queue": 3}], "Qwen", None]),
        ),
        "autoscalers": mix(st.lists(autoscaler, max_size=2), st.sampled_from([[{"name": "x"}], {"name": "x"}, None])),
    }),
    "grafana": st.fixed_dictionaries({}, optional={
        "namespace": k8s_name, "folder": text, "folder_annotation": st.sampled_from(["k8s-sidecar-target-directory", "bad key/"]),
        "configmap_labels": k8s_labels, "datasource": text, "url": url, "tags": tags, "refresh": refresh,
        "multi_cluster": boolean,
    }),
}


@st.composite
def alert_settings(draw: st.DrawFn, alert: str) -> dict[str, Any]:
    fields = Alerts.model_fields[alert].annotation.model_fields  # type: ignore[union-attr]
    keys = sorted((info.alias or name) for name, info in fields.items())
    chosen = draw(st.lists(st.sampled_from(keys), unique=True, max_size=3))
    return {key: draw(ALERT_FIELDS[key]) for key in chosen}


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for key in draw(st.lists(st.sampled_from(sorted(SETTINGS)), unique=True, max_size=4)):
        config[key] = draw(SETTINGS[key])
    alerts = {alert: draw(alert_settings(alert)) for alert in draw(st.lists(st.sampled_from(ALERTS), unique=True, max_size=5))}
    names = list(alerts)
    if len(names) > 1 and draw(st.sampled_from([False] * 9 + [True])):  # the same dict twice: YAML writes an anchor and alias
        alerts[names[1]] = alerts[names[0]]
    if alerts:
        config["alerts"] = alerts
    if draw(st.sampled_from([False] * 14 + [True])):
        config[draw(st.sampled_from(["alerts", "grafana", "selectors", "unknown_key"]))] = draw(
            st.sampled_from([5, [1, 2], "text", None, {"nested": {"deep": 1}}])
        )
    return config


@st.composite
def config_files(draw: st.DrawFn) -> bytes:
    data = yaml.safe_dump(draw(configs()), allow_unicode=True, sort_keys=False).encode("utf-8")
    damage = draw(st.sampled_from([b""] * 18 + [b"\xff", b"\x00"]))  # a byte that is not UTF-8, a binary byte
    if damage:
        at = draw(st.integers(0, len(data)))
        data = data[:at] + damage + data[at:]
    return data


# ---------------------------------------------------------------------------------------------------------
# The invariant


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tool("promtool")
    root = tmp_path_factory.mktemp("fuzz")
    result = CliRunner().invoke(app, ["render", "--out", str(root / "pack")])
    assert result.exit_code == 0, result.output
    return root


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([require_tool("promtool"), *args], capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.tool
@given(config_files())
def test_render_refuses_cleanly_or_writes_a_pack_promtool_accepts(workdir: Path, content: bytes) -> None:
    config, out = workdir / "obspack.yaml", workdir / "pack"
    config.write_bytes(content)
    before = snapshot(out)
    result = CliRunner().invoke(app, ["render", "--config", str(config), "--out", str(out)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    shown = content.decode("utf-8", "replace")
    event(f"exit {result.exit_code}")
    for line in [line for line in result.output.splitlines() if line.startswith("error:")][:1]:
        event(re.sub(r"^error: \S+:\d+: ([^:]+): (.{0,30}).*", r"\1 \2", line))
    if result.exit_code == 2:
        lines = result.output.strip().splitlines()
        assert lines, shown
        pattern = re.compile(rf"error: {re.escape(str(config))}:\d+: \S")
        for line in lines:
            assert pattern.match(line) or line.startswith("error: ... and "), f"{line!r}\n--- config:\n{shown}"
        assert snapshot(out) == before, f"output changed although render failed\n--- config:\n{shown}"
        return
    assert result.exit_code == 0, f"exit {result.exit_code}: {result.output}\n--- config:\n{shown}"
    rules = sorted(str(p) for p in (out / "prometheus").glob("*.yaml"))
    checked = promtool("check", "rules", "--lint-fatal", *rules, cwd=out)
    assert checked.returncode == 0, f"{checked.stdout}{checked.stderr}\n--- config:\n{shown}"
    tests = sorted(p.name for p in (out / "tests").glob("*_test.yaml"))
    _every_alert_is_tested_or_named(out, tests, result.output, shown)
    # Every shipped file evaluates its rule groups at every step (about 10 s for all of them with the groups
    # their checks need, SLOs aside, 40 s whole): an example runs the files of the alerts it sets, the SLO file when it sets `slos`, and one more file
    # picked by the example's bytes, so settings that reach every file (selectors, scope, the cluster label)
    # meet each file across the examples. test_promtool.py and test_hostile_configs.py run every file.
    drawn = yaml.safe_load(shown) or {}
    drawn_alerts = drawn.get("alerts") if isinstance(drawn.get("alerts"), dict) else {}
    touched = {f"{topic}_test.yaml" for topic, names in TOPIC_FILES.items() if set(names) & set(drawn_alerts)}
    touched |= {"slo_test.yaml"} if "slos" in drawn else set()
    others = [t for t in tests if t not in ("slo_test.yaml", "cost-weekly_test.yaml")]
    if others:
        touched.add(others[zlib.crc32(content) % len(others)])
    run = [t for t in tests if t in touched]
    if run:  # each file with the groups its checks need (tests/support/needed.py): the rules passed the lint
        ran = promtool("test", "rules", *run, cwd=needed_only(out / "tests", run, workdir / "needed"))
        assert ran.returncode == 0, f"{ran.stdout[-4000:]}{ran.stderr}\n--- config:\n{shown}"


def _every_alert_is_tested_or_named(out: Path, tests: list[str], output: str, shown: str) -> None:
    """Each rendered alert has a test case, or the render said (stderr and README) why it has none."""
    alerts = {r["alert"] for g in load((out / "prometheus" / "alerts.yaml").read_text())["groups"] for r in g["rules"]}
    tested = {
        check["alertname"]
        for name in tests
        for case in load((out / "tests" / name).read_text())["tests"]
        for check in case["alert_rule_test"]
    }
    readme = (out / "README.md").read_text()
    for alert in sorted(alerts - tested):
        why = "no SLO tests" if alert == "VLLMErrorBudgetBurn" else f"no test of {alert}"
        named = why in readme or "no alert tests" in readme
        assert named and (why in output or "no alert tests" in output), f"{alert} has no test and no reason\n--- config:\n{shown}"


def test_every_alert_setting_has_a_strategy() -> None:
    """A setting added to an alert gets fuzzed too (VLLMKVTransferFailures' expired_ratio was not, and a
    draw that chose it failed with a KeyError instead of checking anything)."""
    keys = {
        info.alias or name
        for field in Alerts.model_fields.values()
        for name, info in field.annotation.model_fields.items()  # type: ignore[union-attr]
    }
    assert keys <= set(ALERT_FIELDS), sorted(keys - set(ALERT_FIELDS))
