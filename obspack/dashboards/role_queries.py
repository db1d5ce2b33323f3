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


def by_role(cfg: ObspackConfig, record: str) -> str:
    """A per-model and role record (obspack/rules/recording/roles.py), narrowed to the page's clusters,
    namespaces and models: per model and role, the pod filter does not narrow it."""
    return q.rec(cfg, record, q.MODEL)


def prefill_per_decode(cfg: ObspackConfig) -> str:
    """Prefill-only pods per decode-only pod, per model (models that have both): each role's pods counted per
    model by their record (obspack/rules/recording/roles.py), which the pod filter does not narrow, as the
    page's other per-role graphs. Counting the selected pods' records joined to their roles at every step
    of the range took 0.12 to 0.29 s a load at 1,000 pods."""
    pods = {role: c.ROLE_PODS + c.selector(q.scope(cfg, *q.MODEL), f'role="{role}"') for role in roles.ONLY}
    return f"{pods['prefill']}\n/ on ({c.by(cfg, 'namespace', 'model_name')})\n{pods['decode']}"


def epp_decisions(cfg: ObspackConfig) -> str:
    """The endpoint picker's P/D decisions per second, by decision type (the first counter name present)."""
    where = c.selector(cfg.selectors.epp, q.scope(cfg, "cluster", "namespace", "model"))
    rates = "\n  or\n  ".join(f"rate({m}{where}[$__rate_interval])" for m in EPP_DECISIONS)
    return f"sum by ({c.by(cfg, 'decision_type')}) (\n  {rates}\n)"
