"""Cold `obspack render` of the default pack: wall and CPU time of fresh processes, medians.

Run: python benchmarks/render_bench.py [runs] [--against DIR]

Each run is a new `python -m obspack render --out TMP` process. An installed wheel has its bytecode (pip
compiles it), so the runs get a bytecode folder of their own (PYTHONPYCACHEPREFIX, warmed by one run first)
even where the environment says PYTHONDONTWRITEBYTECODE; the same runs without bytecode are shown too.
`--against DIR` runs another checkout (a `git archive` of an older commit) in turns with this one, under the
same load: on a shared machine only such side-by-side figures compare. Then where the time goes, in one more
cold process (CPU time per phase).

`--warm N` measures the render's own work without the interpreter and the imports: in one process per tree,
the build and the serialising of the defaults N times (a new config object each time, so nothing is reused),
CPU medians, five processes per tree in turns.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PHASES = """
import time
t0 = time.process_time()
from obspack.cli import app
from obspack.config import load_config
from obspack.pack import build
from obspack.render import write
from obspack.render.files import pack_files
t1 = time.process_time()
pack = build(load_config(None))  # the built-in defaults, as `obspack render` without a config reads them
t2 = time.process_time()
files = pack_files(pack)
t3 = time.process_time()
import tempfile
from pathlib import Path
with tempfile.TemporaryDirectory() as tmp:
    write.write(Path(tmp) / "pack", files)
t4 = time.process_time()
print(f"{t1 - t0} {t2 - t1} {t3 - t2} {t4 - t3}")
"""


WARM = """
import gc, statistics, sys, time
from obspack.config import ObspackConfig
from obspack.pack import build
from obspack.render.files import pack_files
gc.disable()  # as render runs
pack_files(build(ObspackConfig()))  # first use: lazy imports, compiled templates
builds, writes = [], []
for _ in range(int(sys.argv[1])):
    cfg = ObspackConfig()
    t0 = time.process_time(); pack = build(cfg); t1 = time.process_time(); pack_files(pack)
    builds.append(t1 - t0); writes.append(time.process_time() - t1)
print(statistics.median(builds), statistics.median(writes))
"""


def warm_runs(trees: list[Path], repeats: int) -> None:
    out: dict[Path, list[tuple[float, float]]] = {tree: [] for tree in trees}
    bytecode = {tree: Path(tempfile.mkdtemp(prefix="obspack-bytecode-")) for tree in trees}
    for index in range(5):
        for tree in trees if index % 2 == 0 else trees[::-1]:
            build_s, serialise_s = map(float, _run(tree, bytecode[tree], ["-c", WARM, str(repeats)])[2].split())
            out[tree].append((build_s, serialise_s))
    for tree, rows in out.items():
        print(f"warm, {repeats} renders per process, CPU medians of 5 processes, {tree}: "
              f"build {statistics.median(b for b, _ in rows) * 1000:.0f} ms "
              f"({min(b for b, _ in rows) * 1000:.0f}-{max(b for b, _ in rows) * 1000:.0f}), "
              f"serialise {statistics.median(s for _, s in rows) * 1000:.0f} ms "
              f"({min(s for _, s in rows) * 1000:.0f}-{max(s for _, s in rows) * 1000:.0f})")  # fmt: skip


def _env(tree: Path, bytecode: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env["PYTHONPATH"] = str(tree)
    if bytecode is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env["PYTHONPYCACHEPREFIX"] = str(bytecode)
    return env


def _run(tree: Path, bytecode: Path | None, args: list[str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, stdout) of one fresh process run from an empty folder."""
    with tempfile.TemporaryDirectory() as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = os.times().elapsed
        done = subprocess.run(
            [sys.executable, *[a.replace("{tmp}", tmp) for a in args]],
            env=_env(tree, bytecode), cwd=tmp, capture_output=True, text=True, check=True,
        )  # fmt: skip
        wall = os.times().elapsed - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, done.stdout


def cold_runs(trees: list[Path], runs: int, bytecode: bool) -> dict[Path, tuple[list[float], list[float]]]:
    render = ["-m", "obspack", "render", "--out", "{tmp}/pack"]
    folders = {tree: Path(tempfile.mkdtemp(prefix="obspack-bytecode-")) if bytecode else None for tree in trees}
    for tree in trees:
        _run(tree, folders[tree], render)  # warm: writes the bytecode
    out: dict[Path, tuple[list[float], list[float]]] = {tree: ([], []) for tree in trees}
    for index in range(runs):
        for tree in trees if index % 2 == 0 else trees[::-1]:  # in turns, under the same load
            wall, cpu, _ = _run(tree, folders[tree], render)
            out[tree][0].append(wall)
            out[tree][1].append(cpu)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=9)
    parser.add_argument("--against", type=Path, help="another checkout to run in turns with this one")
    parser.add_argument("--warm", type=int, metavar="N", help="only the build and serialising, N times per process")
    args = parser.parse_args()
    trees = [ROOT, *([args.against.resolve()] if args.against else [])]
    print(f"python {sys.version.split()[0]}; load average {os.getloadavg()[0]:.1f} at the start")
    if args.warm:
        warm_runs(trees, args.warm)
        return
    for bytecode in (True, False):
        label = "with bytecode (as installed)" if bytecode else "without bytecode"
        for tree, (walls, cpus) in cold_runs(trees, args.runs, bytecode).items():
            print(
                f"cold obspack render, {label}, {tree}: wall median {statistics.median(walls) * 1000:.0f} ms "
                f"(min {min(walls) * 1000:.0f}), CPU median {statistics.median(cpus) * 1000:.0f} ms "
                f"(min {min(cpus) * 1000:.0f})"
            )
    names = ("imports", "build (rules, dashboards, runbooks, tests)", "serialise", "write")
    for tree in trees:
        bytecode = Path(tempfile.mkdtemp(prefix="obspack-bytecode-"))
        _run(tree, bytecode, ["-c", PHASES])
        phases = [[float(x) for x in _run(tree, bytecode, ["-c", PHASES])[2].split()] for _ in range(3)]
        print(f"CPU per phase, cold process with bytecode, median of 3, {tree}:")
        for i, name in enumerate(names):
            print(f"  {name:45s} {statistics.median(p[i] for p in phases) * 1000:7.0f} ms")


if __name__ == "__main__":
    main()
