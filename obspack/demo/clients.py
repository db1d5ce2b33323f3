"""The Alertmanager API calls the demo makes, and a watcher of alert states in both servers.

Prometheus is asked through obspack.demo.prometheus (the doctor's client).

`Watcher` polls both servers a few times a second from a thread and keeps, for every alert (its full
label set), the states it went through:

- in Prometheus (`/api/v1/alerts`): `pending`, `firing`, then `inactive` once it is no longer listed;
- in Alertmanager (`/api/v2/alerts`): `active`, `suppressed` (inhibited or silenced), then `resolved`
  once it is no longer listed (Alertmanager lists only alerts whose end time is still ahead).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from obspack.demo.processes import is_ready
from obspack.demo.prometheus import Prometheus
from obspack.doctor.api import QueryFailed
from obspack.errors import ObspackError

T = TypeVar("T")
Labels = frozenset[tuple[str, str]]

PROMETHEUS = "prometheus"
ALERTMANAGER = "alertmanager"
GONE = {PROMETHEUS: "inactive", ALERTMANAGER: "resolved"}


def get_json(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (http on 127.0.0.1 only)
        return json.loads(response.read())


def post_json(url: str, data: Any, timeout: float = 2.0) -> None:
    request = urllib.request.Request(
        url, data=json.dumps(data).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=timeout):  # noqa: S310
        pass


def wait_until(check: Callable[[], T], timeout: float, what: str, interval: float = 0.2) -> T:
    """Call `check` until it returns something truthy and return that; TimeoutError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)


@dataclass(frozen=True)
class Alertmanager:
    url: str

    def ready(self) -> bool:
        return is_ready(f"{self.url}/-/ready")

    def alerts(self) -> list[dict[str, Any]]:
        """Alerts not yet resolved: `labels`, `annotations`, `status` {state, inhibitedBy, silencedBy},
        `receivers` [{name}], `fingerprint`."""
        return list(get_json(f"{self.url}/api/v2/alerts"))

    def post_alerts(self, alerts: list[dict[str, Any]]) -> None:
        """Send alerts as Prometheus does: each with `labels`, `annotations` and optional times."""
        post_json(f"{self.url}/api/v2/alerts", alerts)


def format_change(change: Change) -> str:
    t, source, labels, state = change
    where = "/".join(labels[k] for k in ("namespace", "pod") if k in labels)
    return f"{t:6.1f}s  {source:<12} {labels.get('alertname', '?'):<28} {where:<28} {state}"


def labels_match(labels: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in wanted.items())


@dataclass
class AlertTrack:
    """One alert (one label set) in one server: the states it went through, and its latest details."""

    source: str
    labels: dict[str, str]
    states: list[tuple[float, str]] = field(default_factory=list)
    last: dict[str, Any] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return self.states[-1][1] if self.states else GONE[self.source]

    def went_through(self) -> list[str]:
        return [state for _, state in self.states]


Change = tuple[float, str, dict[str, str], str]  # (seconds since start, source, labels, new state)


class Watcher:
    """Polls Prometheus and Alertmanager every `interval` seconds from a thread, until `stop()`."""

    def __init__(
        self,
        prometheus: Prometheus,
        alertmanager: Alertmanager,
        *,
        interval: float = 0.2,
        on_change: Callable[[Change], None] | None = None,
    ) -> None:
        self.prometheus = prometheus
        self.alertmanager = alertmanager
        self.interval = interval
        self.on_change = on_change
        self.started = time.monotonic()
        self.errors = 0
        self.changes: list[Change] = []
        self._tracks: dict[tuple[str, Labels], AlertTrack] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="alert-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def tracks(self, source: str, alertname: str | None = None, **labels: str) -> list[AlertTrack]:
        """Every alert seen in `source` whose labels include `labels` (and the alert name, if given)."""
        wanted = {**labels, **({"alertname": alertname} if alertname else {})}
        with self._lock:
            return [
                AlertTrack(t.source, dict(t.labels), list(t.states), dict(t.last))
                for (src, _), t in self._tracks.items()
                if src == source and labels_match(t.labels, wanted)
            ]

    def track(self, source: str, alertname: str, **labels: str) -> AlertTrack | None:
        """The one alert matching, or None if there is none yet. More than one is an error."""
        found = self.tracks(source, alertname, **labels)
        if len(found) > 1:
            raise AssertionError(f"{len(found)} {alertname} alerts in {source} match {labels}: {found}")
        return found[0] if found else None

    def state(self, source: str, alertname: str, **labels: str) -> str:
        """The current state of the one matching alert (`inactive`/`resolved` when not listed)."""
        track = self.track(source, alertname, **labels)
        return track.state if track else GONE[source]

    def poll(self) -> None:
        """One round: read both servers and record the changes (the thread calls this)."""
        now = time.monotonic() - self.started
        seen = {
            PROMETHEUS: [(a["labels"], str(a["state"]), a) for a in self.prometheus.alerts()],
            ALERTMANAGER: [(a["labels"], str(a["status"]["state"]), a) for a in self.alertmanager.alerts()],
        }
        changes: list[Change] = []
        with self._lock:
            for source, alerts in seen.items():
                present = set()
                for labels, state, details in alerts:
                    key = (source, frozenset(labels.items()))
                    present.add(key)
                    track = self._tracks.setdefault(key, AlertTrack(source, dict(labels)))
                    track.last = details
                    if track.state != state or not track.states:
                        track.states.append((now, state))
                        changes.append((now, source, dict(labels), state))
                for key, track in self._tracks.items():
                    if key[0] == source and key not in present and track.state != GONE[source]:
                        track.states.append((now, GONE[source]))
                        changes.append((now, source, dict(track.labels), GONE[source]))
            self.changes.extend(changes)
        if self.on_change:
            for change in changes:
                self.on_change(change)

    def timeline(self) -> str:
        """Every change seen so far, one line each, for failure messages and the demo."""
        with self._lock:
            return "\n".join(format_change(c) for c in self.changes)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except (urllib.error.URLError, OSError, ValueError, KeyError, QueryFailed, ObspackError):
                self.errors += 1
            self._stop.wait(self.interval)
