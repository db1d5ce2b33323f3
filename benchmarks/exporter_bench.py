"""Benchmark of the obspack exporter. Prints numbers; asserts nothing. Not part of the test suite.

    python benchmarks/exporter_bench.py [--repeat 30] [--scrapes 200] [--against DIR] [--gzip] [--scrape-only]

1. The derive path (check, parse the needed families, derive) against
   prometheus_client.parser.text_string_to_metric_families on the same synthetic vLLM payloads of
   about 64 KiB, 1 MiB and 8 MiB.
2. End to end: a loopback target process serving the 1 MiB payload, the exporter as its own
   process (`python -m obspack.exporter`), and this script scraping the exporter's /metrics:
   latency percentiles, then the exporter's RSS (also after 8 MiB scrapes).
3. With `--against DIR` (another checkout, e.g. a `git archive` of an older commit): both exporters on one
   target, scraped in turns.

Payloads are generated here: after one cache_config_info, each "model" adds the gauges and counters
of one vLLM V1 engine (with *_created series) and its fourteen histograms with vLLM 0.33's buckets
(obspack/catalogue/vllm.py), the way payloads grow with models, LoRA adapters and buckets.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from obspack.catalogue import vllm
from obspack.demo.processes import Server, start_server
from obspack.exporter import derive
from obspack.exporter.parse import check_payload, parse_needed

# The histograms of one vLLM V1 engine and their bounds (the catalogue's; token counts at max_model_len 8192).
HISTOGRAMS = {
    name: vllm.V1.bounds(name)
    for name in (vllm.TTFT, vllm.ITL, vllm.REQUEST_TPOT, vllm.E2E, vllm.QUEUE, vllm.INFERENCE, vllm.PREFILL,
                 vllm.DECODE, vllm.ITERATION_TOKENS)
} | {
    name: vllm.V1.token_counts
    for name in (vllm.PROMPT_TOKENS, vllm.GENERATION_TOKENS, vllm.MAX_GENERATION_TOKENS, vllm.PARAMS_MAX_TOKENS,
                 vllm.PREFILL_KV_COMPUTED_TOKENS)
}  # fmt: skip
COUNTERS = (
    "prompt_tokens",
    "generation_tokens",
    "num_preemptions",
    "prefix_cache_queries",
    "prefix_cache_hits",
)


def family_samples(index: int) -> dict[tuple[str, str], list[str]]:
    """{(family, type): sample lines} of one model's engine."""
    labels = f'engine="0",model_name="org/model-{index:04d}"'
    families: dict[tuple[str, str], list[str]] = {
        ("vllm:num_requests_running", "gauge"): [f"vllm:num_requests_running{{{labels}}} {index % 32}.0"],
        ("vllm:num_requests_waiting", "gauge"): [f"vllm:num_requests_waiting{{{labels}}} 1.0"],
        ("vllm:kv_cache_usage_perc", "gauge"): [
            f"vllm:kv_cache_usage_perc{{{labels}}} 0.{(index * 37) % 90 + 5:02d}"
        ],
    }
    for i, name in enumerate(COUNTERS):
        families[(f"vllm:{name}", "counter")] = [f"vllm:{name}_total{{{labels}}} {1.0e6 * (i + 1) + index}"]
        families[(f"vllm:{name}_created", "gauge")] = [f"vllm:{name}_created{{{labels}}} 1.7940528276134e+09"]
    for name, bounds in HISTOGRAMS.items():
        count = 1000 + index
        lines = [
            f'{name}_bucket{{{labels},le="{le}"}} {count * (n + 1) // len(bounds)}.0'
            for n, le in enumerate(bounds)
        ]
        lines.append(f'{name}_bucket{{{labels},le="+Inf"}} {count}.0')
        lines.append(f"{name}_count{{{labels}}} {count}.0")
        lines.append(f"{name}_sum{{{labels}}} {count * 0.37:.3f}")
        families[(name, "histogram")] = lines
        families[(f"{name}_created", "gauge")] = [f"{name}_created{{{labels}}} 1.7940528276134e+09"]
    return families


