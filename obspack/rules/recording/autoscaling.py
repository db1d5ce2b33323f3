"""The autoscaling signal: how saturated each model's replicas are, as one number an autoscaler holds at 1.

Per cluster, namespace and model, from raw engine series (so an alert on it is one group hop from them):

- queue: requests waiting for capacity per engine (the `capacity` reason from vLLM 0.20, every waiting
  request before; deferred requests wait on something more replicas would not give), over the queue
  target;
- kv_cache: the KV cache usage, averaged over the model's pods (the fullest engine of each), over the KV
  target;
- the signal: the larger of the two. 1 means the replicas are as busy as the targets allow; 2 means the
  model needs twice the replicas it has, which is the HPA's own formula (desired = ceil(current x signal)).

Engines put to sleep are left out (their gauges keep their last values), router copies too (no
model_name), per-process copies collapse. Per-model targets (`autoscaling.models`) are one branch per
entry in the one rule, first match wins, as the SLOs do. The `unless` that leaves sleeping engines out
makes the group abort on partial data under Thanos, which is what an autoscaler wants: no signal rather
than a low one.
"""

from __future__ import annotations

from dataclasses import dataclass

from obspack import conventions as c
from obspack.catalogue import vllm_features as f
from obspack.catalogue.vllm import POD_MODEL
from obspack.config import ObspackConfig, promql_string
from obspack.memo import per_config
from obspack.rules.model import RecordingRule, RuleGroup
from obspack.rules.recording.vllm import KV_USAGE, gauge_sum, sel, unless_asleep
from obspack.slos import _none_of

MODEL = ("namespace", "model_name")


@dataclass(frozen=True)
class Branch:
    """The models one targets entry covers (model_name matchers) and their targets."""

    matchers: tuple[str, ...]
    queue: float
    kv_cache: float


@per_config
def branches(cfg: ObspackConfig) -> tuple[Branch, ...]:
    """One branch per `autoscaling.models` entry, then the rest with autoscaling.targets."""
    a = cfg.autoscaling
    out, earlier = [], []
    for entry in a.models:
        out.append(
            Branch(
                (f"model_name=~{promql_string(entry.model_regex)}", *_none_of(earlier)),
                a.targets.queue if entry.queue is None else entry.queue,
                a.targets.kv_cache if entry.kv_cache is None else entry.kv_cache,
            )
        )
        earlier.append(entry.model_regex)
    out.append(Branch(_none_of(earlier), a.targets.queue, a.targets.kv_cache))
    return tuple(out)


def queue_per_engine(cfg: ObspackConfig, *matchers: str) -> str:
    """Requests waiting for capacity per engine, per model, awake engines only, from raw series."""
    pm, keep = c.by(cfg, *POD_MODEL), c.by(cfg, *MODEL)
    capacity = gauge_sum(cfg, f.WAITING_BY_REASON, f.CAPACITY, *matchers)
    waiting = gauge_sum(cfg, "vllm:num_requests_waiting", *matchers)
    reporting = f"group by ({pm}) ({f.WAITING_BY_REASON}{sel(cfg, *matchers)})"
    per_pod = unless_asleep(cfg, f"(\n  {capacity}\n  or\n  ({waiting} unless on ({pm}) {reporting})\n)")
    engines = unless_asleep(cfg, f"max without (pid) (vllm:num_requests_running{sel(cfg, *matchers)})")
    return f"sum by ({keep}) (\n{per_pod}\n)\n/\ncount by ({keep}) (\n{engines}\n)"


def kv_cache(cfg: ObspackConfig, *matchers: str) -> str:
    """KV cache usage per model: the fullest engine of each awake pod, averaged over the pods."""
    pm, keep = c.by(cfg, *POD_MODEL), c.by(cfg, *MODEL)
    usage = f"max by ({pm}) (\n  {KV_USAGE[0]}{sel(cfg, *matchers)}\n  or\n  {KV_USAGE[1]}{sel(cfg, *matchers)}\n)"
    return f"avg by ({keep}) (\n{unless_asleep(cfg, usage)}\n)"


def parts(cfg: ObspackConfig, branch: Branch) -> str:
    queue = f"({queue_per_engine(cfg, *branch.matchers)}) / {branch.queue:g}"
    kv = f"({kv_cache(cfg, *branch.matchers)}) / {branch.kv_cache:g}"
    return f'label_replace({queue}, "signal", "queue", "", "")\nor\nlabel_replace({kv}, "signal", "kv_cache", "", "")'


def group(cfg: ObspackConfig) -> RuleGroup:
    # the branches' model matchers do not overlap: one rule whose parts are joined with `or` (two rules of
    # one name and labels are duplicates to promtool's linter, and `check rules --lint-fatal` refuses them)
    every_branch = "\nor\n".join(parts(cfg, b) for b in branches(cfg))
    rules = (
        RecordingRule(record=c.SATURATION_PART, expr=every_branch),
        RecordingRule(record=c.SATURATION, expr=f"max by ({c.by(cfg, *MODEL)}) ({c.SATURATION_PART})"),
    )
    return RuleGroup(name=f"{c.GROUP_PREFIX}-vllm-autoscaling.rules", rules=rules, interval=cfg.rule_interval)
