"""LeaderWorkerSet (multi-node vLLM): the worker pods of a group, found from kube-state-metrics.

Only a group's leader runs vLLM's API server and serves `/metrics`; the workers hold GPUs and host memory
and serve no engine series. LWS runs the workers of a group in a StatefulSet named after the leader pod
(pods `<leader>-1`, `<leader>-2`, ...), so `kube_pod_owner{owner_kind="StatefulSet",
owner_name="<leader>"}` names each worker's leader with kube-state-metrics' defaults. The pod labels LWS
sets (`leaderworkerset.sigs.k8s.io/worker-index` and others) reach `kube_pod_labels` only where
kube-state-metrics allowlists them, so obspack does not rely on them.
"""

from __future__ import annotations

from obspack import conventions as c
from obspack.config import ObspackConfig

LEADER = "leader"


def workers(cfg: ObspackConfig, leaders: str, copy: tuple[str, ...] = ()) -> str:
    """The worker pods of `leaders` (a vector with one series per cluster, namespace and pod), one series
    each, with their `leader` and the `copy` labels of their leader (e.g. its model_name)."""
    ksm = c.selector(cfg.selectors.kube_state_metrics, 'owner_kind="StatefulSet"')
    owned = f'label_replace(kube_pod_owner{ksm}, "{LEADER}", "$1", "owner_name", "(.+)")'
    led = f'label_replace({leaders}, "{LEADER}", "$1", "pod", "(.+)")'
    by_leader = c.by(cfg, "namespace", LEADER)
    keep = ", ".join(copy)
    return (
        f"group by ({c.by(cfg, 'namespace', 'pod', LEADER, *copy)}) (\n"
        f"  {owned}\n"
        f"  * on ({by_leader}) group_left ({keep})\n"
        f"  group by ({by_leader}{', ' + keep if keep else ''}) ({led})\n"
        ")"
    )


def with_workers(cfg: ObspackConfig, pods: str, universe: str) -> str:
    """`pods` and the workers of the leaders among them, one series per pod, `pods` read once (`workers`
    would read it a second time): every pod of `universe` (which holds `pods`) stands for itself, and every
    pod a StatefulSet owns also for the leader the StatefulSet is named after."""
    ksm = c.selector(cfg.selectors.kube_state_metrics, 'owner_kind="StatefulSet"')
    itself = f'label_replace({universe}, "{LEADER}", "$1", "pod", "(.+)")'
    owned = f'label_replace(kube_pod_owner{ksm}, "{LEADER}", "$1", "owner_name", "(.+)")'
    led = f'label_replace({pods}, "{LEADER}", "$1", "pod", "(.+)")'
    by_leader = c.by(cfg, "namespace", LEADER)
    return (
        f"group by ({c.by(cfg, 'namespace', 'pod')}) (\n"
        f"  (\n    {itself}\n    or\n    {owned}\n  )\n"
        f"  * on ({by_leader}) group_left ()\n"
        f"  group by ({by_leader}) ({led})\n"
        ")"
    )


def any_workers(cfg: ObspackConfig) -> str:
    """Every pod owned by a StatefulSet named after another pod of its namespace: LWS workers whatever
    their leader serves now (a leader that is down, too). kube-state-metrics only."""
    pods = f"group by ({c.by(cfg, 'namespace', 'pod')}) (kube_pod_owner{c.selector(cfg.selectors.kube_state_metrics)})"
    return workers(cfg, pods)
