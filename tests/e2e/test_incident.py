"""The whole chain on 127.0.0.1: fake vLLM pods and their `obspack exporter` sidecars, scraped every
second by a real Prometheus that loads the rule files `obspack render` wrote, sending to a real
Alertmanager that runs the pack's example routes and inhibitions, with receivers plugged into a local
webhook. The incident is obspack.demo.incident (the one `scripts/demo.sh` narrates).

Among the quiet pods is the decode side of a prefill/decode pair over NIXL: 1% of its prompt tokens hit its
own prefix cache, as for `vllm-noprefix-0`, which gets its ticket; the decode pod gets none.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from obspack.config import ObspackConfig
from obspack.demo import incident, lag
from obspack.demo.clients import ALERTMANAGER, PROMETHEUS, wait_until
from obspack.demo.fake_vllm import DEFAULT_MODEL
from obspack.demo.lag import measure
from obspack.demo.stack import Stack, Tools
from tests.e2e.checks import (
    CRITICAL,
    WARNING,
    check_delivered,
    deliveries,
    explained,
    inhibited_by,
    now,
    pending_then_firing,
    report_lags,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

KV, STALL, BACKLOG, DOWN = incident.KV, incident.STALL, incident.BACKLOG, incident.DOWN
INFO = {"severity": "info"}
PREFIX = "VLLMPrefixCacheHitRateLow"
# Alerts allowed to go pending (never firing) on a quiet pod before it has two samples: see
# test_quiet_pods_raise_nothing and docs/e2e.md.
FIRST_SCRAPE_ARTEFACTS = {"VLLMZeroThroughput"}
QUIET_FOR_AT_LEAST_S = 25.0


@pytest.fixture(scope="module")
def stack(e2e_tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with Stack(tmp_path_factory.mktemp("incident"), list(incident.PODS), e2e_tools) as stack:
        with explained(stack):
            stack.wait_for_data()
        yield stack


MODEL = {"model_name": DEFAULT_MODEL}


def test_incident_fires_routes_inhibits_and_resolves(stack: Stack) -> None:
    with explained(stack):
        # KV cache at 93%, engine stalled, queue backlog, vLLM answering 503.
        started = now(stack)
        onsets = incident.start_incident(stack)
        pending_then_firing(stack, "VLLMKVCacheUsageHigh", KV, started)
        pending_then_firing(stack, "VLLMRequestQueueBacklog", BACKLOG, started)
        pending_then_firing(stack, "VLLMTargetDown", DOWN, started)
        check_delivered(
            stack, "VLLMKVCacheUsageHigh", KV, WARNING | MODEL, "vllm-kv-cache-usage-high", "obspack-chat"
        )
        check_delivered(
            stack,
            "VLLMRequestQueueBacklog",
            BACKLOG,
            WARNING | MODEL,
            "vllm-request-queue-backlog",
            "obspack-chat",
        )
        check_delivered(stack, "VLLMTargetDown", DOWN, CRITICAL, "vllm-target-down", "obspack-pager")

        # The exporter sidecar cannot scrape vLLM either; its alert leaves the pod out (checked after the
        # recovery, below: the sidecar may see vLLM back a scrape later than Prometheus does).
        assert stack.prometheus is not None
        assert stack.prometheus.query(f'obspack_target_up{{pod="{DOWN}"}} == 0'), "the sidecar sees vLLM down"

        # Prompts without a shared prefix, no connector: a ticket. (The decode pod, same local hit rate: none,
        # test_quiet_pods_raise_nothing.) Then they share it again.
        pending_then_firing(stack, PREFIX, incident.NO_PREFIX, started)
        check_delivered(stack, PREFIX, incident.NO_PREFIX, INFO | MODEL, "vllm-prefix-cache-hit-rate-low", "obspack-ticket")
        incident.share_prefix_again(stack)

        # KV cache at 98.5%: the critical alert pages and mutes the warning.
        saturated = now(stack)
        onsets.append(incident.saturate_kv_cache(stack))
        pending_then_firing(stack, "VLLMKVCacheUsageCritical", KV, saturated)
        critical = check_delivered(
            stack,
            "VLLMKVCacheUsageCritical",
            KV,
            CRITICAL | MODEL,
            "vllm-kv-cache-usage-critical",
            "obspack-pager",
        )
        high = stack.wait_alert(ALERTMANAGER, "VLLMKVCacheUsageHigh", KV, "suppressed")
        assert inhibited_by(high) == [critical.last["fingerprint"]]

        # The stalled engine: requests in flight, no token generated over the configured window. The
        # config labels this alert team: ml-platform, so it pages that team.
        pending_then_firing(stack, "VLLMZeroThroughput", STALL, started)
        team = CRITICAL | MODEL | {"team": "ml-platform"}
        check_delivered(
            stack, "VLLMZeroThroughput", STALL, team, "vllm-zero-throughput", "obspack-team-ml-platform-pager"
        )
        # Every receiver got its notification; the inhibited exporter alert notified nobody.
        notified = set(incident.NOTIFIED)
        wait_until(lambda: notified <= deliveries(stack, "firing"), 30, f"notifications {notified}")
        assert ("ObspackExporterTargetDown", DOWN) not in {(a, p) for a, p, _ in deliveries(stack, "firing")}

        # The incident ends: everything resolves in Prometheus, in Alertmanager and at the receivers.
        incident.end_incident(stack)
        for alertname, pod, _ in incident.NOTIFIED + incident.INHIBITED:
            stack.wait_alert(PROMETHEUS, alertname, pod, "inactive")
            stack.wait_alert(ALERTMANAGER, alertname, pod, "resolved")
        # An alert muted when it resolves may get no resolved notification (its group is muted at flush).
        muted = {(a, p) for a, p, _ in incident.INHIBITED}
        expected = {(a, p, r) for a, p, r in notified if (a, p) not in muted}
        wait_until(
            lambda: expected <= deliveries(stack, "resolved"), 30, f"resolved notifications {expected}"
        )
        still = [a["labels"]["alertname"] for a in stack.prometheus.alerts() if a["state"] == "firing"]
        assert not still, still
        # Neither while vLLM was down nor as it came back did the exporter's alert fire or reach Alertmanager.
        assert stack.watcher is not None
        for alertname, pod in incident.NEVER_FIRED:
            seen = stack.watcher.tracks(PROMETHEUS, alertname, pod=pod)
            assert not [t.states for t in seen if "firing" in t.went_through()], (alertname, pod)
            assert not stack.watcher.tracks(ALERTMANAGER, alertname, pod=pod), (alertname, pod)
        lags = [measure(stack, onset) for onset in onsets]  # read back from Prometheus' ALERTS series
    report_lags(stack, "Engine incident: lag from the fake vLLM showing the condition to firing", lags)


def test_quiet_pods_raise_nothing(stack: Stack) -> None:
    """A healthy pod under normal load, an idle pod and a prefill/decode pair: no alert fires, none reaches
    Alertmanager. The decode pod's own prefix cache hits 1% of its prompt tokens, under the alert's ratio
    with traffic over its minimum: it is quiet because its prompts' KV comes from the prefill pod (its role
    label, its name, and the connector's hits each say so), not for lack of data.

    Before a pod has two samples, rate-based rules cannot judge it; VLLMZeroThroughput is known to go
    pending then on busy pods (it resolves at the second scrape), so the strict check starts once every
    pod has two samples (`stack.warm_at`).
    """
    assert stack.watcher is not None and stack.prometheus is not None and stack.warm_at is not None
    watcher, prometheus = stack.watcher, stack.prometheus
    observed = time.monotonic() - watcher.started - stack.warm_at
    time.sleep(max(0.0, QUIET_FOR_AT_LEAST_S - observed))
    with explained(stack):
        for pod in incident.QUIET:
            # The pod is really scraped and its derived series exist: the silence is not for lack of data.
            assert prometheus.query(f'min(up{{pod="{pod}"}}) == 1 and count(up{{pod="{pod}"}}) == 2'), pod
            assert prometheus.query(f'namespace_pod_model:vllm_kv_cache_usage:max{{pod="{pod}"}}'), pod
            assert prometheus.query(f'obspack_vllm_kv_cache_blocks{{pod="{pod}"}}'), pod
            if pod == incident.DECODE:
                t = ObspackConfig().alerts.VLLMPrefixCacheHitRateLow
                window = f"{lag.window_seconds(stack, PREFIX):g}s"
                queries = f'sum(rate(vllm:prefix_cache_queries_total{{pod="{pod}"}}[{window}]))'
                local = f'sum(rate(vllm:prefix_cache_hits_total{{pod="{pod}"}}[{window}])) / {queries}'
                assert prometheus.query(f"{local} < {t.ratio} and {queries} > {t.min_query_tokens_per_second}"), pod
                assert prometheus.query(f'kube_pod_labels{{pod="{pod}", label_llm_d_ai_role="decode"}}'), pod

            seen = watcher.tracks(PROMETHEUS, pod=pod)
            assert not [t.labels["alertname"] for t in seen if "firing" in t.went_through()], "fired"
            late = [t for t in seen if any(at >= stack.warm_at and s != "inactive" for at, s in t.states)]
            assert not late, (
                f"{pod}: alerts after warm-up: {[(t.labels['alertname'], t.states) for t in late]}"
            )
            early = {t.labels["alertname"] for t in seen}
            assert early <= FIRST_SCRAPE_ARTEFACTS, f"{pod}: pending at the first scrape: {early}"
            assert not watcher.tracks(ALERTMANAGER, pod=pod), f"{pod} reached Alertmanager"
            assert stack.webhook is not None
            assert not [d for d in stack.webhook.deliveries() if d[2].get("pod") == pod]


def test_every_rendered_rule_is_loaded_and_evaluates_without_error(stack: Stack) -> None:
    assert stack.prometheus is not None
    rules = stack.prometheus.rules()
    alerting = {r["name"] for r in rules if r["type"] == "alerting"}
    assert alerting == set(type(ObspackConfig().alerts).model_fields)
    broken = [(r["group"], r["name"], r.get("lastError")) for r in rules if r["health"] != "ok"]
    assert not broken, broken
