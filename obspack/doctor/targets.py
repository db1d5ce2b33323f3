"""Scrape targets behind the pack's sources, where the backend lists them: how many, which are down, and why."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from obspack.doctor.backends import Backend
from obspack.doctor.findings import Finding, Topic, note, unchecked

_ORDINAL = re.compile(r"(.+)-[0-9]+")


def lws_workers(targets: Sequence[dict[str, object]]) -> set[int]:
    """The indices of targets that are LeaderWorkerSet workers: a pod named `<leader>-<n>` where `<leader>`
    is the pod of another target in the same namespace. LWS names a group's workers so (their StatefulSet
    is named after the leader pod); only the leader serves vLLM's metrics, so a worker scraped by a pod
    monitor over the whole group is no vLLM target down (docs/rules.md, "LeaderWorkerSet workers")."""

    def where(target: dict[str, object]) -> tuple[str, str]:
        labels = target.get("labels") or {}
        assert isinstance(labels, dict)
        return str(labels.get("namespace") or ""), str(labels.get("pod") or "")

    pods = {where(t) for t in targets}
    found = set()
    for i, target in enumerate(targets):
        namespace, pod = where(target)
        m = _ORDINAL.fullmatch(pod)
        if m and (namespace, m.group(1)) in pods:
            found.add(i)
    return found


def scrape_targets(backend: Backend, jobs: Mapping[str, list[str]]) -> tuple[str, list[Finding]]:
    """A one-line summary and a note per job of a source with targets down."""
    if not backend.targets.available:
        findings = []
        if backend.targets.unasked:
            findings.append(
                unchecked(Topic.BACKEND, "scrape targets", f"not checked: {backend.targets.detail}")
            )
        return f"not checked: {backend.targets.detail}", findings
    wanted = {job for found in jobs.values() for job in found if job}
    per_job: dict[str, list[dict[str, object]]] = {}
    for target in backend.active_targets:
        labels = target.get("labels") or {}
        job = str(labels.get("job") or target.get("scrapePool") or "")
        if job in wanted:
            per_job.setdefault(job, []).append(target)
    findings, workers = [], 0
    for job in sorted(per_job):
        lws = lws_workers(per_job[job])
        workers += len(lws)
        per_job[job] = [t for i, t in enumerate(per_job[job]) if i not in lws]
        down = [t for t in per_job[job] if t.get("health") != "up"]
        if down:
            error = str(down[0].get("lastError") or "no error given")
            findings.append(
                note(
                    Topic.SOURCE,
                    f"job {job}",
                    f"{len(down)} of {len(per_job[job])} targets down; last error: {error}",
                )
            )
    total = sum(len(t) for t in per_job.values())
    down_total = sum(1 for t in per_job.values() for x in t if x.get("health") != "up")
    if not total:
        return "no scrape target of the sources' jobs is listed here (they are scraped elsewhere)", findings
    summary = f"{total} targets in {len(per_job)} jobs of the sources, {down_total} down"
    if workers:
        summary += f" ({workers} LeaderWorkerSet workers left out: only their leaders serve vLLM metrics)"
    return summary, findings
