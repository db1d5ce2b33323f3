"""Queries of the disaggregated-serving page: engine records split by each pod's prefill/decode role
(obspack/rules/roles.py), and the endpoint picker's P/D decisions.

Each pod's role comes from the role record of the GPU attribution group (`role`: prefill, decode or both,
made by obspack/rules/roles.py from the role label and the pod's name): one series per pod, where joining the
raw role label and pod names at every step of a range took over a second at 1,000 pods. The per-role graphs
read the records made from it per model and role (obspack/rules/recording/roles.py): joining 1,000 pods
to it at every step still took ~0.8 s a graph.
"""

from __future__ import annotations

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.dashboards import queries as q
from obspack.rules import roles

# The endpoint picker's P/D decisions: llm-d router's current name, its scheduler-era name, and the older
# two-valued counter of the deprecated pd-profile-handler (all with `decision_type`).
EPP_DECISIONS = (
    "llm_d_epp_disagg_decision_total",
    "llm_d_inference_scheduler_disagg_decision_total",
    "llm_d_epp_pd_decision_total",
    "llm_d_inference_scheduler_pd_decision_total",
)


def _of_role(cfg: ObspackConfig, role: str) -> str:
    """The per-pod role record of the selected vLLM pods whose role is `role`."""
    return c.POD_ROLE + c.selector(q.scope(cfg, *q.POD), f'role="{role}"')


def by_role(cfg: ObspackConfig, record: str) -> str:
    """A per-model and role record (obspack/rules/recording/roles.py), narrowed to the page's clusters,
    namespaces and models: per model and role, the pod filter does not narrow it."""
    return q.rec(cfg, record, q.MODEL)


def pods_of(cfg: ObspackConfig, role: roles.Role) -> str:
    """Selected pods that only do `role`, per model."""
    # `and`: each pod passes as it is (a join built a new series per pod and step: 2.5 times slower)
    joined = f"{q.rec(cfg, c.RUNNING)}\nand on ({c.by(cfg, 'namespace', 'pod')})\n{_of_role(cfg, role)}"
    return f"count by ({c.by(cfg, 'namespace', 'model_name')}) (\n{joined}\n)"


def prefill_per_decode(cfg: ObspackConfig) -> str:
    """Prefill-only pods per decode-only pod, per model (models that have both)."""
    return f"{pods_of(cfg, 'prefill')}\n/ on ({c.by(cfg, 'namespace', 'model_name')})\n{pods_of(cfg, 'decode')}"


def epp_decisions(cfg: ObspackConfig) -> str:
    """The endpoint picker's P/D decisions per second, by decision type (the first counter name present)."""
    where = c.selector(cfg.selectors.epp, q.scope(cfg, "cluster", "namespace", "model"))
    rates = "\n  or\n  ".join(f"rate({m}{where}[$__rate_interval])" for m in EPP_DECISIONS)
    return f"sum by ({c.by(cfg, 'decision_type')}) (\n  {rates}\n)"
