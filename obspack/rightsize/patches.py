"""Ready changes: a kubectl strategic-merge patch per owner (memory requests and limits, environment), and
the vLLM arguments to set.

A strategic-merge patch merges `containers` by name and `env` by name, so it touches only what it names.
Container `args` are a plain list (no merge key): a patch would replace them all, so the vLLM arguments are
given as a list to set in the manifest instead. Custom resources (LeaderWorkerSet) take no strategic-merge
patch: their changes are given with the path to edit.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from obspack.rightsize.model import Knob, Level, Workload
from obspack.rightsize.sizing import PREFIX_FLAG, quantity

# kinds kubectl can strategic-merge patch, and where their pod template is
TEMPLATES = {
    "Deployment": "deployment",
    "StatefulSet": "statefulset",
    "DaemonSet": "daemonset",
}
LWS_PATH = "spec.leaderWorkerTemplate.{leaderTemplate,workerTemplate}.spec.containers"
SAFE = (Level.HIGH, Level.MEDIUM)  # written by default; Level.LOW only with --include-low; never NONE
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # DNS-1123 label: namespaces, containers
_SUBDOMAIN = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
MAX_FILE_PART = 60  # characters of each part of a patch file's name, before the hash that keeps it unique

__all__ = ["quantity", "owner_patches", "args", "suggested_args", "container_change", "OwnerPatch", "SAFE"]


def _flag(knob: Knob) -> str | None:
    """The argument to set, as vLLM takes it; None when there is nothing to set."""
    if knob.recommended is None:
        return None
    if knob.flag == PREFIX_FLAG:
        return "--no-enable-prefix-caching" if knob.recommended == "off" else None
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
    """The container's part of a strategic-merge patch (exactly what the report shows as changing), or None."""
    if not w.actionable:
        return None
    change: dict[str, Any] = {"name": w.key.container}
    m = w.memory
    resources: dict[str, Any] = {}
    if m.limit_change and m.limit is not None:
        resources["limits"] = {"memory": quantity(m.limit)}
    if m.request_change and m.request is not None:
        resources["requests"] = {"memory": quantity(m.request)}
    if resources:
        change["resources"] = resources
    if w.env:
        change["env"] = [{"name": name, "value": value} for name, value, _ in w.env]
    return change if len(change) > 1 else None


def kubernetes_names(w: Workload) -> bool:
    """Whether the owner's namespace, name and container are names Kubernetes could have given (a label value
    from a broken exporter is not: no patch is built from it)."""
    k = w.key
    return bool(_LABEL.match(k.namespace) and _SUBDOMAIN.match(k.name) and _LABEL.match(k.container))


def patchable(w: Workload, include_low: bool = False) -> bool:
    """Whether a patch is written for the workload: enough data, a safe enough confidence, real names."""
    allowed = (*SAFE, Level.LOW) if include_low else SAFE
    return w.actionable and w.confidence.level in allowed and kubernetes_names(w)


@dataclass(frozen=True)
class OwnerPatch:
    cluster: str
    namespace: str
    kind: str
    name: str
    containers: tuple[dict[str, Any], ...]  # the containers' changes (resources, env)
    args: tuple[tuple[str, tuple[str, ...]], ...]  # (container, vLLM arguments to set)
    confidence: tuple[str, ...] = ()  # the confidence of each container's recommendation

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
        """`<cluster>_<namespace>_<kind>_<name>.yaml`, each part cut to safe characters and MAX_FILE_PART; a
        hash of the exact owner follows where anything was cut, so two owners never share a file."""
        parts = (self.cluster or "cluster", self.namespace, self.kind.lower(), self.name)
        safe = ["".join(ch if ch.isascii() and (ch.isalnum() or ch in "-.") else "-" for ch in p)[:MAX_FILE_PART] for p in parts]
        safe = [p if p.strip(".") else "-" for p in safe]
        name = "_".join(safe)
        if safe != [p for p in parts]:
            digest = hashlib.sha256("\x00".join((self.cluster, self.namespace, self.kind, self.name)).encode()).hexdigest()
            name += "-" + digest[:10]
        return name + ".yaml"


def owner_patches(found: tuple[Workload, ...], include_low: bool = False) -> tuple[OwnerPatch, ...]:
    """One entry per owner with something safe to change, in the order of the workloads."""
    by_owner: dict[tuple[str, str, str, str], list[Workload]] = defaultdict(list)
    for w in found:
        if patchable(w, include_low):
            by_owner[(w.key.cluster, w.key.namespace, w.key.kind, w.key.name)].append(w)
    out = []
    for (cluster, namespace, kind, name), members in by_owner.items():
        containers = tuple(c for c in (container_change(w) for w in members) if c)
        arguments = tuple((w.key.container, args(w)) for w in members if args(w))
        if containers or arguments:
            levels = tuple(f"{w.key.container}: {w.confidence.level.value}" for w in members)
            out.append(OwnerPatch(cluster, namespace, kind, name, containers, arguments, levels))
    return tuple(out)
