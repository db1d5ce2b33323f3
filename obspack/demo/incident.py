"""The incident the demo plays and the e2e test checks, on six simulated pods of one cluster.

- `vllm-healthy-0` serves normal load and `vllm-idle-0` serves nothing, the whole time: no alert.
- `vllm-kv-0`: the KV cache saturates, first above the warning ratio (VLLMKVCacheUsageHigh, to chat),
  then above the critical one (VLLMKVCacheUsageCritical, to the pager; the warning is inhibited).
- `vllm-stall-0`: the engine stalls with requests in flight (VLLMZeroThroughput, labelled team:
  ml-platform in the demo config, so it goes to that team's pager).
- `vllm-backlog-0`: requests pile up in the queue (VLLMRequestQueueBacklog, to chat).
- `vllm-down-0`: vLLM answers 503 (VLLMTargetDown, to the pager; the exporter sidecar's
  ObspackExporterTargetDown on the same pod is inhibited).

Then every pod recovers and every alert resolves.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from obspack.demo import fake_vllm as fv
from obspack.demo.clients import ALERTMANAGER, PROMETHEUS, Change, format_change
from obspack.demo.stack import PodSpec, Stack, StackError, Tools

HEALTHY = "vllm-healthy-0"
IDLE = "vllm-idle-0"
KV = "vllm-kv-0"
STALL = "vllm-stall-0"
BACKLOG = "vllm-backlog-0"
DOWN = "vllm-down-0"

PODS = [
    PodSpec(HEALTHY, fv.NORMAL),
    PodSpec(IDLE, fv.IDLE),
    PodSpec(KV, fv.NORMAL),
    PodSpec(STALL, fv.NORMAL),
    PodSpec(BACKLOG, fv.NORMAL),
    PodSpec(DOWN, fv.NORMAL),
]
QUIET = (HEALTHY, IDLE)

# (alert, pod, receiver) of every notification the incident should cause.
NOTIFIED = [
    ("VLLMKVCacheUsageHigh", KV, "obspack-chat"),
    ("VLLMKVCacheUsageCritical", KV, "obspack-pager"),
    ("VLLMZeroThroughput", STALL, "obspack-team-ml-platform-pager"),
    ("VLLMRequestQueueBacklog", BACKLOG, "obspack-chat"),
    ("VLLMTargetDown", DOWN, "obspack-pager"),
]
# (alert, pod, inhibiting alert) of the alerts that fire but must not notify.
INHIBITED = [
    ("VLLMKVCacheUsageHigh", KV, "VLLMKVCacheUsageCritical"),
    ("ObspackExporterTargetDown", DOWN, "VLLMTargetDown"),
]


def start_incident(stack: Stack) -> None:
    """KV high, engine stalled, queue backlog, target down."""
    stack.set_load(KV, fv.KV_HIGH)
    stack.set_load(STALL, fv.STALLED)
    stack.set_load(BACKLOG, fv.QUEUE_BACKLOG)
    stack.take_down(DOWN)


def saturate_kv_cache(stack: Stack) -> None:
    stack.set_load(KV, fv.KV_FULL)


def end_incident(stack: Stack) -> None:
    for pod in (KV, STALL, BACKLOG, DOWN):
        stack.set_load(pod, fv.NORMAL)


# --- the narrated demo -----------------------------------------------------------------------------------


def _say(text: str) -> None:
    print(f"\n== {text}", flush=True)


def _wait_all(stack: Stack, source: str, alerts: list[tuple[str, str]], state: str, timeout: float) -> None:
    for alertname, pod in alerts:
        stack.wait_alert(source, alertname, pod, state, timeout)


def play(stack: Stack) -> None:
    """Play the incident on a started stack, waiting for each expected state before moving on."""
    _say("waiting for the first scrapes (Prometheus applies new targets within ~5 s)")
    stack.wait_for_data()
    _say(
        f"all {len(PODS)} pods scraped; incident starts: KV cache 93%, engine stalled, queue backlog, vLLM 503"
    )
    start_incident(stack)
    firing = [("VLLMKVCacheUsageHigh", KV), ("VLLMRequestQueueBacklog", BACKLOG), ("VLLMTargetDown", DOWN)]
    _wait_all(stack, PROMETHEUS, firing, "firing", 30)
    stack.wait_alert(ALERTMANAGER, "ObspackExporterTargetDown", DOWN, "suppressed", 30)
    _say("KV cache at 98.5%")
    saturate_kv_cache(stack)
    stack.wait_alert(ALERTMANAGER, "VLLMKVCacheUsageHigh", KV, "suppressed", 30)
    stack.wait_alert(ALERTMANAGER, "VLLMZeroThroughput", STALL, "active", 30)
    time.sleep(1.5)  # let the notifications go out
    _say("every pod recovers")
    end_incident(stack)
    resolved = [(a, p) for a, p, _ in NOTIFIED] + [(a, p) for a, p, _ in INHIBITED]
    _wait_all(stack, ALERTMANAGER, resolved, "resolved", 30)
    time.sleep(1.5)


def _print_change(change: Change) -> None:
    print(format_change(change), flush=True)


def _summary(stack: Stack) -> None:
    assert stack.webhook is not None
    _say("notifications the receivers got (the webhook stands in for pager, chat and ticket)")
    for receiver, status, labels in stack.webhook.deliveries():
        print(
            f"   {receiver:<32} {status:<9} {labels.get('alertname')} on {labels.get('namespace')}/{labels.get('pod')}"
        )
    print(f"\nrendered pack: {stack.pack}\nlogs and configs: {stack.workdir}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m obspack.demo",
        description="Play a vLLM incident through obspack's rules on a real Prometheus and Alertmanager (127.0.0.1).",
    )
    parser.add_argument(
        "--workdir", type=Path, help="where to put the pack, configs, data and logs (default: a temp dir)"
    )
    parser.add_argument("--keep", action="store_true", help="keep everything running at the end until Ctrl-C")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="obspack-demo-"))
    try:
        tools = Tools.find()
    except StackError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    stack = Stack(workdir, PODS, tools)
    started = time.monotonic()
    try:
        _say(
            f"rendering the pack and starting {len(PODS)} fake vLLM pods, their exporters, Prometheus, Alertmanager"
        )
        stack.start(on_change=_print_change)
        assert stack.prometheus and stack.alertmanager
        print(
            f"   Prometheus   {stack.prometheus.url}/alerts\n   Alertmanager {stack.alertmanager.url}/#/alerts"
        )
        print("   time     server       alert                        pod                          state")
        play(stack)
        _summary(stack)
        print(f"\ndone in {time.monotonic() - started:.0f} s")
        if args.keep:
            print("everything keeps running; Ctrl-C stops it")
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        pass
    except (StackError, TimeoutError) as e:
        print(f"error: {e}\n\n{stack.report()}", file=sys.stderr)
        return 1
    finally:
        stack.stop()
    return 0
