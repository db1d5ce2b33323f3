"""The user's config: every setting, its default and a one-line description, declared once.

`ObspackConfig()` is the built-in default pack. `load_config(path)` reads a YAML file and reports
every problem as `FILE:LINE: key.path: what is wrong (what is allowed)`.

- values.py: the value types (durations, label names, selectors, URLs...), each with its allowed range;
- alerts.py and slos.py: the settings of each alert and of the SLOs;
- model.py: the whole config (sources, alerts, SLOs, outputs);
- conflicts.py: settings valid alone but not together;
- load.py: reading a file into the model, errors with FILE:LINE;
- starter.py: the commented starter file of `obspack init`.
"""

from obspack.config.alerts import Alerts, AlertSettings
from obspack.config.conflicts import Conflict, conflicts, windows
from obspack.config.load import load_config
from obspack.config.model import GrafanaOutput, ObspackConfig, Scope, defaults, flat_dump, scope_matcher
from obspack.config.slos import SLOs
from obspack.config.starter import annotated_defaults
from obspack.config.values import (
    _DURATION,
    MAX_ENTRIES,
    RULE_LABELS,
    Duration,
    LabelMap,
    Severity,
    Window,
    has_type,
    promql_string,
)

__all__ = [
    "MAX_ENTRIES",
    "RULE_LABELS",
    "_DURATION",
    "AlertSettings",
    "Alerts",
    "Conflict",
    "Duration",
    "GrafanaOutput",
    "LabelMap",
    "ObspackConfig",
    "SLOs",
    "Scope",
    "Severity",
    "Window",
    "annotated_defaults",
    "conflicts",
    "defaults",
    "flat_dump",
    "has_type",
    "load_config",
    "promql_string",
    "scope_matcher",
    "windows",
]
