"""Ready changes: a kubectl strategic-merge patch per owner (memory requests and limits, environment), and
the vLLM arguments to set.

A strategic-merge patch merges `containers` by name and `env` by name, so it touches only what it names.
Container `args` are a plain list (no merge key): a patch would replace them all, so the vLLM arguments are
given as a list to set in the manifest instead. Custom resources (LeaderWorkerSet) take no strategic-merge
patch: their changes are given with the path to edit.
"""

from __future__ import annotations

import json
import shlex
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from obspack.rightsize.model import Knob, Workload
from obspack.rightsize.sizing import GIB, MIB

# kinds kubectl can strategic-merge patch, and where their pod template is
TEMPLATES = {
    "Deployment": "deployment",
    "StatefulSet": "statefulset",
    "DaemonSet": "daemonset",
}
LWS_PATH = "spec.leaderWorkerTemplate.{leaderTemplate,workerTemplate}.spec.containers"


def quantity(value: float) -> str:
    """A Kubernetes quantity: whole GiB as Gi, else MiB (recommendations are whole MiB)."""
    whole = round(value)
    if whole % GIB == 0:
        return f"{whole // GIB}Gi"
    return f"{-(-whole // MIB)}Mi"


def _flag(knob: Knob) -> str | None:
    if knob.recommended is None:
        return None
    if knob.recommended == "off":
        return knob.flag
    value = knob.recommended
    return f"{knob.flag}={value:g}" if isinstance(value, float) else f"{knob.flag}={value}"


def args(w: Workload) -> tuple[str, ...]:
    """The vLLM arguments that change (counted recommendations)."""
    out = [_flag(k) for k in w.knobs if k.change]
    if w.gpu is not None and w.gpu.recommended_utilization is not None:
        out.append(f"--gpu-memory-utilization={w.gpu.recommended_utilization:.2f}")
    return tuple(sorted(a for a in out if a))


def suggested_args(w: Workload) -> tuple[str, ...]:
    """Every vLLM argument the traffic suggests, changes or not (vLLM does not export some current values)."""
    return tuple(sorted({a for a in (_flag(k) for k in w.knobs) if a} | set(args(w))))


def container_change(w: Workload) -> dict[str, Any] | None:
    """The container's part of a strategic-merge patch, or None when nothing in it changes."""
    if not w.actionable:
        return None
    change: dict[str, Any] = {"name": w.key.container}
    m = w.memory
    resources: dict[str, Any] = {}
    if m.limit_change and m.limit is not None:
        resources["limits"] = {"memory": quantity(m.limit)}
    below_limit = m.limit is None or m.current_request is None or m.current_request <= m.limit
    if m.request is not None and (m.request_change or (m.limit_change and not below_limit)):
        resources["requests"] = {"memory": quantity(m.request)}
    if resources:
        change["resources"] = resources
    if w.env:
        change["env"] = [{"name": name, "value": value} for name, value, _ in w.env]
    return change if len(change) > 1 else None


@dataclass(frozen=True)
class OwnerPatch:
    cluster: str
    namespace: str
    kind: str
    name: str
    containers: tuple[dict[str, Any], ...]  # the containers' changes (resources, env)
    args: tuple[tuple[str, tuple[str, ...]], ...]  # (container, vLLM arguments to set)

    @property
    def where(self) -> str:
        """Where the containers are in the owner's manifest."""
        if self.kind in TEMPLATES:
            return "spec.template.spec.containers"
        return LWS_PATH if self.kind == "LeaderWorkerSet" else "the pod spec's containers"

    @property
    def patch(self) -> dict[str, Any] | None:
        """The strategic-merge patch; None for kinds that take none (custom resources) or without changes."""
        if self.kind not in TEMPLATES or not self.containers:
            return None
        return {"spec": {"template": {"spec": {"containers": list(self.containers)}}}}

    @property
    def command(self) -> str | None:
        if self.patch is None:
            return None
        body = json.dumps(self.patch, separators=(",", ":"), sort_keys=True)
        resource = TEMPLATES[self.kind]
        return (
            f"kubectl -n {shlex.quote(self.namespace)} patch {resource} {shlex.quote(self.name)} "
            f"--type strategic -p {shlex.quote(body)}"
        )

    @property
    def file_name(self) -> str:
        parts = (self.cluster or "cluster", self.namespace, self.kind.lower(), self.name)
        return "_".join("".join(ch if ch.isalnum() or ch in "-." else "-" for ch in p) for p in parts) + ".yaml"


def owner_patches(found: tuple[Workload, ...]) -> tuple[OwnerPatch, ...]:
    """One entry per owner with something to change, in the order of the workloads."""
    by_owner: dict[tuple[str, str, str, str], list[Workload]] = defaultdict(list)
    for w in found:
        if w.actionable:
            by_owner[(w.key.cluster, w.key.namespace, w.key.kind, w.key.name)].append(w)
    out = []
    for (cluster, namespace, kind, name), members in by_owner.items():
        containers = tuple(c for c in (container_change(w) for w in members) if c)
        arguments = tuple((w.key.container, args(w)) for w in members if args(w))
        if containers or arguments:
            out.append(OwnerPatch(cluster, namespace, kind, name, containers, arguments))
    return tuple(out)