def make_payload(target_bytes: int) -> bytes:
    """A payload of about ``target_bytes``: models are added until the size is reached, and each
    family's samples are grouped under one HELP/TYPE header, as prometheus_client writes them."""
    per_model = sum(len(line) + 1 for lines in family_samples(0).values() for line in lines)
    models = max(1, round(target_bytes / per_model))
    grouped: dict[tuple[str, str], list[str]] = {}
    for index in range(models):
        for family, lines in family_samples(index).items():
            grouped.setdefault(family, []).extend(lines)
    parts = [
        "# HELP process_resident_memory_bytes Resident memory size in bytes.",
        "# TYPE process_resident_memory_bytes gauge",
        "process_resident_memory_bytes 2.1e+09",
        "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig",
        "# TYPE vllm:cache_config_info gauge",
        'vllm:cache_config_info{block_size="16",cache_dtype="auto",engine="0",num_gpu_blocks="9150"} 1.0',
    ]
    for (name, kind), lines in grouped.items():
        shown = f"{name}_total" if kind == "counter" else name  # the text format names counters with _total
        parts += [f"# HELP {shown} {name.split(':')[1].replace('_', ' ')}.", f"# TYPE {shown} {kind}", *lines]
    return ("\n".join(parts) + "\n").encode()


def derive_path(body: bytes) -> int:
    """What the exporter does with one target's body; returns the number of derived samples."""
    check_payload(body)
    inputs = derive.engine_inputs(parse_needed(body).families)
    return sum(len(derive.derive_engine(key, engine, None)) for key, engine in inputs.items())


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench_parse(repeat: int) -> None:
    print("derive path vs prometheus_client text_string_to_metric_families (median of", repeat, "runs)")
    print(f"{'payload':>10} {'models':>7} {'derive':>10} {'parser':>10} {'speed-up':>9}")
    for label, size in (("64 KiB", 64 << 10), ("1 MiB", 1 << 20), ("8 MiB", 8 << 20)):
        body = make_payload(size)
        text = body.decode()
        models = body.count(b"\nvllm:num_requests_running{")
        ours = median_seconds(lambda b=body: derive_path(b), repeat)
        runs = max(3, repeat // 10) if size > (1 << 20) else repeat
        theirs = median_seconds(lambda t=text: list(text_string_to_metric_families(t)), runs)
        print(f"{label:>10} {models:>7} {ours * 1e3:>8.2f}ms {theirs * 1e3:>8.1f}ms {theirs / ours:>8.0f}x")


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


# What a scrape asks for: nothing in particular (plain text, no gzip), or what Prometheus asks for (--gzip).
HEADERS: dict[str, str] = {}
PROMETHEUS_HEADERS = {
    "Accept": "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,"
    "text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
    "Accept-Encoding": "gzip",
}


def _scrape_latencies(url: str, scrapes: int) -> list[float]:
    latencies = []
    for _ in range(scrapes):
        started = time.perf_counter()
        with urllib.request.urlopen(urllib.request.Request(url, headers=HEADERS), timeout=10) as response:
            body = response.read()
            if response.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
        latencies.append(time.perf_counter() - started)
    assert b"obspack_target_up" in body and b"} 1.0" in body
    return latencies


def bench_scrape(scrapes: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as cleanup:
        root = Path(tmp)
        for size, folder in ((1 << 20, "1m"), (8 << 20, "8m")):
            (root / folder).mkdir()
            (root / folder / "metrics").write_bytes(make_payload(size))
        target = start_server(
            "target", lambda a: [sys.executable, "-m", "http.server", a.split(":")[1], "--bind", "127.0.0.1",
                                 "--directory", tmp], "/1m/metrics", root, cleanup,
        )  # fmt: skip

        def exporter(folder: str) -> Server:
            """`python -m obspack.exporter` scraping the payload in `folder`, on a free port."""
            url = f"{target.url}/{folder}/metrics"
            argv = [sys.executable, "-m", "obspack.exporter", "--target", url, "--listen"]
            return start_server(f"exporter-{folder}", lambda a: [*argv, a], "/healthz", root, cleanup)

        server = exporter("1m")
        idle_rss = _rss_kib(server.process.pid)
        cpu = [server.cpu_seconds(), target.cpu_seconds()]
        latencies = sorted(_scrape_latencies(f"{server.url}/metrics", scrapes))
        cpu = [(s.cpu_seconds() - c) / scrapes * 1e3 for s, c in zip((server, target), cpu)]
        rss_1m = _rss_kib(server.process.pid)
        server.stop()

        def pct(p: float) -> float:
            return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1e3

        print(f"\nexporter /metrics with a 1 MiB loopback target, {scrapes} sequential scrapes")
        print(
            f"  p50 {pct(0.5):.2f} ms   p90 {pct(0.9):.2f} ms   p99 {pct(0.99):.2f} ms   max {latencies[-1] * 1e3:.2f} ms"
        )
        print(f"  CPU per scrape: exporter {cpu[0]:.2f} ms, target {cpu[1]:.2f} ms")
        print(f"  exporter RSS: {idle_rss / 1024:.1f} MiB idle, {rss_1m / 1024:.1f} MiB after the 1 MiB scrapes")

        server = exporter("8m")
        latencies = sorted(_scrape_latencies(f"{server.url}/metrics", max(20, scrapes // 10)))
        print(f"exporter /metrics with an 8 MiB loopback target, {len(latencies)} scrapes")
        print(
            f"  p50 {latencies[len(latencies) // 2] * 1e3:.2f} ms; "
            f"exporter RSS after them: {_rss_kib(server.process.pid) / 1024:.1f} MiB"
        )


def _importing(tree: Path) -> dict[str, str]:
    """The environment of a process that imports obspack from ``tree``. PYTHONSAFEPATH keeps `python -m` from
    putting the working directory first on sys.path: run from a checkout's root, both exporters imported that
    checkout, whatever PYTHONPATH said."""
    return {**os.environ, "PYTHONPATH": str(tree), "PYTHONSAFEPATH": "1"}


def bench_in_turns(against: Path, scrapes: int) -> None:
    """Two exporters, this checkout's and `against`'s, on one 1 MiB target, scraped in turns: on a shared
    machine only figures taken side by side compare."""
    root = Path(__file__).resolve().parents[1]
    trees = [root, against.resolve()]
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as cleanup:
        folder = Path(tmp)
        (folder / "m").mkdir()
        (folder / "m" / "metrics").write_bytes(make_payload(1 << 20))
        target = start_server(
            "target", lambda a: [sys.executable, "-m", "http.server", a.split(":")[1], "--bind", "127.0.0.1",
                                 "--directory", tmp], "/m/metrics", folder, cleanup,
        )  # fmt: skip
        url = f"{target.url}/m/metrics"
        servers = {
            tree: start_server(
                f"exporter-{index}",
                lambda a: [sys.executable, "-m", "obspack.exporter", "--target", url, "--listen", a],
                "/healthz", folder, cleanup, _importing(tree),
            )  # fmt: skip
            for index, tree in enumerate(trees)
        }
        latencies: dict[Path, list[float]] = {tree: [] for tree in trees}
        cpu = {tree: 0.0 for tree in trees}
        for index in range(scrapes):
            for tree in trees if index % 2 == 0 else trees[::-1]:
                before = servers[tree].cpu_seconds()
                latencies[tree] += _scrape_latencies(f"{servers[tree].url}/metrics", 1)
                cpu[tree] += servers[tree].cpu_seconds() - before
        print(f"\nin turns, {scrapes} scrapes each of one 1 MiB target")
        for tree in trees:
            xs = sorted(latencies[tree])
            print(
                f"  {tree}: p50 {statistics.median(xs) * 1e3:.2f} ms, p90 {xs[int(0.9 * len(xs))] * 1e3:.2f} ms; "
                f"exporter CPU {cpu[tree] / scrapes * 1e3:.2f} ms per scrape; "
                f"RSS after {_rss_kib(servers[tree].process.pid) / 1024:.1f} MiB"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="timed runs per payload for the derive path")
    parser.add_argument(
        "--scrapes", type=int, default=200, help="exporter scrapes for the latency percentiles"
    )
    parser.add_argument("--against", type=Path, help="another checkout whose exporter is scraped in turns")
    parser.add_argument("--gzip", action="store_true", help="scrape as Prometheus does: OpenMetrics, gzip")
    parser.add_argument("--scrape-only", action="store_true", help="skip the derive path against the parser")
    args = parser.parse_args()
    if args.gzip:
        HEADERS.update(PROMETHEUS_HEADERS)
    print(f"python {sys.version.split()[0]}")
    if not args.scrape_only:
        bench_parse(args.repeat)
    bench_scrape(args.scrapes)
    if args.against:
        bench_in_turns(args.against, args.scrapes)


if __name__ == "__main__":
    main()
