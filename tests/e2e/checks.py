"""What the e2e tests check on a running stack: alerts delivered with their labels, links and receiver,
inhibitions by fingerprint, notifications, and a failure message with the whole timeline and logs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from obspack.demo.clients import ALERTMANAGER, PROMETHEUS, AlertTrack
from obspack.demo.lag import Lag, table
from obspack.demo.stack import CLUSTER, NAMESPACE, RUNBOOK_BASE_URL, Stack

WARNING = {"severity": "warning"}
CRITICAL = {"severity": "critical"}


@contextmanager
def explained(stack: Stack) -> Iterator[None]:
    """Fail with the alert timeline and the servers' logs attached."""
    try:
        yield
    except (TimeoutError, AssertionError) as e:
        pytest.fail(f"{type(e).__name__}: {e}\n\n{stack.report()}")


def now(stack: Stack) -> float:
    """The watcher's clock (seconds since it started), to mark when an incident step began."""
    assert stack.watcher is not None
    return time.monotonic() - stack.watcher.started


def pending_then_firing(stack: Stack, alertname: str, pod: str, since: float) -> AlertTrack:
    """Wait until the alert fires in Prometheus; since the step began it must have been pending first
    (alerts without `for` go straight to firing)."""
    track = stack.wait_alert(PROMETHEUS, alertname, pod, "firing")
    states = [state for at, state in track.states if at >= since and state != "inactive"]
    assert states[:2] in (["pending", "firing"], ["firing"]), f"{alertname} on {pod} since {since:.1f}s: {track.states}"
    return track


def check_delivered(
    stack: Stack, alertname: str, pod: str, labels: dict[str, str], runbook: str, receiver: str
) -> AlertTrack:
    """The alert as Alertmanager holds it: the rule's labels and the pod's labels, a rendered
    description, the runbook link, and the receiver the routes picked."""
    track = stack.wait_alert(ALERTMANAGER, alertname, pod, "active")
    want = {"alertname": alertname, "cluster": CLUSTER, "namespace": NAMESPACE, "pod": pod, **labels}
    assert {k: track.labels.get(k) for k in want} == want
    annotations = track.last["annotations"]
    assert annotations["runbook_url"] == f"{RUNBOOK_BASE_URL}/{runbook}.md"
    assert f"{NAMESPACE}/{pod}" in annotations["description"] and "{{" not in annotations["description"]
    assert annotations["summary"]
    assert [r["name"] for r in track.last["receivers"]] == [receiver]
    return track


def inhibited_by(track: AlertTrack) -> list[str]:
    return list(track.last["status"]["inhibitedBy"])


def deliveries(stack: Stack, status: str) -> set[tuple[str, str, str]]:
    """(alert, pod, receiver) of every notification the webhook got with this status."""
    assert stack.webhook is not None
    return {
        (labels["alertname"], labels.get("pod", ""), receiver)
        for receiver, st, labels in stack.webhook.deliveries()
        if st == status
    }


def fired(stack: Stack, pod: str) -> set[str]:
    """The alerts that went firing in Prometheus on the pod, over the whole run."""
    assert stack.watcher is not None
    return {t.labels["alertname"] for t in stack.watcher.tracks(PROMETHEUS, pod=pod) if "firing" in t.went_through()}


def report_lags(stack: Stack, title: str, lags: list[Lag]) -> None:
    """Print the lags (pytest -s, or the captured output of a failure) and require each within budget."""
    print(f"\n{title}: scrape and evaluation every {stack.interval_s} s\n{table(lags, stack.interval_s)}")
    late = [lag for lag in lags if not lag.on_time]
    assert not late, f"alerts later than for + 2 evaluations + 1 scrape: {late}"
