"""Scrape targets behind the pack's sources, where the backend lists them: how many, which are down, and why."""

from __future__ import annotations

from collections.abc import Mapping

from obspack.doctor.backends import Backend
from obspack.doctor.findings import Finding, Topic, note, unchecked


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
    findings = []
    for job in sorted(per_job):
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
    return f"{total} targets in {len(per_job)} jobs of the sources, {down_total} down", findings
