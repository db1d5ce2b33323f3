"""Whose pods they are: the owning Deployment, StatefulSet or LeaderWorkerSet of each vLLM pod.

kube-state-metrics says it: `kube_pod_owner` (a ReplicaSet, a StatefulSet, ...), `kube_replicaset_owner`
(the ReplicaSet's Deployment) and, when its label is allowlisted, the pod label
`leaderworkerset.sigs.k8s.io/name` (kube_pod_labels). Without them the owner is read from the pod name,
as Kubernetes builds it (`<deployment>-<template hash>-<suffix>`, `<statefulset>-<ordinal>`), and marked as
guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_DEPLOYMENT_POD = re.compile(r"^(?P<name>.+)-[a-z0-9]{6,10}-[a-z0-9]{5}$")
_STATEFUL_POD = re.compile(r"^(?P<name>.+)-[0-9]+$")
_REPLICASET = re.compile(r"^(?P<name>.+)-[a-z0-9]{6,10}$")

PodKey = tuple[str, str, str]  # cluster, namespace, pod


@dataclass(frozen=True)
class Owner:
    kind: str
    name: str
    guessed: bool = False


@dataclass(frozen=True)
class Owners:
    """kube-state-metrics' answers: pod -> (kind, name), replicaset -> (kind, name), pod -> LWS name."""

    pods: Mapping[PodKey, tuple[str, str]]
    replicasets: Mapping[PodKey, tuple[str, str]]
    leaderworkersets: Mapping[PodKey, str]


def owner_of(pod: PodKey, owners: Owners) -> Owner:
    cluster, namespace, name = pod
    lws = owners.leaderworkersets.get(pod)
    if lws:
        return Owner("LeaderWorkerSet", lws)
    found = owners.pods.get(pod)
    if found is None:
        return _guess(name)
    kind, owner = found
    if kind != "ReplicaSet":
        return Owner(kind, owner)
    above = owners.replicasets.get((cluster, namespace, owner))
    if above is not None:
        return Owner(*above)
    match = _REPLICASET.match(owner)
    return Owner("Deployment", match["name"], guessed=True) if match else Owner("ReplicaSet", owner)


def _guess(pod: str) -> Owner:
    if match := _DEPLOYMENT_POD.match(pod):
        return Owner("Deployment", match["name"], guessed=True)
    if match := _STATEFUL_POD.match(pod):
        return Owner("StatefulSet", match["name"], guessed=True)
    return Owner("Pod", pod, guessed=True)


def from_rows(
    pod_rows: Mapping[tuple[str, ...], float],
    replicaset_rows: Mapping[tuple[str, ...], float],
    lws_rows: Mapping[tuple[str, ...], float],
) -> Owners:
    """From the rows of the owner queries (keys: cluster, namespace, pod or replicaset, kind, name).

    A pod with several owners (a rare adoption) keeps the first in sorted order, so the answer is stable."""
    pods: dict[PodKey, tuple[str, str]] = {}
    for cluster, namespace, pod, kind, name in sorted(pod_rows):
        if kind and name:
            pods.setdefault((cluster, namespace, pod), (kind, name))
    replicasets: dict[PodKey, tuple[str, str]] = {}
    for cluster, namespace, rs, kind, name in sorted(replicaset_rows):
        if kind and name:
            replicasets.setdefault((cluster, namespace, rs), (kind, name))
    lws = {(cl, ns, pod): name for cl, ns, pod, name in sorted(lws_rows) if name}
    return Owners(pods, replicasets, lws)
