"""Which containers and pods run vLLM, and their host-memory plane (cAdvisor + kube-state-metrics).

A container is vLLM by its image, its name, the engine metrics it serves, or as a LeaderWorkerSet worker
of a pod that serves them (multi-node engines: obspack/rules/lws.py)."""

from __future__ import annotations

import re
import textwrap

from obspack import conventions as c
from obspack.catalogue.vllm import HAS_MODEL
from obspack.config import ObspackConfig, promql_string
from obspack.rules import lws
from obspack.rules.model import RecordingRule, RuleGroup

HAS_CONTAINER = 'container!=""'
NOT_PAUSE = 'container!="POD"'


def vllm_source_selectors(cfg: ObspackConfig, with_container: bool, engines: bool = True) -> list[str]:
    """The raw selectors that mark a container as vLLM: its image (kube-state-metrics or cAdvisor), its name,
    or the vLLM engine metrics scraped from it (unless `engines` is false). Any one is enough.
    `with_container`: the engine series must name their container (per-container level)."""
    s = cfg.selectors
    sources = [
        f"kube_pod_container_info{c.selector(s.kube_state_metrics, HAS_CONTAINER, *_image(cfg, 'image'))}",
        f"kube_pod_container_info{c.selector(s.kube_state_metrics, HAS_CONTAINER, *_not_image(cfg), *_image(cfg, 'image_spec'))}",
        f"container_memory_working_set_bytes{c.selector(s.cadvisor, HAS_CONTAINER, NOT_PAUSE, *_image(cfg, 'image'))}",
    ] if cfg.vllm_containers.image_regex else []  # empty: off, as name_regex
    if engines:
        sources.append(f"vllm:num_requests_running{c.selector(s.vllm, HAS_MODEL, HAS_CONTAINER if with_container else '')}")
    if cfg.vllm_containers.name_regex:
        name = promql_string(cfg.vllm_containers.name_regex)
        sources.append(f"kube_pod_container_info{c.selector(s.kube_state_metrics, 'container=~' + name)}")
    return sources


def _not_image(cfg: ObspackConfig) -> tuple[str, ...]:
    """The spec image is read only where the status image did not mark the container already, so each
    container's series is read once (the image leg takes nearly all of them: the spec image matters where the
    runtime reports a digest). Where the regex takes the empty string, the image leg refuses a blank image as
    well, which one matcher cannot add: then nothing is left out."""
    regex = cfg.vllm_containers.image_regex
    return () if re.fullmatch(regex, "") else (f"image!~{promql_string(regex)}",)


def _image(cfg: ObspackConfig, label: str) -> tuple[str, ...]:
    """The matchers of an image label. A regex that takes the empty string would also take every series
    without the label (kube-state-metrics before 2.3 has no image_spec; the kubelet's resource endpoint no
    image): those are refused, so that only an image the regex takes marks a container as vLLM."""
    regex = cfg.vllm_containers.image_regex
    blank = (f'{label}!=""',) if re.fullmatch(regex, "") else ()
    return (*blank, f"{label}=~{promql_string(regex)}")


def vllm_image_pods(cfg: ObspackConfig) -> str:
    """One series per pod with a vLLM container by its image or name, from raw series: with the engines'
    pods (`vllm_leaders`) and their LWS workers, every vLLM pod. What this adds is the pods whose engine
    series are missing (crash-looping, not scraped yet)."""
    legs = vllm_source_selectors(cfg, with_container=False, engines=False)
    if not legs:
        return ""  # neither an image nor a name marks vLLM: the engines' pods and their workers are all
    return f"group by ({c.by(cfg, 'namespace', 'pod')}) (\n  " + "\n  or\n  ".join(legs) + "\n)"


def vllm_leaders(cfg: ObspackConfig) -> str:
    """One series per pod serving vLLM engine metrics, with its model: the leaders of LWS groups."""
    pod = c.by(cfg, "namespace", "pod")
    running = "vllm:num_requests_running" + c.selector(cfg.selectors.vllm, HAS_MODEL)
    return f"topk by ({pod}) (1, group by ({pod}, model_name) ({running}))"


def vllm_workers(cfg: ObspackConfig) -> str:
    """The containers of the LeaderWorkerSet workers of vLLM leaders (obspack/rules/lws.py): they run vLLM's
    engine workers and serve no engine series, whatever their image."""
    found = lws.workers(cfg, vllm_leaders(cfg))
    info = f"kube_pod_container_info{c.selector(cfg.selectors.kube_state_metrics, HAS_CONTAINER)}"
    return f"(\n  {info}\n  and on ({c.by(cfg, 'namespace', 'pod')})\n{textwrap.indent(found, '  ')}\n)"


def vllm_containers(cfg: ObspackConfig) -> str:
    """One series per vLLM container, from raw series; `group by` removes duplicates."""
    legs = [*vllm_source_selectors(cfg, with_container=True), vllm_workers(cfg).replace("\n", "\n  ")]
    joined = "\n  or\n  ".join(legs)
    return f"group by ({c.by(cfg, 'namespace', 'pod', 'container')}) (\n  {joined}\n)"



def group(cfg: ObspackConfig) -> RuleGroup:
    s = cfg.selectors
    on = c.by(cfg, "namespace", "pod", "container")
    cadvisor = c.selector(s.cadvisor, HAS_CONTAINER, NOT_PAUSE)
    ksm_memory = c.selector(s.kube_state_metrics, 'resource="memory"')
    rules = [
        RecordingRule(record=c.VLLM_CONTAINER, expr=vllm_containers(cfg)),
        # container!="" cuts the pod-level cgroup and containerd's pause sandbox, container!="POD" the
        # dockershim one. max by: a restarted container can leave its dead cgroup behind for a while, and the
        # kubelet's /metrics/resource endpoint repeats the same value without an image label.
        RecordingRule(
            record=c.MEMORY_WORKING_SET,
            expr=f"""
                max by ({on}) (container_memory_working_set_bytes{cadvisor})
                and on ({on}) {c.VLLM_CONTAINER}
            """,
        ),
        # kube-state-metrics may run as HA replicas: max by makes each side unique before the join.
        # Without kube-state-metrics, cAdvisor's own limit (0 when unlimited) stands in.
        RecordingRule(
            record=c.MEMORY_LIMIT,
            expr=f"""
                (
                  max by ({on}) (kube_pod_container_resource_limits{ksm_memory})
                  or
                  max by ({on}) (container_spec_memory_limit_bytes{cadvisor} > 0)
                )
                and on ({on}) {c.VLLM_CONTAINER}
            """,
        ),
        RecordingRule(
            record=c.MEMORY_LIMIT_RATIO,
            expr=f"{c.MEMORY_WORKING_SET}\n/ on ({on})\n({c.MEMORY_LIMIT} > 0)",
        ),
    ]
    return RuleGroup(name=f"{c.GROUP_PREFIX}-kubernetes.rules", rules=tuple(rules), interval=cfg.rule_interval)
