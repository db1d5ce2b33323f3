"""Queries of the disaggregated-serving page: engine records split by each pod's prefill/decode role
(obspack/rules/roles.py), and the endpoint picker's P/D decisions.

Each pod's role comes from the cost records' per-pod owner record (`role`: prefill, decode or both, made by
obspack/rules/roles.py from the role label and the pod's name): one series per pod, where joining the raw
role label and pod names at every step of a range took over a second at 1,000 pods.
"""

from __future__ import annotations

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import queries as q
from obspack.rules import roles

PER_ROLE = ("namespace", "model_name", "role")
BOTH = "both"
# The endpoint picker's P/D decisions: llm-d router's current name, its scheduler-era name, and the older
# two-valued counter of the deprecated pd-profile-handler (all with `decision_type`).
EPP_DECISIONS = (
    "llm_d_epp_disagg_decision_total",
    "llm_d_inference_scheduler_disagg_decision_total",
    "llm_d_epp_pd_decision_total",
    "llm_d_inference_scheduler_pd_decision_total",
)


def _roles(cfg: ObspackConfig) -> str:
    """One series per selected vLLM pod with its role: prefill, decode, else both."""
    return f"max by ({c.by(cfg, 'namespace', 'pod', 'role')}) ({q.rec(cfg, c.POD_COST_INFO, q.POD)})"


def by_role(cfg: ObspackConfig, record: str, how: str = "sum") -> str:
    """A per-pod engine record (narrowed to the page's variables) aggregated per model and role."""
    joined = f"{q.rec(cfg, record)}\n* on ({c.by(cfg, 'namespace', 'pod')}) group_left (role)\n(\n{_roles(cfg)}\n)"
    return f"{how} by ({c.by(cfg, *PER_ROLE)}) (\n{joined}\n)"


def pods_of(cfg: ObspackConfig, role: roles.Role) -> str:
    """Selected pods that only do `role`, per model."""
    of_role = f"{q.rec(cfg, c.POD_COST_INFO, q.POD)[:-1]}, role=\"{role}\"}}"
    joined = f"{q.rec(cfg, c.RUNNING)}\n* on ({c.by(cfg, 'namespace', 'pod')}) group_left ()\ngroup by ({c.by(cfg, 'namespace', 'pod')}) ({of_role})"
    return f"count by ({c.by(cfg, 'namespace', 'model_name')}) (\n{joined}\n)"


def prefill_per_decode(cfg: ObspackConfig) -> str:
    """Prefill-only pods per decode-only pod, per model (models that have both)."""
    return f"{pods_of(cfg, 'prefill')}\n/ on ({c.by(cfg, 'namespace', 'model_name')})\n{pods_of(cfg, 'decode')}"


def epp_decisions(cfg: ObspackConfig) -> str:
    """The endpoint picker's P/D decisions per second, by decision type (the first counter name present)."""
    where = c.selector(cfg.selectors.epp, q.scope(cfg, "cluster", "namespace", "model"))
    rates = "\n  or\n  ".join(f"rate({m}{where}[$__rate_interval])" for m in EPP_DECISIONS)
    return f"sum by ({c.by(cfg, 'decision_type')}) (\n  {rates}\n)"
