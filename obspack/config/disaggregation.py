"""Prefill/decode disaggregation (llm-d, NIXL, Mooncake): how obspack tells a pod that only prefills or only
decodes from one that does both. docs/config.md, docs/rules.md (roles).

A pod's role comes from its Kubernetes role label where kube-state-metrics exports it, else from its name.
The name patterns default to the ones llm-d's own P/D alerts use (`pod=~".*prefill.*"`, `".*decode.*"`):
llm-d's charts name their pods that way, and a fleet without disaggregation rarely has pods named so. A pod
whose name matches both patterns, or neither, does both.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from obspack.config.values import K8sKey, Regex, _Model


class Disaggregation(_Model):
    """How prefill-only and decode-only pods are recognised: the role label first, then the pod name."""

    role_label: K8sKey | Literal[""] = Field(
        "llm-d.ai/role",
        description="pod label naming the role (llm-d: prefill, encode-prefill, decode; any other value does both); "
        "kube-state-metrics must allowlist it for pods (empty: names only)",
    )
    prefill_pod_regex: Regex = Field(
        ".*prefill.*",
        description="pods without the role label whose name matches this only prefill (full match; empty: none)",
    )
    decode_pod_regex: Regex = Field(
        ".*decode.*",
        description="pods without the role label whose name matches this only decode (full match; empty: none)",
    )
