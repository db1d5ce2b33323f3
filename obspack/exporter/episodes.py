"""Logging of a target's troubles once per episode, so a target that stays down does not flood the log.

An episode is a run of scrapes that show one problem of one target (down, too many series, malformed
lines). Its first scrape is logged at WARNING with the details, the repeats at DEBUG, and the first
scrape without the problem at WARNING again, with how many scrapes the episode lasted.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger("obspack.exporter")


class Episodes:
    """Open episodes by (target, problem), and how many scrapes each has seen so far."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def seen(self, target: str, problem: str, detail: str) -> None:
        """This scrape of ``target`` shows ``problem``: WARNING if it is new, else DEBUG."""
        with self._lock:
            count = self._open.get((target, problem), 0)
            self._open[(target, problem)] = count + 1
        if count == 0:
            log.warning(
                "target %s: %s (%s); repeats are logged at DEBUG until it ends", target, problem, detail
            )
        else:
            log.debug("target %s: %s again (%s)", target, problem, detail)

    def cleared(self, target: str, problem: str) -> None:
        """This scrape of ``target`` is free of ``problem``: WARNING if an episode of it was open."""
        with self._lock:
            count = self._open.pop((target, problem), 0)
        if count:
            log.warning(
                "target %s: no longer %s, after %d scrape%s", target, problem, count, "s" * (count > 1)
            )
