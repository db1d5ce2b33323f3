"""`obspack demo` (scripts/demo.sh): play the engine incident, then the memory-plane incident, on one
stack, print every alert state change and notification, and how late each alert fired.

`play_engine` and `play_memory_planes` wait for each expected state before moving on and return the
lags (obspack/demo/lag.py); benchmarks/fleet_bench.py calls them to measure the lags it reports. While
the stack waits and nothing changes, a line every `QUIET_S` seconds says what it waits for.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path

from obspack.demo import incident
from obspack.demo import memory_planes as mp
from obspack.demo.clients import ALERTMANAGER, PROMETHEUS, Change, format_change
from obspack.demo.lag import Lag, measure, table
from obspack.demo.stack import PodSpec, Stack, StackError, Tools
from obspack.demo.workdir import claim


def all_pods() -> list[PodSpec]:
    """The pods of both incidents (the healthy pod is shared)."""
    return list({p.name: p for p in (*incident.PODS, *mp.PODS)}.values())


def _say(text: str) -> None:
    print(f"\n== {text}", flush=True)


def _wait_all(
    stack: Stack, source: str, alerts: list[tuple[str, str]], state: str, timeout: float | None = None
) -> None:
    for alertname, pod in alerts:
        stack.wait_alert(source, alertname, pod, state, timeout)


def play_engine(stack: Stack) -> list[Lag]:
    """KV cache, stall, backlog, target down, prompts without a shared prefix; then the KV cache saturates;
    then recovery."""
    _say(
        "engine incident: KV cache 93%, engine stalled, queue backlog, vLLM 503; the prompts of "
        f"{incident.NO_PREFIX} stop sharing a prefix (1% prefix-cache hits, like the decode pod "
        f"{incident.DECODE}, whose prompts' KV arrives over NIXL)"
    )
    lags = [measure(stack, onset) for onset in incident.start_incident(stack)]
    stack.wait_alert(ALERTMANAGER, PREFIX, incident.NO_PREFIX, "active")
    _say(f"KV cache at 98.5%; the prompts of {incident.NO_PREFIX} share their prefix again")
    incident.share_prefix_again(stack)
    lags.append(measure(stack, incident.saturate_kv_cache(stack)))
    stack.wait_alert(ALERTMANAGER, "VLLMKVCacheUsageHigh", incident.KV, "suppressed")
    stack.wait_alert(ALERTMANAGER, "VLLMZeroThroughput", incident.STALL, "active")
    _say("every pod recovers")
    incident.end_incident(stack)
    resolved = [(a, p) for a, p, _ in incident.NOTIFIED] + [(a, p) for a, p, _ in incident.INHIBITED]
    _wait_all(stack, ALERTMANAGER, resolved, "resolved")
    return lags


def play_memory_planes(stack: Stack) -> list[Lag]:
    """Host RAM to the OOM kill, VRAM to a CUDA OOM crash, a new pod with a full GPU; then recovery."""
    _say(
        f"memory planes: VRAM of {mp.CUDA} fills up; host RAM of {mp.RAM} and of {mp.WORKER} (the worker of "
        f"the LeaderWorkerSet {mp.LWS}: no vLLM /metrics of its own) creeps to its limit"
    )
    vram = mp.fill_vram(stack)
    lags = [measure(stack, vram), *(measure(stack, onset) for onset in mp.creep_host_memory(stack))]
    _say("the kernel OOM-kills vllm-ram-0 (exit 137); CUDA out of memory crashes vllm-cuda-0 (Error)")
    lags += [measure(stack, mp.kernel_kills(stack)), measure(stack, mp.cuda_oom_crash(stack))]
    stack.wait_alert(ALERTMANAGER, "VLLMHostMemoryNearLimit", mp.RAM, "suppressed")
    _say("a new pod, vllm-new-0, appears with its GPU already 99% full")
    lags.append(measure(stack, mp.new_pod_appears(stack)))
    _say("every pod recovers; the restarts leave the alerts' 2m window")
    mp.recover(stack)
    _wait_all(stack, PROMETHEUS, [(a, p) for a, p, _ in mp.NOTIFIED], "inactive", 180)
    _wait_all(stack, ALERTMANAGER, [(a, p) for a, p, _ in mp.NOTIFIED], "resolved", 180)
    return lags


QUIET_S = 15.0


class _Printer:
    """Prints the alert changes as they come and, after `QUIET_S` seconds without a line, what the stack
    is waiting for, on the watcher's clock."""

    def __init__(self, stack: Stack, quiet_s: float = QUIET_S, tick_s: float = 1.0) -> None:
        self.stack = stack
        self.quiet_s, self.tick_s = quiet_s, tick_s
        self._last = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="demo-progress", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def line(self, text: str) -> None:
        with self._lock:
            print(text, flush=True)
            self._last = time.monotonic()

    def change(self, change: Change) -> None:
        self.line(format_change(change))

    def _run(self) -> None:
        while not self._stop.wait(self.tick_s):
            waiting, watcher = self.stack.waiting, self.stack.watcher
            now = time.monotonic()
            if waiting is None or watcher is None or now - self._last < self.quiet_s:
                continue
            what, since = waiting
            self.line(f"{now - watcher.started:6.1f}s  ... waiting {now - since:.0f} s so far for {what}")


