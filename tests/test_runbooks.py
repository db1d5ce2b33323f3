"""Runbooks: every alert has a page, every page renders cleanly, its PromQL parses and its links resolve."""

from __future__ import annotations

import dataclasses
import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import promql_parser
import pytest
import yaml

from obspack import runbooks
from obspack.config import ObspackConfig
from obspack.errors import RenderError
from obspack.pack import build
from obspack.render.files import pack_files
from obspack.rules.alerts import all_alerts, enabled
from obspack.rules.model import tidy
from obspack.runbooks import render_runbooks
from obspack.templating import templates_dir
from tests.support.tools import require_tool

CUSTOM = ObspackConfig.model_validate(
    {
        "cluster_label": "k8s_cluster",
        "runbook_base_url": "https://runbooks.example.com/vllm/",
        "selectors": {
            "vllm": 'job="vllm-engine"',
            "cadvisor": 'job="kubelet", metrics_path="/metrics/cadvisor"',
            "kube_state_metrics": 'job="kube-state-metrics"',
            "dcgm": 'job="dcgm-exporter"',
            "exporter": 'job="obspack-exporter"',
        },
        "alerts": {
            "VLLMHostMemoryNearLimit": {"ratio": 0.85},
            "VLLMContainerOOMKilled": {"window": "30m"},
            "VLLMGPUMemoryNearFull": {"ratio": 0.95, "for": "10m"},
            "VLLMKVCacheUsageHigh": {"ratio": 0.8, "for": "10m"},
            "VLLMKVCacheUsageCritical": {"ratio": 0.98},
            "VLLMRequestQueueBacklog": {"min_waiting": 10, "waiting_to_running": 2},
            "VLLMRequestPreemptions": {"rate": 0.05},
            "VLLMPrefixCacheHitRateLow": {"ratio": 0.2, "window": "1h"},
            "VLLMKVCacheFragmentationHigh": {"enabled": False},
        },
        "grafana": {"url": "https://grafana.example.com"},
    }
)
CONFIGS = {"default": ObspackConfig(), "custom": CUSTOM}

# Everything a reader is asked to fill in. A new placeholder must be added here on purpose.
KNOWN_PLACEHOLDERS = {
    "cluster", "namespace", "pod", "container", "model", "node", "uuid", "gpu", "reason", "slo", "deployment",
    "new-limit", "replicas", "port", "grafana-url", "connector", "kind", "hpa", "scaledobject", "max-replicas",
    "role", "short", "engine", "pool", "job", "epp", "selector", "signal",
}  # fmt: skip
PLACEHOLDER = re.compile(r"<([a-z][a-z0-9-]*)>")
ALERT_NAME = re.compile(r"\b(?:VLLM|Obspack|InferenceGateway|InferencePool)[A-Z][A-Za-z0-9]*\b")
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
# Go templates that Prometheus/Alertmanager fill in; allowed inside fenced code only.
PROMETHEUS_TEMPLATE = re.compile(r"\{\{-?\s*(\$|\.|with\b|end\b|if\b|else\b|range\b|humanize)")
CRASH_TRIAGE = "Did it crash, and which memory ran out?"
CRASH_ALERTS = {"VLLMContainerOOMKilled", "VLLMContainerRestarted", "VLLMTargetDown"}  # about a crash (or its aftermath)
SECTIONS = (
    "Do this now",
    "Confirm",
    CRASH_TRIAGE,
    "What it means",
    "Impact on users",
    "Likely causes, most likely first",
    "Fix, in this order",
    "Verify the fix",
    "Escalate",
    "Related",
)


@dataclass(frozen=True)
class Block:
    lang: str
    code: str


@dataclass(frozen=True)
class Page:
    prose: str  # everything outside fenced code
    blocks: tuple[Block, ...]
    headings: tuple[str, ...]


