"""The fake vLLM: its payload has vLLM 0.33's shape, its counters follow the load, its scenarios cross
the default alert thresholds they are named after, and the exporter can read it."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from obspack.catalogue import vllm_features as vf
from obspack.config import ObspackConfig
from obspack.demo import fake_vllm as fv
from obspack.exporter import derive
from obspack.exporter.parse import check_payload, parse_needed
from obspack.rules.alerts.vllm import CONNECTOR_SHARE

ALERTS = ObspackConfig().alerts


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def samples(engine: fv.Engine) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = engine.exposition().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(engine: fv.Engine, name: str, **labels: str) -> float:
    wanted = {"engine": fv.ENGINE, "model_name": fv.DEFAULT_MODEL, **labels}
    return samples(engine)[(name, frozenset(wanted.items()))]


def test_payload_has_the_vllm_v1_shape() -> None:
    text = fv.Engine().exposition().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["vllm:generation_tokens"].type == "counter"
    assert families["vllm:kv_cache_usage_perc"].type == "gauge"
    assert families["vllm:time_to_first_token_seconds"].type == "histogram"
    assert families["http_requests"].type == "counter"  # the API server's: no engine or model labels
    for family in families.values():
        if family.name.startswith("http_"):
            continue
        assert family.name.startswith("vllm:")
        for s in family.samples:
            if family.name != "vllm:cache_config_info":
                assert s.labels["engine"] == "0" and s.labels["model_name"] == fv.DEFAULT_MODEL, s
    for line in text.splitlines():  # labels are written sorted, as prometheus_client does
        if "{" in line and not line.startswith("#"):
            names = [pair.split("=")[0] for pair in line[line.index("{") + 1 : line.rindex("}")].split('",')]
            assert names == sorted(names), line
    counters = [n for n, f in families.items() if f.type == "counter"]
    assert {f"{n}_total" for n in counters} <= {s.name for f in families.values() for s in f.samples}
    assert all(f"{n}_created" in families for n in counters)
    info = families["vllm:cache_config_info"].samples[0].labels
    assert (info["num_gpu_blocks"], info["block_size"], info["enable_prefix_caching"]) == (
        "9150",
        "16",
        "True",
    )


def test_histograms_are_cumulative_and_end_with_the_count() -> None:
    text = fv.Engine().exposition().decode()
    for family in text_string_to_metric_families(text):
        if family.type != "histogram":
            continue
        buckets = [s for s in family.samples if s.name.endswith("_bucket")]
        counts = [s.value for s in buckets]
        assert counts == sorted(counts), family.name
        assert buckets[-1].labels["le"] == "+Inf"
        count = next(s.value for s in family.samples if s.name.endswith("_count"))
        assert buckets[-1].value == count > 0, family.name


def test_counters_follow_the_load_and_never_go_back() -> None:
    clock = Clock()
    engine = fv.Engine(fv.NORMAL, clock=clock)
    start = value(engine, "vllm:generation_tokens_total")
    clock.now += 10
    normal = value(engine, "vllm:generation_tokens_total")
    assert normal - start == pytest.approx(10 * 2.5 * 300, abs=1)

    engine.set(fv.STALLED)
    clock.now += 30
    assert value(engine, "vllm:generation_tokens_total") == normal
    assert value(engine, "vllm:num_requests_running") == fv.STALLED.running

    engine.update(kv_usage=0.5, requests_per_s=1.0)
    before = samples(engine)
    clock.now += 5
    after = samples(engine)
    assert value(engine, "vllm:kv_cache_usage_perc") == 0.5
    for key, v in before.items():
        if key[0].endswith(("_total", "_count", "_bucket", "_sum")):
            assert after[key] >= v, key


def test_prefix_cache_hits_stay_below_queries() -> None:
    engine = fv.Engine(fv.NORMAL)
    hits = value(engine, "vllm:prefix_cache_hits_total")
    queries = value(engine, "vllm:prefix_cache_queries_total")
    assert 0 < hits <= queries
    assert hits / queries == pytest.approx(fv.NORMAL.prefix_hit_ratio, rel=0.01)


@pytest.mark.parametrize(
    ("scenario", "high", "critical", "backlog", "in_flight", "generating"),
    [
        ("normal", False, False, False, True, True),
        ("idle", False, False, False, False, False),
        ("kv-high", True, False, False, True, True),
        ("kv-full", True, True, False, True, True),
        ("queue-backlog", False, False, True, True, True),
        ("stalled", False, False, False, True, False),
    ],
)
def test_scenarios_cross_the_default_thresholds_they_are_named_after(
    scenario: str, high: bool, critical: bool, backlog: bool, in_flight: bool, generating: bool
) -> None:
    load = fv.SCENARIOS[scenario]
    q = ALERTS.VLLMRequestQueueBacklog
    assert (load.kv_usage > ALERTS.VLLMKVCacheUsageHigh.ratio) == high
    assert (load.kv_usage > ALERTS.VLLMKVCacheUsageCritical.ratio) == critical
    assert (load.waiting >= q.min_waiting and load.waiting > q.waiting_to_running * load.running) == backlog
    assert (load.running + load.waiting > 0) == in_flight
    assert (load.requests_per_s * load.generation_tokens_per_request > 0) == generating


def test_the_exporter_reads_the_fake() -> None:
    payload = fv.Engine(fv.KV_HIGH).exposition()
    check_payload(payload)
    parsed = parse_needed(payload)
    assert parsed.skipped == 0
    (key, inputs), *_ = derive.engine_inputs(parsed.families).items()
    assert (key.model_name, key.engine) == (fv.DEFAULT_MODEL, "0")
    assert inputs.running == fv.KV_HIGH.running and inputs.kv_usage == fv.KV_HIGH.kv_usage
    assert inputs.cache is not None and inputs.cache.num_gpu_blocks == fv.NUM_GPU_BLOCKS


def test_server_serves_metrics_and_goes_down_on_request() -> None:
    with fv.FakeVLLM(fv.IDLE) as fake:
        assert fake.address.startswith("127.0.0.1:")
        with urllib.request.urlopen(fake.url, timeout=2) as response:
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            assert b"vllm:num_requests_running" in response.read()
        fake.down = True
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(fake.url, timeout=2)
        assert err.value.code == 503
        assert fake.scrapes == 1


def _by_name(engine: fv.Engine) -> dict[str, dict[frozenset[tuple[str, str]], float]]:
    out: dict[str, dict[frozenset[tuple[str, str]], float]] = {}
    for (name, labels), v in samples(engine).items():
        out.setdefault(name, {})[labels] = v
    return out


def _one(series: dict[str, dict[frozenset[tuple[str, str]], float]], name: str, **labels: str) -> float:
    return sum(v for key, v in series.get(name, {}).items() if set(labels.items()) <= key)


def test_a_nixl_decode_engine_gets_its_prompts_kv_through_the_connector() -> None:
    """What a NIXL decode engine exports and the pack reads: the connector supplies its prompts (external
    hits), its own prefix cache almost never hits, its waiting requests wait for KV (deferred), transfers
    are timed and sized, and nothing failed. A plain engine has the external counters at zero and no NIXL."""
    clock = Clock()
    decode = fv.Engine(fv.DECODE, clock=clock, role="decode", kv_connector="nixl")
    plain = fv.Engine(fv.NO_PREFIX, clock=clock)
    before = _by_name(decode)
    clock.now += 60
    d, p = _by_name(decode), _by_name(plain)

    def moved(name: str) -> float:
        return _one(d, name) - _one(before, name)

    queries, hits = moved(vf.EXTERNAL_PREFIX_QUERIES), moved(vf.EXTERNAL_PREFIX_HITS)
    assert queries == pytest.approx(60 * fv.DECODE.requests_per_s * fv.DECODE.prompt_tokens_per_request, abs=1)
    assert hits / queries == pytest.approx(fv.RECEIVED_SHARE, rel=0.01)
    assert hits / queries > CONNECTOR_SHARE, "the connector supplies most prompts: the prefix-cache alert leaves it out"
    local = moved("vllm:prefix_cache_hits_total") / moved("vllm:prefix_cache_queries_total")
    assert local < ALERTS.VLLMPrefixCacheHitRateLow.ratio, "the local hit rate alone would fire"
    assert _one(d, vf.WAITING_BY_REASON, reason="deferred") == fv.DECODE.waiting
    assert _one(d, vf.WAITING_BY_REASON, reason="capacity") == 0
    assert _one(d, vf.KV_FETCH_BY_STAGE, stage="in_progress") == fv.DECODE.waiting
    assert moved(f"{vf.NIXL_XFER_TIME}_count") == pytest.approx(60 * fv.DECODE.requests_per_s, abs=1)
    assert moved(f"{vf.NIXL_BYTES}_sum") > 0
    assert [_one(d, name) for name, _ in vf.KV_TRANSFER_FAILURES["nixl"]] == [0, 0, 0]

    # The plain engine: the same local hit rate, no connector.
    assert _one(p, vf.EXTERNAL_PREFIX_QUERIES) == _one(p, vf.EXTERNAL_PREFIX_HITS) == 0
    assert not [name for name in p if "nixl" in name or name == vf.KV_FETCH_BY_STAGE]
    assert _one(p, vf.WAITING_BY_REASON, reason="capacity") == fv.NO_PREFIX.waiting


def test_a_nixl_prefill_engine_generates_one_token_per_request_and_sees_a_few_blocks_expire() -> None:
    clock = Clock()
    prefill = fv.Engine(fv.PREFILL, clock=clock, role="prefill", kv_connector="nixl")
    before = _by_name(prefill)
    clock.now += 100
    after = _by_name(prefill)
    finished = fv.PREFILL.requests_per_s * 100
    assert _one(after, "vllm:generation_tokens_total") - _one(before, "vllm:generation_tokens_total") == pytest.approx(
        finished, abs=1
    )
    expired = next(name for name, kind in vf.KV_TRANSFER_FAILURES["nixl"] if kind == vf.EXPIRED)
    assert 0 < _one(after, expired) < ALERTS.VLLMKVTransferFailures.expired_ratio * _one(
        after, "vllm:request_success_total"
    ), "a few, well under the alert's share"
    assert not [name for name in after if name.startswith((vf.NIXL_XFER_TIME, vf.NIXL_BYTES, vf.KV_FETCH_BY_STAGE))]
    assert _one(after, vf.EXTERNAL_PREFIX_HITS) == 0  # it computes its prompts itself


@pytest.mark.parametrize(("role", "connector"), [("decode", ""), ("", "nixl"), ("both", "nixl"), ("decode", "lmcache")])
def test_a_disaggregated_engine_needs_a_role_and_a_known_connector(role: str, connector: str) -> None:
    with pytest.raises(ValueError, match="role"):
        fv.Engine(role=role, kv_connector=connector)
