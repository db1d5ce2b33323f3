"""A fake vLLM OpenAI server: `/metrics` in the vLLM 0.33 (V1 engine) shape, with a load you can steer.

`Engine` simulates what the metrics describe. Its `Load` says how many requests run and wait, how full
the KV cache is and how fast requests finish; counters and histograms integrate that load over wall
time, so Prometheus sees rates that follow the scenario. Change the load at any time with `set()`.

`FakeVLLM` serves an engine over HTTP on 127.0.0.1 (a free port unless given one). `down = True` makes
it answer 503 to everything, like a vLLM whose engine died behind a still-listening socket. The
exporter's tests use it as a target that serves given bytes (`payload`) and breaks on request
(`status`, `delay_s`, `mode`).

The exposition follows vLLM 0.33 with one API server: every engine series has the labels `engine` and
`model_name` (sorted), counters end in `_total` and come with a `_created` gauge, histograms have vLLM's
bucket bounds, and `vllm:cache_config_info` carries the cache settings as labels. The API server's
`http_requests_total{handler,method,status}` counts the requests on /v1/chat/completions, a share
`error_ratio` of them answered 5xx (the availability SLO reads it); as in vLLM, a status's series
appears at its first request, so a healthy pod has no 5xx series. The external prefix-cache counters
are there on every engine, as in vLLM (zero without a KV connector).

A prefill or decode engine of a disaggregated pair (`role`, with the NIXL connector as `kv_connector`)
adds what vLLM's NIXL connector exports there: its failure counters on both sides (a prefill engine sees
a request's blocks expire unread now and then), and on the decode side the transfer time and bytes
histograms, the requests fetching KV by stage, and its prompts counted as external prefix-cache hits (the
KV arrives from the prefill pod: its local prefix-cache hit rate is near zero by design, see `DECODE`);
its waiting requests wait for that KV (`deferred`). Families that only exist with other flags (spec
decode, LoRA, offload), the connector's series obspack does not read, and the `python_*`, `process_*` and
other `http_*` families are left out.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from prometheus_client.utils import floatToGoString

from obspack.catalogue import vllm
from obspack.catalogue import vllm_features as vf
from obspack.demo.serving import TEXT, Answer, LocalServer

DEFAULT_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
ENGINE = "0"
NUM_GPU_BLOCKS = 9150
BLOCK_SIZE = 16
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class Load:
    """What the engine does right now. Latencies are medians; rates are per second."""

    running: int
    waiting: int
    kv_usage: float  # 0-1, vllm:kv_cache_usage_perc
    requests_per_s: float  # finished requests; 0 with requests in flight means the engine is stuck
    prompt_tokens_per_request: float = 1100.0
    generation_tokens_per_request: float = 300.0
    prefix_hit_ratio: float = 0.4  # share of prompt tokens served from the prefix cache
    preemptions_per_s: float = 0.0
    ttft_s: float = 0.15
    itl_s: float = 0.03
    queue_s: float = 0.05
    error_ratio: float = 0.0  # share of API requests answered with a 5xx status


NORMAL = Load(running=24, waiting=2, kv_usage=0.35, requests_per_s=2.5)
IDLE = Load(running=0, waiting=0, kv_usage=0.0, requests_per_s=0.0)
KV_HIGH = Load(running=40, waiting=4, kv_usage=0.93, requests_per_s=3.0, ttft_s=0.6, itl_s=0.05, queue_s=0.4)
KV_FULL = Load(running=46, waiting=9, kv_usage=0.985, requests_per_s=3.0, ttft_s=1.5, itl_s=0.06, queue_s=1.2)
QUEUE_BACKLOG = Load(
    running=8,
    waiting=40,
    kv_usage=0.85,
    requests_per_s=0.8,
    prompt_tokens_per_request=6000.0,
    ttft_s=6.0,
    queue_s=5.0,
)
STALLED = Load(running=16, waiting=11, kv_usage=0.5, requests_per_s=0.0)
# The two halves of a disaggregated pair serving NORMAL's traffic. The prefill engine computes each prompt
# and one token; the decode engine gets the prompt's KV over the connector and generates the rest, so it
# finds almost nothing in its own prefix cache.
PREFILL = Load(
    running=4, waiting=0, kv_usage=0.2, requests_per_s=2.5, generation_tokens_per_request=1.0, itl_s=0.0, ttft_s=0.12
)
DECODE = Load(running=24, waiting=2, kv_usage=0.45, requests_per_s=2.5, prefix_hit_ratio=0.01)
# A pod whose prompts stopped sharing a prefix (say, a request id at the head of the system prompt).
NO_PREFIX = replace(NORMAL, prefix_hit_ratio=0.01)

SCENARIOS: dict[str, Load] = {
    "normal": NORMAL,
    "idle": IDLE,
    "kv-high": KV_HIGH,
    "kv-full": KV_FULL,
    "queue-backlog": QUEUE_BACKLOG,
    "stalled": STALLED,
    "prefill": PREFILL,
    "decode": DECODE,
    "no-prefix": NO_PREFIX,
}

_SPREAD = 0.6  # sigma of the log-normal spread of each observation around its median

FINISHED_REASONS = (("stop", 0.9), ("length", 0.095), ("abort", 0.005), ("error", 0.0), ("repetition", 0.0))

ROLES = ("prefill", "decode")  # the sides of a disaggregated pair (llm-d's role label values)
CONNECTORS = ("nixl",)  # the KV connectors the fake serves
RECEIVED_SHARE = 0.97  # share of a decode engine's prompt tokens whose KV arrives from the prefill pod
EXPIRED_SHARE = 0.001  # requests whose blocks a prefill engine freed unread (aborted before decode read them)
KV_BYTES_PER_TOKEN = 131072  # Llama-3.1-8B in bf16: 2 (K and V) x 32 layers x 8 KV heads x 128 x 2 bytes
KV_TRANSFER_S = 0.02  # median seconds of one request's KV transfer (NVLink between the pair's GPUs)


class _Histogram:
    """Cumulative bucket counts that only grow; observations are spread log-normally around a median."""

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.buckets = [0.0] * len(bounds)
        self.count = 0.0
        self.sum = 0.0

    def observe_many(self, n: float, median: float) -> None:
        if n <= 0 or median <= 0:
            return
        for i, le in enumerate(self.bounds):
            z = (math.log(le) - math.log(median)) / (_SPREAD * math.sqrt(2))
            self.buckets[i] += n * 0.5 * (1 + math.erf(z))
        self.count += n
        self.sum += n * median * math.exp(_SPREAD**2 / 2)


@dataclass(frozen=True)
class _Family:
    name: str  # exposed name without _total
    kind: str  # counter, gauge or histogram
    help: str


# The histograms served, with vLLM 0.33's bucket bounds (the +Inf bucket is added when writing).
_HISTOGRAMS = {
    vllm.TTFT: ("Seconds from arrival to the first generated token.", vllm.V1.bounds(vllm.TTFT)),
    vllm.ITL: ("Seconds between two streamed outputs.", vllm.V1.bounds(vllm.ITL)),
    vllm.REQUEST_TPOT: ("Per-request seconds per generated token.", vllm.V1.bounds(vllm.REQUEST_TPOT)),
    vllm.E2E: ("Seconds from arrival to the last generated token.", vllm.V1.bounds(vllm.E2E)),
    vllm.QUEUE: ("Seconds a request spent waiting.", vllm.V1.bounds(vllm.QUEUE)),
    vllm.PROMPT_TOKENS: ("Prompt tokens per finished request.", vllm.V1.token_counts),
    vllm.GENERATION_TOKENS: ("Generated tokens per finished request.", vllm.V1.token_counts),
    vllm.ITERATION_TOKENS: ("Tokens per engine step.", vllm.V1.bounds(vllm.ITERATION_TOKENS)),
}


class Engine:
    """The simulated engine. Thread-safe; `clock` returns seconds (monotonic is fine)."""

    def __init__(
        self,
        load: Load = NORMAL,
        *,
        model_name: str = DEFAULT_MODEL,
        clock: Callable[[], float] = time.monotonic,
        history_s: float = 7200.0,
        engine: str = ENGINE,
        role: str = "",
        kv_connector: str = "",
    ) -> None:
        if bool(role) != bool(kv_connector) or (role and role not in ROLES) or (kv_connector and kv_connector not in CONNECTORS):
            raise ValueError(f"a disaggregated engine has a role {ROLES} and a connector {CONNECTORS}: {role!r}, {kv_connector!r}")
        self.model_name = model_name
        self.engine = engine  # the data-parallel rank, vLLM's `engine` label
        self.role, self.kv_connector = role, kv_connector  # "" and "": not disaggregated
        self._clock = clock
        self._lock = threading.Lock()
        self._created = round(time.time() - history_s, 3)
        self._counters: dict[str, float] = {
            "prompt_tokens": 0.0,
            "generation_tokens": 0.0,
            "prefix_queries": 0.0,
            "prefix_hits": 0.0,
            "preemptions": 0.0,
            "external_queries": 0.0,
            "external_hits": 0.0,
            "kv_expired": 0.0,
            "http_2xx": 0.0,
            "http_5xx": 0.0,
            **{f"success_{reason}": 0.0 for reason, _ in FINISHED_REASONS},
        }
        self._histograms = {name: _Histogram(bounds) for name, (_, bounds) in _HISTOGRAMS.items()}
        if role == "decode":
            self._histograms.update({name: _Histogram(bounds) for name, (_, bounds) in _transfer_histograms(kv_connector).items()})
        # A server that has been up a while: counters start from `history_s` seconds of normal load (its
        # role's, on a disaggregated engine).
        self._advance({"prefill": PREFILL, "decode": DECODE}.get(role, NORMAL), history_s)
        self._load = load
        self._last = clock()

    @property
    def load(self) -> Load:
        return self._load

    def set(self, load: Load) -> None:
        """Switch to a new load; what happened until now is counted with the previous one."""
        with self._lock:
            self._catch_up()
            self._load = load

    def update(self, **changes: float) -> None:
        """Change some fields of the current load, e.g. `update(kv_usage=0.97)`."""
        with self._lock:
            self._catch_up()
            self._load = replace(self._load, **changes)

    def exposition(self) -> bytes:
        """The /metrics text as of now."""
        with self._lock:
            self._catch_up()
            return "".join(self._lines()).encode()

    def _catch_up(self) -> None:
        now = self._clock()
        self._advance(self._load, max(0.0, now - self._last))
        self._last = now

    def _advance(self, load: Load, dt: float) -> None:
        finished = load.requests_per_s * dt
        prompt = finished * load.prompt_tokens_per_request
        generated = finished * load.generation_tokens_per_request
        c = self._counters
        c["prompt_tokens"] += prompt
        c["generation_tokens"] += generated
        c["prefix_queries"] += prompt
        c["prefix_hits"] += prompt * load.prefix_hit_ratio
        c["preemptions"] += load.preemptions_per_s * dt
        if self.role == "decode":  # the connector is queried for every prompt; the prefill pod holds most
            c["external_queries"] += prompt
            c["external_hits"] += prompt * RECEIVED_SHARE
        if self.role == "prefill":
            c["kv_expired"] += finished * EXPIRED_SHARE
        c["http_2xx"] += finished * (1 - load.error_ratio)
        c["http_5xx"] += finished * load.error_ratio
        for reason, share in FINISHED_REASONS:
            c[f"success_{reason}"] += finished * share
        h = self._histograms
        decode_s = load.generation_tokens_per_request * load.itl_s
        h[vllm.TTFT].observe_many(finished, load.ttft_s)
        h[vllm.ITL].observe_many(generated - finished, load.itl_s)
        h[vllm.REQUEST_TPOT].observe_many(finished, load.itl_s)
        h[vllm.E2E].observe_many(finished, load.queue_s + load.ttft_s + decode_s)
        h[vllm.QUEUE].observe_many(finished, load.queue_s)
        h[vllm.PROMPT_TOKENS].observe_many(finished, load.prompt_tokens_per_request)
        h[vllm.GENERATION_TOKENS].observe_many(finished, load.generation_tokens_per_request)
        if load.running and finished:
            steps = dt / (load.itl_s or load.ttft_s)
            h[vllm.ITERATION_TOKENS].observe_many(steps, (prompt + generated) / steps)
        if self.role == "decode":
            times, sizes = _transfer_histograms(self.kv_connector)
            h[times].observe_many(finished, KV_TRANSFER_S)
            h[sizes].observe_many(finished, load.prompt_tokens_per_request * KV_BYTES_PER_TOKEN)

    # --- writing ---------------------------------------------------------------------------------------

    def _labels(self, **extra: str) -> str:
        labels = {"engine": self.engine, "model_name": self.model_name, **extra}
        return ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))

    def _gauge(self, name: str, help_text: str, samples: list[tuple[str, float]]) -> Iterator[str]:
        yield f"# HELP {name} {help_text}\n# TYPE {name} gauge\n"
        for labels, value in samples:
            yield f"{name}{{{labels}}} {floatToGoString(value)}\n"

    def _counter(self, name: str, help_text: str, samples: list[tuple[str, float]]) -> Iterator[str]:
        yield f"# HELP {name}_total {help_text}\n# TYPE {name}_total counter\n"
        for labels, value in samples:
            yield f"{name}_total{{{labels}}} {floatToGoString(math.floor(value))}\n"
        yield f"# HELP {name}_created {help_text}\n# TYPE {name}_created gauge\n"
        for labels, _ in samples:
            yield f"{name}_created{{{labels}}} {floatToGoString(self._created)}\n"

    def _histogram(self, name: str, help_text: str, h: _Histogram) -> Iterator[str]:
        base = self._labels()
        yield f"# HELP {name} {help_text}\n# TYPE {name} histogram\n"
        count = floatToGoString(math.floor(h.count))
        for le, value in zip(h.bounds, h.buckets):
            yield f"{name}_bucket{{{self._labels(le=floatToGoString(le))}}} {floatToGoString(math.floor(value))}\n"
        yield f"{name}_bucket{{{self._labels(le='+Inf')}}} {count}\n"
        yield f"{name}_count{{{base}}} {count}\n"
        yield f"{name}_sum{{{base}}} {floatToGoString(h.sum)}\n"
        yield f"# HELP {name}_created {help_text}\n# TYPE {name}_created gauge\n"
        yield f"{name}_created{{{base}}} {floatToGoString(self._created)}\n"

    def _connector_lines(self) -> Iterator[str]:
        """The KV connector's counters on both sides, and the decode side's requests fetching KV by stage."""
        if not self.kv_connector:
            return
        one = self._labels()
        for name, kind in vf.KV_TRANSFER_FAILURES[self.kv_connector]:
            value = self._counters["kv_expired"] if kind == vf.EXPIRED else 0.0
            yield from self._counter(name.removesuffix("_total"), f"KV transfers of kind {kind}.", [(one, value)])
        if self.role == "decode":
            stages = {"waiting_to_start": 0, "in_progress": self._load.waiting, "completed_waiting": 0}
            yield from self._gauge(
                vf.KV_FETCH_BY_STAGE, "Requests fetching KV from a prefill engine, by stage.",
                [(self._labels(stage=stage), n) for stage, n in stages.items()],
            )  # fmt: skip

    def _lines(self) -> Iterator[str]:
        load, c, one = self._load, self._counters, self._labels()
        yield from self._gauge(
            vllm.NUM_REQUESTS_RUNNING, "Requests in the running batch.", [(one, load.running)]
        )
        yield from self._gauge(
            vllm.NUM_REQUESTS_WAITING, "Requests waiting in the queue.", [(one, load.waiting)]
        )
        deferred = load.waiting if self.role == "decode" else 0  # a decode engine's requests wait for their KV
        yield from self._gauge(
            vf.WAITING_BY_REASON,
            "Waiting requests by reason; the reasons add up to vllm:num_requests_waiting.",
            [(self._labels(reason="capacity"), load.waiting - deferred), (self._labels(reason="deferred"), deferred)],
        )
        yield from self._gauge(
            "vllm:engine_sleep_state",
            "1 for the engine's current sleep state.",
            [
                (self._labels(sleep_state=s), float(s == "awake"))
                for s in ("awake", "weights_offloaded", "discard_all")
            ],
        )
        yield from self._gauge(
            vllm.KV_CACHE_USAGE, "KV cache usage, 1 is full.", [(one, load.kv_usage)]
        )
        queries, hits = [(one, c["prefix_queries"])], [(one, c["prefix_hits"])]
        yield from self._counter(
            "vllm:prefix_cache_queries", "Prompt tokens looked up in the prefix cache.", queries
        )
        yield from self._counter("vllm:prefix_cache_hits", "Prompt tokens found in the prefix cache.", hits)
        yield from self._counter("vllm:num_preemptions", "Preempted requests.", [(one, c["preemptions"])])
        yield from self._counter(
            "vllm:prompt_tokens", "Prompt tokens prefilled.", [(one, c["prompt_tokens"])]
        )
        yield from self._counter(
            "vllm:generation_tokens", "Tokens generated.", [(one, c["generation_tokens"])]
        )
        yield from self._counter(
            "vllm:request_success",
            "Finished requests by finish reason.",
            [(self._labels(finished_reason=r), c[f"success_{r}"]) for r, _ in FINISHED_REASONS],
        )
        external = ((vf.EXTERNAL_PREFIX_QUERIES, "Prompt tokens looked up through the KV connector.", "external_queries"),
                    (vf.EXTERNAL_PREFIX_HITS, "Prompt tokens the KV connector supplied.", "external_hits"))  # fmt: skip
        for name, help_text, key in external:
            yield from self._counter(name.removesuffix("_total"), help_text, [(one, c[key])])
        yield from self._connector_lines()
        for name, (help_text, _) in _HISTOGRAMS.items():
            yield from self._histogram(name, help_text, self._histograms[name])
        if self.role == "decode":
            for name, (help_text, _) in _transfer_histograms(self.kv_connector).items():
                yield from self._histogram(name, help_text, self._histograms[name])
        route = 'handler="/v1/chat/completions",method="POST"'
        yield from self._counter(  # a status's series appears at its first request, as the instrumentator's do
            "http_requests",
            "Total number of requests by method, status and handler.",
            [(f'{route},status="{s}"', c[f"http_{s}"]) for s in ("2xx", "5xx") if math.floor(c[f"http_{s}"]) > 0],
        )
        info = {
            "block_size": str(BLOCK_SIZE),
            "cache_dtype": "auto",
            "enable_prefix_caching": "True",
            "engine": self.engine,
            "gpu_memory_utilization": "0.9",
            "num_cpu_blocks": "None",
            "num_gpu_blocks": str(NUM_GPU_BLOCKS),
            "prefix_caching_hash_algo": "sha256",
            "sliding_window": "None",
        }
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(info.items()))
        yield "# HELP vllm:cache_config_info Cache settings of the engine.\n# TYPE vllm:cache_config_info gauge\n"
        yield f"vllm:cache_config_info{{{labels}}} 1.0\n"


def _transfer_histograms(connector: str) -> dict[str, tuple[str, tuple[float, ...]]]:
    """The transfer time and bytes histograms a decode engine of `connector` serves: {name: (help, bounds)}."""
    return {
        vf.KV_TRANSFER_TIMES[connector]: ("Seconds per KV transfer.", vf.KV_TRANSFER_TIME_BOUNDS),
        vf.KV_TRANSFER_BYTES[connector]: ("Bytes per KV transfer.", vf.KV_TRANSFER_BYTES_BOUNDS),
    }


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class FakeVLLM(LocalServer):
    """An `Engine` served over HTTP on 127.0.0.1: `/metrics`, `/health`. Stop it with `stop()` (or `with`).

    `payload` (bytes, or a function giving bytes per request) is served at `/metrics` instead of the
    engine's text, for tests that need a given exposition. Knobs, changeable while it runs: `down`
    (503 to everything, an engine dead behind a listening socket), `status` (the status of `/metrics`
    answers), and LocalServer's `delay_s` and `mode` (slow, cut short, trickling or closed answers).
    """

    def __init__(
        self,
        load: Load = NORMAL,
        *,
        payload: bytes | Callable[[], bytes] | None = None,
        model_name: str = DEFAULT_MODEL,
        port: int = 0,
        engines: int = 1,
        role: str = "",
        kv_connector: str = "",
    ) -> None:
        # Data-parallel engines behind one API server (`--data-parallel-size`): one /metrics, each engine's
        # series under its own `engine` label; `engine` is the first. `role` and `kv_connector`: see Engine.
        self.engines = [
            Engine(load, model_name=model_name, engine=str(rank), role=role, kv_connector=kv_connector)
            for rank in range(engines)
        ]
        self.engine = self.engines[0]
        self.payload = payload
        self.down = False
        self.status = 200
        self.scrapes = 0
        super().__init__(self._answer, "fake-vllm", port)

    @property
    def url(self) -> str:
        return f"http://{self.address}/metrics"

    def set(self, load: Load, engine: int | None = None) -> None:
        """The load of one engine (its rank), or of every engine."""
        for e in self.engines if engine is None else [self.engines[engine]]:
            e.set(load)

    def update(self, **changes: float) -> None:
        for e in self.engines:
            e.update(**changes)

    def exposition(self) -> bytes:
        """Every engine's text, each family once: the engines' samples under one HELP and TYPE, and the API
        server's own series (no `engine` label, the same in every engine's text) once."""
        if len(self.engines) == 1:
            return self.engine.exposition()
        families: dict[str, list[str]] = {}
        seen: set[str] = set()
        for e in self.engines:
            header = ""
            for line in e.exposition().decode().splitlines(keepends=True):
                if line.startswith("# HELP "):
                    header = line.split(" ", 3)[2]
                    families.setdefault(header, [])
                    if e is self.engine:
                        families[header].append(line)
                elif line.startswith("# TYPE "):
                    if e is self.engine:
                        families[header].append(line)
                elif (series := line.rsplit(" ", 1)[0]) not in seen:
                    seen.add(series)
                    families[header].append(line)
        return "".join(line for lines in families.values() for line in lines).encode()

    def __enter__(self) -> FakeVLLM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _answer(self, path: str) -> Answer:
        if self.down:
            return 503, TEXT, b"engine is not running\n"
        if path == "/metrics":
            self.scrapes += 1
            payload = self.payload
            body = self.exposition() if payload is None else payload() if callable(payload) else payload
            return self.status, CONTENT_TYPE, body
        if path == "/health":
            return 200, TEXT, b""
        return 404, TEXT, b"not found\n"