def parse_markdown(text: str) -> Page:
    """Split a page into prose and fenced blocks (dedented by the fence's indentation); fences must close."""
    prose: list[str] = []
    blocks: list[Block] = []
    headings: list[str] = []
    fence: tuple[str, str] | None = None  # (indent, lang)
    code: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = (m.group(1), m.group(2))
                code = []
                continue
            prose.append(line)
            h = HEADING.match(line)
            if h:
                headings.append(h.group(2))
        elif m and not m.group(2):
            blocks.append(Block(fence[1], "\n".join(code)))
            fence = None
        else:
            assert line.startswith(fence[0]) or not line.strip(), (
                f"line {n} is outdented inside a fence: {line!r}"
            )
            code.append(line[len(fence[0]) :])
    assert fence is None, "a fenced code block is never closed"
    return Page("\n".join(prose), tuple(blocks), tuple(headings))


def anchors(headings: tuple[str, ...]) -> set[str]:
    """The fragment ids a git web UI (GitHub's rules) gives these headings."""
    seen: Counter[str] = Counter()
    out = set()
    for heading in headings:
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
        seen[slug] += 1
    return out


def fill_placeholders(code: str) -> str:
    return PLACEHOLDER.sub("x", code)


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def rendered(request: pytest.FixtureRequest) -> tuple[ObspackConfig, dict[str, str]]:
    cfg = CONFIGS[request.param]
    return cfg, render_runbooks(cfg)


@pytest.fixture(scope="module")
def default_pages() -> dict[str, str]:
    return render_runbooks(ObspackConfig())


@pytest.fixture(scope="module")
def custom_pages() -> dict[str, str]:
    return render_runbooks(CUSTOM)


# ------------------------------------------------------------------------------------------------------
# Catalogue: one page per alert, one alert per page


def test_every_enabled_alert_has_exactly_one_runbook(rendered: tuple[ObspackConfig, dict[str, str]]) -> None:
    cfg, pages = rendered
    alerts = [a for a in all_alerts(cfg) if enabled(cfg, a.alert)]
    assert sorted(pages) == sorted({a.runbook for a in alerts})  # an alert of several rules has one page
    for a in alerts:
        assert pages[a.runbook].startswith(f"# {a.alert}\n"), a.runbook


def test_every_template_belongs_to_an_alert() -> None:
    """A page template whose alert was renamed or removed is an error; partials start with '_'."""
    folder = templates_dir() / "runbooks"
    slugs = {p.name.removesuffix(".md.j2") for p in folder.glob("*.md.j2") if not p.name.startswith("_")}
    assert slugs == {a.runbook for a in all_alerts(ObspackConfig())}
    assert not (folder / "generic.md.j2").exists()


def test_runbooks_name_only_alerts_that_exist(rendered: tuple[ObspackConfig, dict[str, str]]) -> None:
    cfg, pages = rendered
    known = {a.alert for a in all_alerts(cfg)}
    for slug, text in pages.items():
        unknown = set(ALERT_NAME.findall(text)) - known
        assert not unknown, f"{slug} names alerts that do not exist: {sorted(unknown)}"


def test_disabled_alerts_have_no_runbook_and_no_page_names_them(custom_pages: dict[str, str]) -> None:
    assert not CUSTOM.alerts.VLLMKVCacheFragmentationHigh.enabled
    assert "vllm-kv-cache-fragmentation-high" not in custom_pages
    assert "vllm-kv-cache-fragmentation-high" in render_runbooks(ObspackConfig())
    for slug, text in custom_pages.items():
        assert "vllm-kv-cache-fragmentation-high" not in text, f"{slug} links to the page of a disabled alert"
        assert "VLLMKVCacheFragmentationHigh" not in text, f"{slug} names a disabled alert"
    # the same sentence, with the alert on, links to it
    assert "[VLLMKVCacheFragmentationHigh](./vllm-kv-cache-fragmentation-high.md) cannot fire for this pod" in (
        render_runbooks(ObspackConfig())["obspack-exporter-target-down"]
    )


def test_linking_a_disabled_alert_stops_the_render_and_names_the_template() -> None:
    cfg = CUSTOM
    alerts = all_alerts(cfg)
    target = next(a for a in alerts if a.alert == "ObspackExporterTargetDown")
    page = runbooks._Page(cfg, target, {a.alert: a for a in alerts})
    assert not page.has_alert("VLLMKVCacheFragmentationHigh") and page.has_alert("VLLMTargetDown")
    with pytest.raises(RenderError) as e:
        page.link("VLLMKVCacheFragmentationHigh")
    assert str(e.value) == (
        "runbook obspack-exporter-target-down: links to VLLMKVCacheFragmentationHigh, which this config does not "
        'render: put the sentence under {% if has_alert("VLLMKVCacheFragmentationHigh") %} in '
        "templates/runbooks/obspack-exporter-target-down.md.j2"
    )


