"""Whose pods they are: owners from kube-state-metrics, and read from the pod name without it."""

from __future__ import annotations

from obspack.rightsize.workloads import Owner, Owners, from_rows, owner_of

OWNERS = from_rows(
    {
        ("c", "ns", "web-7c9d5b8f4-q2x7k", "ReplicaSet", "web-7c9d5b8f4"): 1,
        ("c", "ns", "db-0", "StatefulSet", "db"): 1,
        ("c", "ns", "lws-0", "StatefulSet", "lws"): 1,
        ("c", "ns", "orphan-5d8f9c7b6d-x2k9p", "ReplicaSet", "orphan-5d8f9c7b6d"): 1,
        ("c", "ns", "empty", "", ""): 1,
    },
    {("c", "ns", "web-7c9d5b8f4", "Deployment", "web"): 1},
    {("c", "ns", "lws-0", "lws"): 1},
)


def test_a_replicaset_pod_belongs_to_the_deployment_that_owns_the_replicaset() -> None:
    assert owner_of(("c", "ns", "web-7c9d5b8f4-q2x7k"), OWNERS) == Owner("Deployment", "web")


def test_a_replicaset_without_its_owner_series_is_read_as_a_deployment_and_marked_guessed() -> None:
    assert owner_of(("c", "ns", "orphan-5d8f9c7b6d-x2k9p"), OWNERS) == Owner("Deployment", "orphan", guessed=True)


def test_statefulsets_and_leaderworkersets() -> None:
    assert owner_of(("c", "ns", "db-0"), OWNERS) == Owner("StatefulSet", "db")
    assert owner_of(("c", "ns", "lws-0"), OWNERS) == Owner("LeaderWorkerSet", "lws")


def test_without_kube_state_metrics_the_owner_is_read_from_the_pod_name() -> None:
    empty = Owners({}, {}, {})
    assert owner_of(("c", "ns", "api-5d8f9c7b6d-x2k9p"), empty) == Owner("Deployment", "api", guessed=True)
    assert owner_of(("c", "ns", "batch-llm-3"), empty) == Owner("StatefulSet", "batch-llm", guessed=True)
    assert owner_of(("c", "ns", "bare"), empty) == Owner("Pod", "bare", guessed=True)
    assert owner_of(("c", "ns", "empty"), OWNERS) == Owner("Pod", "empty", guessed=True)  # an empty owner row


def test_the_same_names_in_two_clusters_stay_apart() -> None:
    other = from_rows({("d", "ns", "db-0", "StatefulSet", "other-db"): 1}, {}, {})
    assert owner_of(("d", "ns", "db-0"), other) == Owner("StatefulSet", "other-db")
    assert owner_of(("c", "ns", "db-0"), other) == Owner("StatefulSet", "db", guessed=True)
