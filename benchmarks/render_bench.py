"""Cold `obspack render` wall time of the default pack: median of several fresh processes.

Run: python benchmarks/render_bench.py [runs]
Prints the median and spread, and where the time goes (imports vs build vs write) in one warm process.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cold_runs(runs: int) -> list[float]:
    command = [shutil.which("obspack") or sys.executable, *([] if shutil.which("obspack") else ["-m", "obspack"])]
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            subprocess.run([*command, "render", "--out", str(Path(tmp) / "pack")], check=True, capture_output=True)
            times.append(time.perf_counter() - start)
    return times


def phases() -> dict[str, float]:
    t0 = time.perf_counter()
    from obspack.config import ObspackConfig
    from obspack.pack import build
    from obspack.render import write
    from obspack.render.files import pack_files

    t1 = time.perf_counter()
    pack = build(ObspackConfig())
    t2 = time.perf_counter()
    files = pack_files(pack)
    t3 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        write.write(Path(tmp), files)
    t4 = time.perf_counter()
    return {"imports": t1 - t0, "build (rules, dashboards, runbooks, tests)": t2 - t1, "serialise": t3 - t2, "write": t4 - t3}


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    times = cold_runs(runs)
    print(f"cold obspack render, {runs} runs: median {statistics.median(times) * 1000:.0f} ms, "
          f"min {min(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms")
    for name, seconds in phases().items():
        print(f"  {name:45s} {seconds * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
