"""The autoscaling signal's recording rules with per-model targets: one rule per record (promtool's linter
refuses two rules of one name and labels), and each model divided by the targets of the first entry that
matches it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from obspack import conventions as c
from obspack.config import ObspackConfig
from obspack.rules.recording import autoscaling
from tests.support.tools import promtool_record_test, require_tool

CONFIG = ObspackConfig.model_validate(
    {
        "autoscaling": {
            "targets": {"queue": 4, "kv_cache": 0.8},
            # the second entry repeats the defaults: the rendering that promtool's linter refused
            "models": [{"model_regex": "qwen.*", "queue": 2, "kv_cache": 0.5}, {"model_regex": "llama.*"}],
        }
    }
)


def test_per_model_targets_are_one_rule_per_record_and_lint_clean(tmp_path: Path) -> None:
    group = autoscaling.group(CONFIG)
    records = [r.record for r in group.rules]
    assert records == [c.SATURATION_PART, c.SATURATION]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": [group.to_dict()]}, sort_keys=False))
    done = subprocess.run([require_tool("promtool"), "check", "rules", "--lint-fatal", "rules.yaml"],
                          capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_each_model_reads_its_own_entrys_targets(tmp_path: Path) -> None:
    series = []
    for model in ("qwen-7b", "llama-8b", "mistral-7b"):  # the first entry, the second, the defaults
        where = f'cluster="prod", namespace="llm", pod="{model}-0", model_name="{model}", engine="0"'
        series += [
            {"series": f"vllm:num_requests_waiting{{{where}}}", "values": "2x5"},
            {"series": f"vllm:num_requests_running{{{where}}}", "values": "1x5"},
            {"series": f"vllm:kv_cache_usage_perc{{{where}}}", "values": "0.4x5"},
        ]

    def signal(model: str, name: str, value: float) -> dict[str, object]:
        return {"labels": f'{c.SATURATION_PART}{{cluster="prod", namespace="llm", model_name="{model}", signal="{name}"}}',
                "value": value}  # fmt: skip

    check = {
        "expr": c.SATURATION_PART,
        "eval_time": "4m",
        "exp_samples": [
            signal("qwen-7b", "queue", 1.0),  # 2 waiting / 1 engine / 2
            signal("qwen-7b", "kv_cache", 0.8),  # 0.4 / 0.5
            signal("llama-8b", "queue", 0.5),  # the second entry: the defaults, 4 and 0.8
            signal("llama-8b", "kv_cache", 0.5),
            signal("mistral-7b", "queue", 0.5),  # no entry: the defaults
            signal("mistral-7b", "kv_cache", 0.5),
        ],
    }
    promtool_record_test(tmp_path, [r.to_dict() for r in autoscaling.group(CONFIG).rules], series, [check])
