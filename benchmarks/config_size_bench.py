"""`obspack render` wall time on configs of a few MB, one shape per line: it must stay about a second.

Run: python benchmarks/config_size_bench.py [megabytes]
Each shape is a fresh `obspack render` process; the line says its exit code (0 rendered, 2 refused),
the seconds it took and the first line of the error. Shapes: one huge value in each kind of setting
(URL, label value, selector, regex, folder), many keys, many list items, comments only, deep aliases.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def shapes(size: int) -> dict[str, str]:
    big = "a" * size
    aliases = "".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 30))
    return {
        "runbook_base_url": f'runbook_base_url: "https://{big}"\n',
        "common label value": f'common_labels: {{team: "{big}"}}\n',
        "selector": f'selectors: {{vllm: \'job="{big}"\'}}\n',
        "regex": f'vllm_containers: {{image_regex: "{big}"}}\n',
        "grafana folder": f'grafana: {{folder: "{big}"}}\n',
        "many unknown keys": "".join(f"key{i}: 1\n" for i in range(size // 10)),
        "many tags": "grafana:\n  tags:\n" + "".join(f"  - t{i}\n" for i in range(size // 10)),
        "many labels": "common_labels:\n" + "".join(f"  l{i}: v\n" for i in range(size // 10)),
        "comments only (valid)": f"# {big}\ncluster_label: k8s_cluster\n",
        "nested aliases": "l0: &l0 [x]\n" + aliases,
    }


def main() -> None:
    megabytes = float(sys.argv[1]) if len(sys.argv) > 1 else 3
    command = [shutil.which("obspack") or sys.executable, *([] if shutil.which("obspack") else ["-m", "obspack"])]
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in shapes(int(megabytes * 2**20)).items():
            config = Path(tmp) / "obspack.yaml"
            config.write_text(text, encoding="utf-8")
            start = time.perf_counter()
            done = subprocess.run(
                [*command, "render", "--config", str(config), "--out", str(Path(tmp) / "pack")],
                capture_output=True,
                text=True,
            )
            seconds = time.perf_counter() - start
            first = (done.stderr or done.stdout).splitlines()[0][:110] if (done.stderr or done.stdout) else ""
            size = len(text.encode()) / 2**20
            print(f"{name:24} {size:5.1f} MB  exit {done.returncode}  {seconds:6.2f} s  {first}")


if __name__ == "__main__":
    main()
