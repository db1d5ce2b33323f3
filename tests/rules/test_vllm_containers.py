"""Which containers the rules take for vLLM, by `vllm_containers`: an image the image regex takes, a name the
name regex takes, never a series that lacks the image label (kube-state-metrics before 2.3 has no `image_spec`),
and an empty image regex is off, as an empty name regex is."""

from __future__ import annotations

from pathlib import Path

import pytest

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.rules.recording import kubernetes
from tests.support.tools import promtool_record_test

WHERE = 'cluster="prod", namespace="llm", pod="chat-0"'
SERIES = [  # kube-state-metrics before 2.3: `image` only
    {"series": f'kube_pod_container_info{{{WHERE}, container="server", image="docker.io/vllm/vllm-openai:v0.33.0"}}',
     "values": "1x5"},
    {"series": f'kube_pod_container_info{{{WHERE}, container="envoy", image="envoyproxy/envoy:v1.30"}}', "values": "1x5"},
    # a runtime that reports the image by digest: only the spec image (kube-state-metrics 2.3+) tells
    {"series": f'kube_pod_container_info{{{WHERE}, container="pinned", image="sha256:4f1c0a9e", image_spec="vllm/vllm-openai@sha256:4f1c0a9e"}}',
     "values": "1x5"},
]  # fmt: skip


@pytest.mark.parametrize(
    ("containers", "vllm"),
    [
        ({}, ["pinned", "server"]),  # the default image regex
        ({"image_regex": "", "name_regex": "server"}, ["server"]),  # by name alone: the image regex is off
        ({"image_regex": ""}, []),  # neither: only engine metrics would tell
        ({"image_regex": "(.*vllm.*)?"}, ["pinned", "server"]),  # takes the empty string, never a missing image_spec
        ({"image_regex": ".*"}, ["envoy", "pinned", "server"]),  # every image
        ({"image_regex": ".*sha256.*"}, ["pinned"]),  # both images: found once
    ],
)
def test_a_container_is_vllm_by_an_image_or_name_the_config_takes(
    tmp_path: Path, containers: dict[str, str], vllm: list[str]
) -> None:
    cfg = ObspackConfig.model_validate({"vllm_containers": containers})
    rule = next(r for r in kubernetes.group(cfg).rules if r.record == c.VLLM_CONTAINER)
    check = {
        "expr": c.VLLM_CONTAINER,
        "eval_time": "4m",
        "exp_samples": [{"labels": f'{c.VLLM_CONTAINER}{{{WHERE}, container="{name}"}}', "value": 1} for name in vllm],
    }
    promtool_record_test(tmp_path, [rule.to_dict()], SERIES, [check])