def test_with_slos_off_there_is_no_slo_runbook_dashboard_or_readme_row() -> None:
    cfg = ObspackConfig.model_validate({"slos": {"enabled": False}, "alerts": {"VLLMTargetDown": {"enabled": False}}})
    files = pack_files(build(cfg))
    slo_files = [f for f in files if "vllm-slos" in f or "error-budget" in f or "slo_test" in f]
    assert slo_files == []
    assert "runbooks/vllm-target-down.md" not in files
    readme = files["README.md"]
    assert "VLLMErrorBudgetBurn" not in readme and "VLLMTargetDown |" not in readme
    assert "| VLLMZeroThroughput |" in readme
    for name, text in files.items():
        if name.startswith("grafana/"):
            assert "/d/vllm-slos" not in text and "vLLM / SLOs" not in text, f"{name} links to the missing SLO page"


def test_a_missing_template_is_a_render_error(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = ObspackConfig()
    alerts = all_alerts(cfg)
    renamed = [dataclasses.replace(alerts[0], runbook="no-such-runbook"), *alerts[1:]]
    monkeypatch.setattr(runbooks, "all_alerts", lambda _cfg: renamed)
    with pytest.raises(
        RenderError, match=r"VLLMHostMemoryNearLimit.*templates/runbooks/no-such-runbook\.md\.j2"
    ):
        render_runbooks(cfg)


def test_linking_an_unknown_alert_is_a_render_error() -> None:
    cfg = ObspackConfig()
    alerts = all_alerts(cfg)
    page = runbooks._Page(cfg, alerts[0], {a.alert: a for a in alerts})
    with pytest.raises(RenderError, match="VLLMNoSuchAlert"):
        page.link("VLLMNoSuchAlert")


def test_runbook_urls_land_on_rendered_pages() -> None:
    """Default config: runbook_url is a path inside the pack, and the pack has that file."""
    cfg = ObspackConfig()
    files = pack_files(build(cfg))
    for a in all_alerts(cfg):
        url = dict(a.annotations)["runbook_url"]
        assert url == f"runbooks/{a.runbook}.md"
        assert url in files, url


def test_runbook_urls_use_the_configured_base(custom_pages: dict[str, str]) -> None:
    for a in all_alerts(CUSTOM):
        if not enabled(CUSTOM, a.alert):
            continue
        url = dict(a.annotations)["runbook_url"]
        assert url == f"https://runbooks.example.com/vllm/{a.runbook}.md"
        assert a.runbook in custom_pages


# ------------------------------------------------------------------------------------------------------
# Rendering: no template syntax left, placeholders from a known set, fences closed, sections present


def test_no_template_syntax_is_left(rendered: tuple[ObspackConfig, dict[str, str]]) -> None:
    _, pages = rendered
    for slug, text in pages.items():
        page = parse_markdown(text)
        for token in ("{{", "}}", "{%", "%}", "{#", "#}"):
            assert token not in page.prose, f"{slug}: {token!r} outside fenced code"
        for block in page.blocks:
            assert "{%" not in block.code and "{#" not in block.code, f"{slug}: Jinja syntax in a code block"
            for m in re.finditer(r"\{\{", block.code):
                rest = block.code[m.start() :]
                assert PROMETHEUS_TEMPLATE.match(rest), f"{slug}: unrendered template in code: {rest[:40]!r}"
        assert "Undefined" not in text


def test_placeholders_come_from_the_known_set(rendered: tuple[ObspackConfig, dict[str, str]]) -> None:
    _, pages = rendered
    for slug, text in pages.items():
        unknown = set(PLACEHOLDER.findall(text)) - KNOWN_PLACEHOLDERS
        assert not unknown, f"{slug}: unknown placeholders {sorted(unknown)}"


def _slug_of(name: str) -> str:
    return next(a.runbook for a in all_alerts(ObspackConfig()) if a.alert == name)


def test_every_runbook_opens_with_what_to_do_now_then_confirm_then_causes(default_pages: dict[str, str]) -> None:
    """The first safe mitigation first, then how to confirm, then the causes; the crash triage only on the
    pages of the alerts about a crash."""
    crash_pages = {_slug_of(name) for name in CRASH_ALERTS}
    for slug, text in default_pages.items():
        headings = parse_markdown(text).headings
        level2 = [h for h in headings if text.count(f"\n## {h}\n")]
        expected = [h for h in SECTIONS if h != CRASH_TRIAGE or slug in crash_pages]
        assert level2 == expected, f"{slug}: sections {level2}"
        now = _section(text, "Do this now")
        assert 200 < len(now) < 1500, f"{slug}: 'Do this now' should be a short, concrete first step ({len(now)} chars)"


def test_the_crash_triage_tells_host_ram_from_gpu_vram_on_crash_pages_only(default_pages: dict[str, str]) -> None:
    """Host RAM (OOMKilled, 137, kernel message) vs GPU VRAM (CUDA out of memory, reason Error), where the
    alert is about a crash; a latency alert (a full KV cache) does not open with crash triage."""
    crash_pages = {_slug_of(name) for name in CRASH_ALERTS}
    for slug, text in default_pages.items():
        if slug not in crash_pages:
            assert "Memory cgroup out of memory" not in text, f"{slug}: crash triage on a page not about a crash"
            continue
        triage = _section(text, CRASH_TRIAGE)
        for needle in ("OOMKilled", "137", "Memory cgroup out of memory", "CUDA out of memory", "reason=Error"):
            assert needle in triage, f"{slug}: the crash triage lacks {needle!r}"
    critical = default_pages["vllm-kv-cache-usage-critical"]
    assert "add replicas" in _section(critical, "Do this now").lower()
    assert critical.index("## Do this now") < critical.index("kubectl -n <namespace> scale") < critical.index("## Confirm")


def test_every_kubectl_logs_names_the_container(rendered: tuple[ObspackConfig, dict[str, str]]) -> None:
    """The exporter sidecar makes a pod's log ambiguous: `kubectl logs` always says which container."""
    _, pages = rendered
    for slug, text in pages.items():
        for block in parse_markdown(text).blocks:
            for line in block.code.splitlines():
                if re.search(r"\bkubectl\b.*\blogs\b", line):
                    assert re.search(r" (-c \S+|--all-containers --prefix)", line), f"{slug}: {line.strip()}"


def test_a_container_name_from_the_config_is_written_into_the_commands() -> None:
    """Where vllm_containers.name_regex is a plain name, pages whose alert has no container label say
    `-c vllm`; pages of alerts that carry the label keep `<container>`, the alert's own."""
    cfg = ObspackConfig.model_validate({"vllm_containers": {"name_regex": "vllm"}})
    pages = render_runbooks(cfg)
    assert "logs <pod> -c vllm --timestamps" in pages["vllm-zero-throughput"]
    assert next(a for a in all_alerts(cfg) if a.alert == "VLLMZeroThroughput").triage == (
        "kubectl -n {{ $labels.namespace }} logs {{ $labels.pod }} -c vllm --timestamps --tail=100"
    )
    assert next(a for a in all_alerts(ObspackConfig()) if a.alert == "VLLMZeroThroughput").triage == (
        "kubectl -n {{ $labels.namespace }} logs {{ $labels.pod }} --all-containers --prefix --timestamps --tail=100"
    )
    assert "<container>" not in pages["vllm-zero-throughput"]
    assert "logs <pod> -c <container> --previous" in pages["vllm-container-oom-killed"]
    regex = render_runbooks(ObspackConfig.model_validate({"vllm_containers": {"name_regex": "vllm-.*"}}))
    assert "logs <pod> -c <container> --timestamps" in regex["vllm-zero-throughput"]


def test_first_command_is_the_alert_triage_with_placeholders(
    rendered: tuple[ObspackConfig, dict[str, str]],
) -> None:
    cfg, pages = rendered
    for a in all_alerts(cfg):
        if not enabled(cfg, a.alert):
            continue
        assert a.triage.startswith("kubectl ") and "\n" not in a.triage, (
            f"{a.alert}: triage must be one command"
        )
        assert "&&" not in a.triage and ";" not in a.triage.replace("';'", ""), a.alert
        shown = runbooks.with_placeholders(cfg, a.triage)
        assert "{{" not in shown
        confirm = _section(pages[a.runbook], "Confirm")
        sh = [b.code for b in parse_markdown(confirm).blocks if b.lang == "sh"]
        assert sh and sh[0] == shown and confirm.startswith("\n**First command.**"), a.alert


def _note(text: str) -> tuple[set[str], set[str], str]:
    """(the placeholders the page calls the alert's labels, those it says how to find or choose, the rest
    of the page)."""
    head, note = text.split("**Placeholders.** ", 1)
    note, rest = note.split("\n## ", 1)
    labels_paragraph, _, others = note.partition("\n\n")
    labels = set(PLACEHOLDER.findall(labels_paragraph.split(" are the alert's labels")[0]))
    found = set(re.findall(r"^- `<([a-z-]+)>`: ", others, flags=re.MULTILINE))
    found |= set(re.findall(r"`<([a-z-]+)>` is ", others))
    return labels, found, head + rest


def test_every_placeholder_is_a_label_of_the_alert_or_found_on_the_page(
    rendered: tuple[ObspackConfig, dict[str, str]],
) -> None:
    cfg, pages = rendered
    for a in all_alerts(cfg):
        if not enabled(cfg, a.alert):
            continue
        labels, found, rest = _note(pages[a.runbook])
        unexplained = set(PLACEHOLDER.findall(rest)) - labels - found
        assert not unexplained, f"{a.runbook}: {sorted(unexplained)} are no label of {a.alert} and not explained"
        grouping = re.match(r"^\s*\w+ by \(([^)]*)\)", a.expr)  # alerts that aggregate name their labels
        if grouping:
            expected = {runbooks.with_placeholders(cfg, f"{{{{ $labels.{name.strip()} }}}}").strip("<>")
                        for name in grouping.group(1).split(",")}  # fmt: skip
            assert labels == expected, a.alert


def test_gpu_runbook_takes_the_node_from_the_alert_and_finds_the_container(default_pages: dict[str, str]) -> None:
    gpu = default_pages["vllm-gpu-memory-near-full"]
    labels, found, _ = _note(gpu)
    assert labels == {"cluster", "namespace", "pod", "gpu", "uuid", "node"}
    assert "`<node>` is `Hostname`" in gpu and "- `<node>`:" not in gpu
    assert "container" in found and (
        "- `<container>`: the pod's vLLM container (not a sidecar such as the obspack exporter): the `container` "
        'label of `namespace_pod_container:vllm_container:info{cluster="<cluster>", namespace="<namespace>", '
        'pod="<pod>"}`'
    ) in gpu
    # the other side: an alert without a node label says how to find the node
    down = default_pages["vllm-target-down"]
    assert "node" not in _note(down)[0] and "- `<node>`: the node the pod runs on: `kubectl" in down
    assert "Find the node with" in down


def _section(text: str, heading: str) -> str:
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_slo_runbook_starts_every_step_from_the_models_labels(default_pages: dict[str, str]) -> None:
    page = default_pages["vllm-error-budget-burn"]
    labels, found, _ = _note(page)
    assert labels == {"cluster", "namespace", "model", "slo"}
    assert {"pod", "container", "deployment"} <= found
    confirm = _section(page, "Confirm")
    pods = [b.code for b in parse_markdown(confirm).blocks if "kube_pod_container_status_restarts_total" in b.code]
    assert len(pods) == 1 and 'model_name="<model>"' in pods[0] and "<pod>" not in pods[0], "from the model to its pods"
    assert "- `<pod>`: a pod that serves the model: [Confirm](#confirm) lists them with their restarts" in page
    assert "`dashboard_url`" in confirm and "var-namespace=<namespace>&var-model=<model>" in confirm
    promql = [b.code for b in parse_markdown(confirm).blocks if b.lang == "promql"]
    # the window pairs' own expressions need no editing; the per-pod shares (about 30 edits) are the link now;
    # the alerts of the model's pods and the pods with their restarts take the alert's labels
    edits = sum(len(PLACEHOLDER.findall(code)) for code in promql)
    assert edits <= 10, f"{edits} placeholders to fill in Confirm's PromQL"
    assert not any("le=" in code for code in promql), "the per-pod latency shares are on the SLO page"
    assert any(code.startswith("ALERTS{") and 'model_name="<model>"' in code for code in promql)


def test_a_placeholder_nobody_can_fill_stops_the_render() -> None:
    cfg = ObspackConfig()
    gpu = next(a for a in all_alerts(cfg) if a.alert == "VLLMGPUMemoryNearFull")
    assert "- `<container>`:" in runbooks.placeholder_note(cfg, gpu, {"container", "node"})
    with pytest.raises(RenderError, match=r"<frobnicator> are not labels of VLLMGPUMemoryNearFull"):
        runbooks.placeholder_note(cfg, gpu, {"container", "frobnicator"})


def test_from_the_model_to_its_pods_on_real_promtool(tmp_path: Path) -> None:
    """The SLO page's queries, with its placeholders filled in, find the model's pods (restarts counted once
    across HA kube-state-metrics) and their firing alerts, and nothing of another model."""
    cfg = ObspackConfig()
    alerts = all_alerts(cfg)
    burn = next(a for a in alerts if a.alert == "VLLMErrorBudgetBurn")
    page = runbooks._Page(cfg, burn, {a.alert: a for a in alerts})
    values = {"cluster": "c1", "namespace": "llm", "model": "m-a"}

    def filled(expr: str) -> str:
        return PLACEHOLDER.sub(lambda m: values[m.group(1)], expr)

    running = "namespace_pod_model:vllm_num_requests_running:sum"
    series = [
        {"series": f'{running}{{cluster="c1", namespace="llm", pod="{pod}", model_name="{model}"}}', "values": "1x60"}
        for pod, model in (("a-0", "m-a"), ("a-1", "m-a"), ("b-0", "m-b"))
    ]
    restarts = "kube_pod_container_status_restarts_total"
    for instance in ("ksm-0", "ksm-1"):  # HA kube-state-metrics: every series twice
        for pod, values_ in (("a-0", "0x30 1x30"), ("a-1", "0x60"), ("b-0", "0x30 3x30")):
            labels = f'cluster="c1", namespace="llm", pod="{pod}", container="vllm", instance="{instance}"'
            series.append({"series": f"{restarts}{{{labels}}}", "values": values_})
    firing = 'ALERTS{alertname="VLLMGPUMemoryNearFull", alertstate="firing", cluster="c1", namespace="llm", pod="%s"}'
    series += [{"series": firing % pod, "values": "1x60"} for pod in ("a-0", "b-0")]
    test = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": filled(page.model_pods()),
                        "eval_time": "60m",
                        "exp_samples": [
                            {"labels": '{cluster="c1", namespace="llm", pod="a-0"}', "value": 1},
                            {"labels": '{cluster="c1", namespace="llm", pod="a-1"}', "value": 0},
                        ],
                    },
                    {
                        "expr": filled(page.model_alerts()),
                        "eval_time": "60m",
                        "exp_samples": [{"labels": firing % "a-0", "value": 1}],
                    },
                ],
            }
        ],
    }
    (tmp_path / "model_test.yaml").write_text(yaml.safe_dump(test, sort_keys=False), encoding="utf-8")
    done = subprocess.run(
        [require_tool("promtool"), "test", "rules", "model_test.yaml"], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_rendering_is_deterministic() -> None:
    assert render_runbooks(CUSTOM) == render_runbooks(CUSTOM)


# ------------------------------------------------------------------------------------------------------
# PromQL: every snippet parses; the alert's own expression is on its page


def test_promql_snippets_parse(rendered: tuple[ObspackConfig, dict[str, str]]) -> None:
    _, pages = rendered
    for slug, text in pages.items():
        blocks = [b.code for b in parse_markdown(text).blocks if b.lang == "promql"]
        assert len(blocks) >= 3, f"{slug}: expected the alert's expression and confirm queries"
        for code in blocks:
            try:
                promql_parser.parse(fill_placeholders(code))
            except ValueError as e:
                pytest.fail(f"{slug}: PromQL does not parse ({e}):\n{code}")


def test_each_runbook_shows_its_alert_expression(rendered: tuple[ObspackConfig, dict[str, str]]) -> None:
    cfg, pages = rendered
    for a in all_alerts(cfg):
        if not enabled(cfg, a.alert):
            continue
        blocks = [b.code for b in parse_markdown(pages[a.runbook]).blocks if b.lang == "promql"]
        assert tidy(a.expr) in blocks, a.alert


def test_queries_use_the_configured_cluster_label_and_selectors(custom_pages: dict[str, str]) -> None:
    for slug, text in custom_pages.items():
        promql = "\n".join(b.code for b in parse_markdown(text).blocks if b.lang == "promql")
        assert 'k8s_cluster="<cluster>"' in promql, slug
        assert not re.search(r"\bcluster\b", PLACEHOLDER.sub("", promql)), (
            f"{slug}: the default cluster label"
        )
    host = custom_pages["vllm-host-memory-near-limit"]
    assert (
        'container_memory_rss{job="kubelet", metrics_path="/metrics/cadvisor", k8s_cluster="<cluster>"'
        in host
    )
    assert (
        'vllm:cache_config_info{job="vllm-engine", k8s_cluster="<cluster>"'
        in custom_pages["vllm-kv-cache-usage-high"]
    )
    assert (
        'obspack_cuda_allocator_fragmentation_ratio{job="obspack-exporter"'
        in custom_pages["vllm-cuda-allocator-fragmentation-high"]
    )
    zero = custom_pages["vllm-zero-throughput"]
    assert 'max by (k8s_cluster, instance, gpu, GPU_I_ID) (DCGM_FI_DEV_XID_ERRORS{job="dcgm-exporter"})' in zero
    assert 'namespace_pod_model_gpu:vllm_gpu:info{k8s_cluster="<cluster>", namespace="<namespace>", pod="<pod>"}' in zero


@pytest.mark.parametrize(
    ("slug", "needles"),
    [
        ("vllm-host-memory-near-limit", ["above 85% of its memory limit", "ratio_limit > 0.85"]),
        ("vllm-container-oom-killed", ["within the last 30m", "[30m]", "below 85% of the limit"]),
        ("vllm-gpu-memory-near-full", ["more than 95% of a GPU's framebuffer", "for 10m", ") > 0.95"]),
        ("vllm-kv-cache-usage-high", ["above 80% for 10m", ") > 0.8", "<= 0.8", "Above 98%"]),
        ("vllm-kv-cache-usage-critical", ["above 98%", ") > 0.98", "<= 0.98"]),
        (
            "vllm-request-queue-backlog",
            ["at least 10 requests wait", "more than 2 times", "below 10 at peak"],
        ),
        ("vllm-request-preemptions", ["more than 0.05 preemptions per second", "rate5m > 0.05"]),
        ("vllm-prefix-cache-hit-rate-low", ["fewer than 20%", "last 1h", "_hits_total{", "[1h])", "< 0.2"]),
        ("vllm-kv-cache-usage-critical", ["https://grafana.example.com/d/obspack-vllm-pod-memory-planes/"]),
    ],
)
def test_thresholds_and_windows_come_from_the_config(
    custom_pages: dict[str, str], slug: str, needles: list[str]
) -> None:
    for needle in needles:
        assert needle in custom_pages[slug], f"{slug} lacks {needle!r}"


def test_default_thresholds_show_up(default_pages: dict[str, str]) -> None:
    assert "above 90% of its memory limit for 5m" in default_pages["vllm-host-memory-near-limit"]
    assert "any preemption at all" in default_pages["vllm-request-preemptions"]
    assert "(fires at once)" in default_pages["vllm-container-oom-killed"]
    assert "<grafana-url>/d/obspack-vllm-pod-memory-planes/" in default_pages["vllm-zero-throughput"]


# ------------------------------------------------------------------------------------------------------
# Links: relative links go to sibling runbooks (and their headings) that exist


def test_links_resolve(rendered: tuple[ObspackConfig, dict[str, str]]) -> None:
    _, pages = rendered
    parsed = {slug: parse_markdown(text) for slug, text in pages.items()}
    page_anchors = {slug: anchors(p.headings) for slug, p in parsed.items()}
    for slug, page in parsed.items():
        for target in LINK.findall(page.prose):
            if target.startswith("https://"):
                continue
            path, _, fragment = target.partition("#")
            if path:
                m = re.fullmatch(r"\./([a-z0-9-]+)\.md", path)
                assert m, f"{slug}: relative link {target!r} is not a sibling runbook"
                other = m.group(1)
                assert other in pages, f"{slug}: link to missing runbook {target!r}"
                assert other != slug, f"{slug}: links to itself by file name"
            else:
                other = slug
            if fragment:
                assert fragment in page_anchors[other], f"{slug}: {target!r} has no such heading"


def test_related_alerts_are_linked(default_pages: dict[str, str]) -> None:
    for slug, text in default_pages.items():
        related = text.split("\n## Related\n", 1)[1]
        siblings = re.findall(r"^- \[(\w+)\]\(\./([a-z0-9-]+)\.md\)", related, flags=re.MULTILINE)
        assert len(siblings) >= 3, f"{slug}: too few related alerts"
        for name, target in siblings:
            assert target == next(a.runbook for a in all_alerts(ObspackConfig()) if a.alert == name)


def test_markdown_parser_catches_problems() -> None:
    """The helpers above must fail on what they are meant to catch."""
    with pytest.raises(AssertionError):
        parse_markdown("text\n```sh\nnever closed\n")
    page = parse_markdown('# A: b, c?\n\n```promql\n  up{pod="<pod>"}\n```\n{{ x }}\n')
    assert page.blocks == (Block("promql", '  up{pod="<pod>"}'),)
    assert "{{ x }}" in page.prose
    assert anchors(page.headings) == {"a-b-c"}
    with pytest.raises(ValueError):
        promql_parser.parse(fill_placeholders('rate(up{pod="<pod>"}[5m]'))


def _dumped_strings(value: object) -> set[str]:
    """Every string in a `model_dump(mode="json")`: mapping keys and values, list items."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return {t for item in value.items() for part in item for t in _dumped_strings(part)}
    if isinstance(value, list):
        return {t for item in value for t in _dumped_strings(item)}
    return set()


@pytest.mark.parametrize("name", ["default", "custom", "settings with <"])
def test_the_settings_texts_are_those_of_the_dumped_config(name: str) -> None:
    """The page's settings are read off the model rather than dumped (which would build the serialisers):
    the same strings, less the field names."""
    cfg = CONFIGS.get(name) or ObspackConfig.model_validate({
        "selectors": {"vllm": 'namespace!="<none>"', "cadvisor": 'pod=~"(?P<pod>.*)"'},
        "grafana": {"url": "https://grafana/<team>", "tags": ["a<b"]},
        "common_labels": {"team": "<ml>"},
        "alerts": {"VLLMTargetDown": {"labels": {"owner": "<x>"}, "severity": "info"}},
    })  # fmt: skip
    names = {alias for field in _field_names(cfg) for alias in field}
    dumped = _dumped_strings(cfg.model_dump(mode="json", by_alias=True)) - names
    assert set(runbooks._texts(cfg)) - names == dumped
    assert name != "settings with <" or {t for t in dumped if "<" in t} == {
        'namespace!="<none>"', 'pod=~"(?P<pod>.*)"', "https://grafana/<team>", "a<b", "<ml>", "<x>"}


def _field_names(model: object) -> list[tuple[str, ...]]:
    """Every field's name and alias, in the model and the models it holds."""
    from pydantic import BaseModel

    if isinstance(model, BaseModel):
        own = [(n, f.alias or n) for n, f in type(model).model_fields.items()]
        return own + [x for _, v in model for x in _field_names(v)]
    if isinstance(model, dict | list | tuple):
        return [x for v in (model.values() if isinstance(model, dict) else model) for x in _field_names(v)]
    return []