def _summary(stack: Stack, lags: list[Lag]) -> None:
    assert stack.webhook is not None
    _say("notifications the receivers got (the webhook stands in for pager, chat and ticket)")
    for receiver, status, labels in stack.webhook.deliveries():
        print(
            f"   {receiver:<32} {status:<9} {labels.get('alertname')} on {labels.get('namespace')}/{labels.get('pod')}"
        )
    _say("how late each alert fired after its condition showed at the exporters")
    print(table(lags, stack.interval_s))
    _say("what stayed quiet")
    print(quiet_report(stack))
    print(f"\nrendered pack: {stack.pack}\nlogs and configs: {stack.workdir}")


def quiet_report(stack: Stack) -> str:
    """What fired over the whole run on the pods that must stay quiet, and the two silences the service's
    pods are there to show (from the watcher and the receivers: what happened, not what should have)."""
    assert stack.watcher is not None and stack.webhook is not None
    watcher, sent = stack.watcher, stack.webhook.deliveries()

    def fired(pod: str) -> list[str]:
        return sorted({t.labels["alertname"] for t in watcher.tracks(PROMETHEUS, pod=pod) if "firing" in t.went_through()})

    def tickets(pod: str) -> int:
        return sum(1 for _, status, labels in sent
                   if status == "firing" and labels.get("alertname") == PREFIX and labels.get("pod") == pod)  # fmt: skip

    quiet = list(dict.fromkeys((*incident.QUIET, *mp.QUIET)))
    lines = [f"   {pod:<20} {', '.join(fired(pod)) or 'no alert fired'}" for pod in quiet]
    lines.append(
        f"   {incident.DECODE}: {tickets(incident.DECODE)} {PREFIX} tickets at 1% local prefix-cache hits (its "
        f"prompts' KV arrives over NIXL from {incident.PREFILL}); {incident.NO_PREFIX}, no connector: "
        f"{tickets(incident.NO_PREFIX)}"
    )
    worker = fired(mp.WORKER)
    lines.append(
        f"   {mp.WORKER} (LeaderWorkerSet worker): {', '.join(worker) or 'no alert'}; "
        f"VLLMTargetDown {'FIRED' if 'VLLMTargetDown' in worker else 'never'} (only its leader serves vLLM metrics)"
    )
    return "\n".join(lines)


PREFIX = "VLLMPrefixCacheHitRateLow"
POOL = "llama-3-1-8b"  # the InferencePool in front of the pods, with its endpoint picker (obspack.demo.fake_epp)

# How long a run takes, as README.md, docs/e2e.md and `obspack demo --help` say (tests/demo/test_demo_failures.py
# holds them to it): 197 s with the P/D pair and the LWS group (193 s before), the 185 s, on 2 shared cores. Most of it is `for` durations and windows.
TYPICAL_MINUTES = 3.5


def play(workdir: Path | None = None, keep: bool = False) -> None:
    """Start the stack, play both incidents with a running commentary, print the summary, stop (or, with
    `keep`, leave everything running until Ctrl-C). StackError when a server is missing or fails, or an
    alert does not come in time (after printing the alert timeline and the servers' logs)."""
    tools = Tools.find()
    workdir = workdir or Path(tempfile.mkdtemp(prefix="obspack-demo-"))
    claim(workdir)  # before anything starts: a folder that is not the demo's is refused in one line
    pods = all_pods()
    stack = Stack(workdir, pods, tools, epp_pool=POOL)
    printer = _Printer(stack)
    started = time.monotonic()
    try:
        workers = sum(p.worker for p in pods)
        _say(
            f"rendering the pack; starting {len(pods) - workers} fake vLLM pods and {workers} LeaderWorkerSet worker, "
            "their exporters and nodes, Prometheus, Alertmanager"
        )
        # A server that does not start is one line naming it, its last error and its log (no alert timeline
        # and logs of the others to read through: nothing was played yet).
        stack.start(on_change=printer.change)
        printer.start()
        assert stack.prometheus and stack.alertmanager
        print(f"   Prometheus   {stack.prometheus.url}/alerts\n   Alertmanager {stack.alertmanager.url}/#/alerts")
        _say(f"waiting for the first scrapes (every {stack.interval_s} s; new targets apply within ~5 s)")
        stack.wait_for_data()
        printer.line("   time     server       alert                        pod                          state")
        lags = play_engine(stack) + play_memory_planes(stack)
        time.sleep(2)  # let the last resolved notifications go out
        printer.stop()
        _summary(stack, lags)
        print(f"\ndone in {time.monotonic() - started:.0f} s")
        if keep:
            print("everything keeps running; Ctrl-C stops it")
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        pass
    except (StackError, TimeoutError) as e:
        if stack.watcher is not None:  # the incidents were playing: the timeline and the logs explain it
            print(f"\n{stack.report()}", file=sys.stderr)
        raise StackError(str(e)) from None
    finally:
        printer.stop()
        stack.stop()
