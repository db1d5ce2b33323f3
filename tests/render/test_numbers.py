"""Numbers and values as a person reads them: no float noise (0.7000000000000001), no Python repr
(`ModelSLOs(model_regex=...)`, `None`), percentages with every digit of the setting, in every file of the
pack and of the chart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from obspack import numbers
from obspack.config import load_config
from obspack.pack import build
from obspack.pack.chart import build_chart
from obspack.render.files import pack_files
from obspack.render.helm import chart_files

NOISE = re.compile(r"\d\.\d*?(?:0{6,}|9{6,})\d+")
REPR = re.compile(r"\b[A-Z]\w+\(\w+=|=None\b|\bSeverity\.|<[\w.]+ object at|PosixPath\(")
RATIOS = ("VLLMHostMemoryNearLimit", "VLLMGPUMemoryNearFull", "VLLMKVCacheFragmentationHigh",
          "VLLMCUDAAllocatorFragmentationHigh", "VLLMSpecDecodeAcceptanceLow", "VLLMAdmissionRejections")  # fmt: skip
CONFIGS = {
    # 0.8 - 0.1 is 0.7000000000000001 in binary floating point; 0.93 - 0.1 is 0.8300000000000001
    "thresholds": {
        "alerts": {
            **{name: {"ratio": 0.8} for name in RATIOS},
            "VLLMGPUMemoryNearFull": {"ratio": 0.93},
            "VLLMKVCacheUsageHigh": {"ratio": 0.855},
            "VLLMKVCacheUsageCritical": {"ratio": 0.935},
            "VLLMPrefixCacheHitRateLow": {"ratio": 0.57},
        }
    },
    # SLO objectives whose error budgets (1 - 0.995) and burn rates are computed
    "slos": {
        "slos": {
            "time_to_first_token": {"objective": 0.995},
            "availability": {"objective": 0.9},
            "inter_token_latency": {"objective": 0.97},
            "models": [
                {"model_regex": "meta-llama/Llama-3.1-8B-Instruct", "min_requests": 30,
                 "time_to_first_token": {"threshold": 5.0, "objective": 0.95}},
            ],
        }
    },
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_no_float_noise_and_no_repr_in_any_file(tmp_path: Path, name: str) -> None:
    path = tmp_path / "obspack.yaml"
    path.write_text(yaml.safe_dump(CONFIGS[name]), encoding="utf-8")
    cfg = load_config(path)
    files = {**pack_files(build(cfg)), **{f"chart/{rel}": text for rel, text in chart_files(build_chart(cfg)).items()}}
    for rel, text in files.items():
        assert not NOISE.findall(text), f"{rel}: float noise {sorted(set(NOISE.findall(text)))[:5]}"
        assert not REPR.findall(text), f"{rel}: Python repr {sorted(set(REPR.findall(text)))[:5]}"
    if name == "thresholds":
        assert "Orange from 85.5%, red from 93.5%" in files["grafana/vllm-pod-memory-planes.json"]
        assert '"value": 0.7' in files["grafana/vllm-pod-memory-planes.json"]  # orange 0.1 below the red 0.8
    else:
        values = files["chart/values.yaml"]
        assert (
            "models: `[{model_regex: meta-llama/Llama-3.1-8B-Instruct, time_to_first_token: {objective: 0.95, "
            "threshold: 5}, min_requests: 30}]`"
        ) in " ".join(line.lstrip("# ") for line in values.splitlines() if line.startswith("#"))


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.8 - 0.1, "0.7"), (24.00000000000002, "24"), (47999.99999999999, "48000"), (0.855, "0.855"),
     (1.5e-05, "1.5e-05"), (0.0, "0"), (3.0, "3"), (0.2239920358387255, "0.223992035839")],
)  # fmt: skip
def test_numbers_are_written_without_noise(value: float, text: str) -> None:
    assert numbers.text(value) == text


def test_percentages_keep_every_digit_of_the_setting() -> None:
    assert [numbers.percent(r) for r in (0.9, 0.855, 0.999, 0.001, 0.3)] == ["90%", "85.5%", "99.9%", "0.1%", "30%"]
