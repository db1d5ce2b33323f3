"""vmalert (VictoriaMetrics 1.79): the same groups and rules, each expression rewritten to MetricsQL
that means what the PromQL means (obspack/metricsql.py). Only the fields vmalert 1.79 knows are written;
`vmalert -dryRun` accepts both files."""

from __future__ import annotations

from dataclasses import replace

from obspack.metricsql import rewrite
from obspack.rules.model import RuleGroup

RECORDING_FILE = "vmalert/recording-rules.yaml"
ALERTS_FILE = "vmalert/alerts.yaml"


def vmalert_group(group: RuleGroup) -> RuleGroup:
    return replace(group, rules=tuple(replace(r, expr=rewrite(r.expr)) for r in group.rules))

