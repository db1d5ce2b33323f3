"""promtool unit tests of VLLMErrorBudgetBurn, built from the config's own objectives, thresholds, guard
and windows, rendered as OUT/tests/slo_test.yaml.

Every enabled SLI plays the same scenarios, each on a model of its own: a fast burn pages within minutes
while the same model in another cluster stays quiet; a slow burn opens tickets and never pages; a brief
spike, no traffic, low traffic, a pod restart (counter reset) and engines put to sleep stay quiet. Latency buckets come in both
`le` spellings, inter-token latency in both metric names, HTTP counters with a router that has no model.

The expected alerts come from a small model of the rules (`_Predictor`): it averages the simulated traffic
the way the records do, allows for the evaluation lag between groups (so the tests pass with either group
order), and only accepts check times where the answer is clear, not at a threshold or a `for` boundary.
Steps are one minute at speedup 1 and shrink with `slos.speedup`; every window counts the same steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from obspack import conventions as c
from obspack import numbers, slos
from obspack.catalogue import vllm_features as f
from obspack.config import ObspackConfig, Severity
from obspack.pack.shipped_tests import satisfy
from obspack.pack.shipped_tests.alerts import Builder, expected_alert, expected_sample, series_text
from obspack.rules.alerts import alert_groups, all_alerts
from obspack.rules.alerts.slo import ALERT
from obspack.rules.model import AlertRule
from obspack.rules.recording import all_recording_groups

FILE = "slo_test.yaml"
MODELS = {  # one model per SLI, so that each SLI's traffic is its own
    "time_to_first_token": "meta-llama/Llama-3.1-8B-Instruct",
    "inter_token_latency": "Qwen/Qwen2.5-32B-Instruct",
    "availability": "mistralai/Mistral-7B-Instruct-v0.3",
}
NAMESPACE = "inference"
ROUTER_POD = "vllm-router-5f9c"  # production-stack's router: HTTP series without a model
ROUTES = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses")
GAPS_PER_REQUEST = 100  # token gaps per request, for inter-token latency
MARGIN = 0.1  # a window's burn (or request count) must clear a threshold by 10% to count as clear
LAG = 1  # steps an alert group may read behind the records (group order)
_NAN4 = (math.nan,) * 4
ASLEEP = "prod-c"  # the cluster whose pods were put to sleep in the fast burn
CLUSTERS = ("prod-a", "prod-b", ASLEEP)
Place = tuple[str, str]  # (cluster, namespace): where a scenario's model runs
ONE_CLUSTER = " (one cluster: the selectors leave no other, so the other clusters are namespaces)"


def _places(one_cluster: bool) -> dict[str, Place]:
    """Where each of the scenarios' clusters is. Where the selectors leave a single cluster, the series of
    the others go to namespaces of their own in the first: the SLO records are per cluster, namespace and
    model, so a model in another namespace is as separate as one in another cluster."""
    if not one_cluster:
        return {cluster: (cluster, NAMESPACE) for cluster in CLUSTERS}
    first = CLUSTERS[0]
    return {cluster: (first, NAMESPACE if cluster == first else f"{NAMESPACE}-{cluster}") for cluster in CLUSTERS}


def _window_steps(window: str, step_s: int) -> int:
    return slos.seconds(window) // step_s


# ---------------------------------------------------------------------------------------------------------
# Traffic per step and the model of the rules


@dataclass
class Traffic:
    """Per step: good and bad events, and requests (the guard's count). Index 0 is the first sample."""

    good: list[float]
    bad: list[float]
    requests: list[float]
    resets: frozenset[int] = frozenset()  # steps at which one pod restarts (its counters start over)

    @classmethod
    def of(
        cls, steps: int, requests: float, bad_share: Callable[[int], float], events_per_request: float = 1
    ) -> Traffic:
        good, bad = [0.0], [0.0]
        for s in range(1, steps + 1):
            share = bad_share(s)
            good.append(requests * events_per_request * (1 - share))
            bad.append(requests * events_per_request * share)
        return cls(good, bad, [0.0] + [requests] * steps)

    @property
    def steps(self) -> int:
        return len(self.good) - 1


@dataclass(frozen=True)
class _Pair:
    name: str
    severity: Severity
    long: int
    short: int
    for_: int
    factor: float
    rule: AlertRule


class _Predictor:
    """What the rules decide for one SLI of one model, with bounds for rounding and group order."""

    def __init__(self, traffic: Traffic, objective: float, min_requests: float, base: int) -> None:
        self.t, self.budget, self.min, self.base = traffic, 1 - objective, min_requests, base
        self._cache: dict[tuple[int, str], bool | None] = {}
        self._sums = self._prefix(base)

    def _prefix(self, base: int) -> list[tuple[float, float, float, int]]:
        """Running sums, per step s, of what the base-window rate at s sees: (bad, all, requests per step,
        number of steps with a rate); the rate needs two samples, so step 0 has none."""
        cum = [(0.0, 0.0, 0.0)]
        for i in range(1, len(self.t.good)):
            b, a, r = cum[-1]
            cum.append((b + self.t.bad[i], a + self.t.good[i] + self.t.bad[i], r + self.t.requests[i]))
        out = [(0.0, 0.0, 0.0, 0)]
        for s in range(1, len(self.t.good)):
            lo = max(0, s - base)
            n = s - lo
            point = (cum[s][0] - cum[lo][0], cum[s][1] - cum[lo][1], (cum[s][2] - cum[lo][2]) / n)
            prev = out[-1]
            out.append((prev[0] + point[0], prev[1] + point[1], prev[2] + point[2], prev[3] + 1))
        return out

    def _window(self, s: int, w: int, base: int) -> tuple[float, float] | None:
        """(burn, requests in the window) as the rules compute them at step s: the requests are the summed
        base-window rates times the base window over the samples it holds (`base` of them, or one more
        in Prometheus 2's closed windows)."""
        sums = self._sums
        if s < 1 or s >= len(sums):
            return None
        lo, held = max(0, s - w), min(base, sums[s][3])
        bad, every = sums[s][0] - sums[lo][0], sums[s][1] - sums[lo][1]
        burn = bad / every / self.budget if every > 0 else math.nan
        return burn, (sums[s][2] - sums[lo][2]) * self.base / held

    def _bounds(self, s: int, w: int) -> tuple[float, float, float, float]:
        """(min burn, max burn, min requests, max requests) over lag, window and base jitter: what
        `_window` gives for lags 0..LAG, windows w-1..w+1 and bases base..base+1, computed inline (this
        is the hot loop of building the SLO tests)."""
        sums, budget, base = self._sums, self.budget, self.base
        burn_lo = count_lo = math.inf
        burn_hi = count_hi = -math.inf
        for lag in range(LAG + 1):
            at = s - lag
            if at < 1 or at >= len(sums):
                return _NAN4
            bad_at, every_at, requests_at, rated = sums[at]
            held, held_closed = min(base, rated), min(base + 1, rated)
            for width in (w - 1, w, w + 1):
                bad_lo, every_lo, requests_lo, _ = sums[at - width if at > width else 0]
                every = every_at - every_lo
                if every <= 0:
                    return _NAN4  # no events in a window: the ratio is NaN
                burn = (bad_at - bad_lo) / every / budget
                requests = (requests_at - requests_lo) * base
                if burn < burn_lo:
                    burn_lo = burn
                if burn > burn_hi:
                    burn_hi = burn
                for count in (requests / held, requests / held_closed):
                    if count < count_lo:
                        count_lo = count
                    if count > count_hi:
                        count_hi = count
        return burn_lo, burn_hi, count_lo, count_hi

    def condition(self, s: int, pair: _Pair) -> bool | None:
        """True or False when the pair's condition is clear at step s, None when it is not."""
        key = (s, pair.name)
        if key not in self._cache:
            self._cache[key] = self._condition(s, pair)
        return self._cache[key]

    def _condition(self, s: int, pair: _Pair) -> bool | None:
        hi, lo = pair.factor * (1 + MARGIN), pair.factor * (1 - MARGIN)
        short = self._bounds(s, pair.short)
        if any(math.isnan(v) for v in short):
            return False  # no events in a window: the ratio is NaN and the comparison false
        if short[1] < lo:
            return False  # clear from the short window alone: the long one cannot make it true
        long = self._bounds(s, pair.long)
        if any(math.isnan(v) for v in long):
            return False
        if short[0] > hi and long[0] > hi and long[2] >= self.min * (1 + MARGIN):
            return True
        if short[1] < lo or long[1] < lo or long[3] < self.min * (1 - MARGIN):
            return False
        return None

    def firing(self, at: int, pair: _Pair) -> bool | None:
        """Whether the pair's alert fires at step `at`: its condition clearly held for `for` (and a little
        more), or clearly failed since the alert could have become active; None when that is unclear."""
        start = at - pair.for_ - 2
        if start >= 1 and all(self.condition(s, pair) is True for s in range(start, at + 1)):
            return True
        if any(self.condition(s, pair) is False for s in range(max(1, at - pair.for_ + 2), at + 1)):
            return False
        return None

    def value(self, at: int, pair: _Pair) -> float | None:
        """The alert's value (the short window's burn) when the traffic was steady long enough."""
        span = range(max(1, at - pair.short - self.base - 3), at + 1)
        shares = {(self.t.bad[i], self.t.good[i]) for i in span}
        if len(shares) != 1:
            return None
        bad, good = shares.pop()
        return bad / (good + bad) / self.budget


# ---------------------------------------------------------------------------------------------------------
# Writing series


def _fmt(v: float) -> str:
    return numbers.text(v)


def counter_values(increments: list[float], resets: frozenset[int] = frozenset(), lazy: bool = False) -> str:
    """promtool's expanding notation for a counter growing by increments[s] at step s (index 0 is the
    first sample, 0), starting over from 0 at each reset step. A `lazy` counter is created at its first
    increment, as the API server's counter creates a status's series at its first request: no sample
    before it, and after a restart the series is gone (stale) until it counts again."""
    parts, value, s = ["_" if lazy else "0"], 0.0, 1
    while s < len(increments):
        if s in resets:
            value = 0.0
            parts.append("stale" if lazy else "0")
            s += 1
            continue
        inc = increments[s]
        n = 1
        while s + n < len(increments) and increments[s + n] == inc and (s + n) not in resets:
            n += 1
        if lazy and value == 0 and inc == 0:
            parts.append(f"_x{n}" if n > 1 else "_")
        elif lazy and value == 0:
            parts.append(f"{_fmt(inc)}+{_fmt(inc)}x{n - 1}")
        else:
            parts.append(f"{_fmt(value + inc)}+{_fmt(inc)}x{n - 1}")
        value += inc * n
        s += n
    return " ".join(parts)


@dataclass
class _Case:
    name: str
    steps: int
    series: list[tuple[str, str]] = field(default_factory=list)
    checks: list[tuple[int, list[dict[str, object]]]] = field(default_factory=list)
    samples: list[dict[str, object]] = field(default_factory=list)


def _route(cfg: ObspackConfig, constraints: satisfy.Constraints) -> str:
    """An API route the availability SLO counts (its handler regex) that the selectors keep."""
    matchers = (("handler", "=~", cfg.slos.availability.handler_regex), *constraints.families.get("handler", ()))
    preferred = next((r for r in ROUTES if satisfy.accepts(r, matchers)), ROUTES[0])
    return satisfy.pick(matchers, preferred, set(), "slos.availability.handler_regex")


def _pods(model: str) -> list[str]:
    return [f"{model.rsplit('/', 1)[-1].lower()}-{i}" for i in range(2)]


class _Writer:
    """Series of one SLI for one model in the shapes vLLM exposes them, moved into what the selectors
    accept (`mapping`, built for every label value the suite uses)."""

    def __init__(
        self, cfg: ObspackConfig, builder: Builder, route: str, mapping: satisfy.Mapping, places: dict[str, Place]
    ) -> None:
        self.cfg, self.b, self.route, self.mapping, self.places = cfg, builder, route, mapping, places

    def where(self, cluster: str, pod: str) -> dict[str, str]:
        """A pod of the scenarios' `cluster`, where that cluster is (_places)."""
        return self.b.where(*self.places[cluster], pod)

    def vllm(
        self, case: _Case, metric: str, where: dict[str, str], values: str, fill: bool = True, **extra: str
    ) -> None:
        """One series; `fill=False` as in Incident.add (a router's series has no model_name)."""
        labels = self.mapping.labels({**self.b.sel["vllm"], **where, **extra})
        case.series.append((series_text(metric, self.b.filled("vllm", labels, fill)), values))

    def write(self, case: _Case, sli: str, model: str, cluster: str, traffic: Traffic, threshold: float | None) -> None:
        pods = [self.where(cluster, pod) for pod in _pods(model)]
        # Two pods: the first carries every bad event, the second the good ones. Pod 0 writes the Go
        # client's spelling of a whole-number bound (le="1"), pod 1 Python's and Prometheus 3's ("1.0").
        carried = [
            Traffic(
                [0.0] * len(traffic.good), traffic.bad, [r / 2 for r in traffic.requests], traffic.resets
            ),
            Traffic(
                traffic.good, [0.0] * len(traffic.bad), [r / 2 for r in traffic.requests], traffic.resets
            ),
        ]
        for i, (where, t) in enumerate(zip(pods, carried)):
            resets = frozenset(r + 20 * i for r in t.resets)  # the pods restart one after the other
            labels = {**where, "model_name": model, "engine": "0"}
            total = [g + b for g, b in zip(t.good, t.bad)]
            if sli == "availability":
                http = {**where, "handler": self.route, "method": "POST"}
                self.vllm(case, "http_requests_total", http, counter_values(t.good, resets), status="2xx")
                # the 5xx series appears at the first failure (none on a healthy pod), as vLLM's does
                self.vllm(case, "http_requests_total", http, counter_values(t.bad, resets, lazy=True), status="5xx")
                self.vllm(case, "vllm:num_requests_running", labels, f"4x{traffic.steps}")
                continue
            assert threshold is not None
            le = _le(threshold, go=i == 0)
            names = ["vllm:time_to_first_token_seconds"]
            if sli == "inter_token_latency":
                # pod 0 is vLLM 0.6 (the older name only), pod 1 is 0.10-0.11 (both names, equal values)
                names = ["vllm:time_per_output_token_seconds"] if i == 0 else [
                    "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"]  # fmt: skip
                self.vllm(case, "vllm:time_to_first_token_seconds_count", labels,
                          counter_values(t.requests, resets))  # fmt: skip
            for name in names:
                self.vllm(case, f"{name}_count", labels, counter_values(total, resets))
                self.vllm(case, f"{name}_bucket", {**labels, "le": le}, counter_values(t.good, resets))
                self.vllm(case, f"{name}_bucket", {**labels, "le": "+Inf"}, counter_values(total, resets))


def _le(threshold: float, go: bool) -> str:
    """How a client writes the bound: Go drops the `.0` of whole numbers, Python keeps it."""
    if float(threshold).is_integer():
        return str(int(threshold)) if go else f"{float(threshold)}"
    return repr(float(threshold))


# ---------------------------------------------------------------------------------------------------------
# Scenarios


@dataclass(frozen=True)
class _SLI:
    name: str
    model: str  # the model whose traffic plays this SLI's scenarios
    objective: float
    min_requests: float
    threshold: float | None
    requests: float  # healthy requests per step, enough for every guard

    @property
    def events_per_request(self) -> float:
        return GAPS_PER_REQUEST if self.name == "inter_token_latency" else 1

    def share(self, burn: float) -> float:
        """The bad share that burns the budget `burn` times as fast as the period allows (at most 1)."""
        return min(1.0, burn * (1 - self.objective))


def _model_for(cfg: ObspackConfig, sli: str, constraints: satisfy.Constraints, taken: set[str]) -> tuple[str, slos.Branch]:
    """A model name for one SLI's scenarios and the settings branch it falls in: the usual model when its
    branch is enabled and the selectors keep it, else one made up for the first branch that can have one."""
    kept = constraints.families.get("model_name", ())
    options = [(satisfy.parse(", ".join(b.matchers)) + kept, b) for b in slos.branches(cfg, sli)]
    for matchers, branch in options:
        if MODELS[sli] not in taken and satisfy.accepts(MODELS[sli], matchers):
            return MODELS[sli], branch
    problems = []
    for matchers, branch in options:
        try:
            return satisfy.pick(matchers, MODELS[sli], taken, f"slos.{sli}: model_name"), branch
        except satisfy.Unsatisfiable as e:
            problems.append(str(e))
    raise satisfy.Unsatisfiable("; ".join(problems) or f"slos.{sli}: no model has this SLO")


def _slis(cfg: ObspackConfig, constraints: satisfy.Constraints) -> list[_SLI]:
    out: list[_SLI] = []
    for sli in slos.enabled_slis(cfg):
        model, branch = _model_for(cfg, sli, constraints, {s.model for s in out})
        guard = branch.min_requests if branch.min_requests is not None else 1 / (1 - branch.objective)
        requests = max(600.0, math.ceil(guard / 20))  # a healthy hour holds three times the guard
        out.append(_SLI(sli, model, branch.objective, guard, branch.threshold, requests))
    return out


class _Suite:
    def __init__(self, cfg: ObspackConfig, builder: Builder) -> None:
        """Raises Unsatisfiable when the selectors leave no room for the scenarios."""
        self.cfg = cfg
        self.builder = builder
        self.slis = _slis(cfg, builder.constraints)
        route = _route(cfg, builder.constraints) if any(s.name == "availability" for s in self.slis) else ""

        def mapping(places: dict[str, Place]) -> satisfy.Mapping:
            return builder.constraints.mapping(
                [
                    {**builder.where(*places[cluster], pod), "model_name": sli.model, "handler": route}
                    for cluster in CLUSTERS
                    for sli in self.slis
                    for pod in (*_pods(sli.model), ROUTER_POD)
                ]
            )

        self.one_cluster = False
        try:
            used = mapping(_places(self.one_cluster))
        except satisfy.Unsatisfiable:
            if not builder.one_cluster:
                raise
            self.one_cluster = True
            used = mapping(_places(self.one_cluster))
        self.writer = _Writer(cfg, builder, route, used, _places(self.one_cluster))
        rules = [r for r in all_alerts(cfg) if r.alert == ALERT]
        self.step_s = 60 // cfg.slos.speedup
        self.base = _window_steps(slos.base_window(cfg), self.step_s)
        self.pairs = [
            _Pair(f"{p.long}/{p.short}", p.severity, _window_steps(p.long, self.step_s),
                  _window_steps(p.short, self.step_s), _window_steps(p.for_, self.step_s), p.factor, rule)
            for p, rule in zip(slos.window_pairs(cfg), rules)
        ]  # fmt: skip

    def predictor(self, sli: _SLI, traffic: Traffic) -> _Predictor:
        """The model of the rules for one SLI's traffic (one per traffic: it caches its verdicts)."""
        return _Predictor(traffic, sli.objective, sli.min_requests, self.base)

    def labels(self, sli: _SLI, cluster: str) -> dict[str, str]:
        place, namespace = self.writer.places[cluster]
        where = {self.cfg.cluster_label: place, "namespace": namespace, "model_name": sli.model}
        return {**self.writer.mapping.labels(where), "slo": sli.name}

    def play(self, name: str, steps: int, plays: dict[str, tuple[str, Traffic]], at: list[int]) -> _Case:
        """Write the traffic of each SLI (per cluster) and expect, at each step of `at`, what the model of
        the rules predicts; a step where it cannot tell is a bug in the scenario."""
        case = _Case(name + (ONE_CLUSTER if self.one_cluster else ""), steps)
        by_sli = {s.name: s for s in self.slis}
        predictors: dict[str, _Predictor] = {}
        for key, (cluster, traffic) in plays.items():
            sli = by_sli[key.split("@")[0]]
            self.writer.write(case, sli.name, sli.model, cluster, traffic, sli.threshold)
            predictors[key] = self.predictor(sli, traffic)
        for step in at:
            firing: list[dict[str, object]] = []
            for key, (cluster, _) in plays.items():
                sli, predictor = by_sli[key.split("@")[0]], predictors[key]
                for pair in self.pairs:
                    verdict = predictor.firing(step, pair)
                    if verdict is None:
                        raise AssertionError(f"{name}: {sli.name} {pair.name} is unclear at step {step}")
                    if verdict:
                        value = predictor.value(step, pair)
                        if value is None:
                            raise AssertionError(
                                f"{name}: {sli.name} {pair.name} has no steady value at {step}"
                            )
                        firing.append(expected_alert(pair.rule, self.labels(sli, cluster), value))
            case.checks.append((step, firing))
        return case

    def _burn(self, sli: _SLI, cluster: str, window: str) -> str:
        sel = c.selector(*(f"{k}={satisfy.literal(v)}" for k, v in self.labels(sli, cluster).items()))
        return f"{c.slo_rate('errors', window)}{sel} / {c.slo_rate('events', window)}{sel} / (1 - {c.SLO_OBJECTIVE}{sel})"

    def _holds(self, case: _Case, sli: _SLI, cluster: str, step: int, expr: str) -> None:
        """A query check that `expr` (a `bool` comparison) is 1 at `step`."""
        case.samples.append(
            {
                "expr": expr,
                "eval_time": self.at(step),
                "exp_samples": [expected_sample("", self.labels(sli, cluster), 1)],
            }
        )

    def burn_above(self, case: _Case, sli: _SLI, cluster: str, step: int, factor: float) -> None:
        """The short window's burn is above `factor` (so what keeps the alert quiet is something else: the
        long window or the guard)."""
        burn = self._burn(sli, cluster, slos.base_window(self.cfg))
        self._holds(case, sli, cluster, step, f"{burn} > bool {factor:g}")

    def burn_near(self, case: _Case, sli: _SLI, cluster: str, step: int, window: str, value: float) -> None:
        """The window's burn is within 10% of `value`."""
        burn = self._burn(sli, cluster, window)
        self._holds(case, sli, cluster, step, f"abs({burn} - {value!r}) < bool {value * 0.1!r}")

    def record_is(self, case: _Case, record: str, sli: _SLI, cluster: str, step: int, value: float) -> None:
        sel = c.selector(*(f"{k}={satisfy.literal(v)}" for k, v in self.labels(sli, cluster).items()))
        case.samples.append(
            {
                "expr": f"{record}{sel}",
                "eval_time": self.at(step),
                "exp_samples": [expected_sample(record, self.labels(sli, cluster), value)],
            }
        )

    def at(self, step: int) -> str:
        return f"{step * self.step_s}s"


def _clear(suite: _Suite, predictor: _Predictor, step: int) -> bool:
    """Whether every pair's verdict is clear at `step`, with a steady value where it fires."""
    verdicts = [predictor.firing(step, p) for p in suite.pairs]
    return None not in verdicts and all(predictor.value(step, p) is not None for p, v in zip(suite.pairs, verdicts) if v)


def _first_clear(
    suite: _Suite, predictor: _Predictor, start: int, end: int, pair: int, others: tuple[_Predictor, ...] = ()
) -> int | None:
    """The first step from `start` at which pair `pair` clearly fires and every pair is clear, for this
    traffic and for the `others` played beside it (SLIs with other objectives cross their guards and
    thresholds at other steps, and each check step is checked for all of them)."""
    for step in range(start, end):
        if predictor.firing(step, suite.pairs[pair]) is not True:
            continue  # the other pairs' verdicts are not needed at this step
        if all(_clear(suite, p, step) for p in (predictor, *others)):
            return step
    return None


def fast_burn(suite: _Suite) -> _Case:
    """Healthy for over an hour, then as many bad events as the lowest objective allows to be bad at all
    (every request bad for a 99% objective, one in ten for 99.9%, so every SLI burns equally fast); the
    same model in the second cluster stays healthy. The page over 1h/5m fires within minutes, the one over
    6h/30m soon after. In a third cluster the same burn comes from pods put to sleep (vLLM's sleep mode:
    the API answers 503 on purpose), which never page; the burning pods of the first report their sleep
    state too, awake."""
    start = suite.pairs[0].long + suite.base + 5
    end = start + 60
    plays, at = {}, [start - 1]
    burn = min(1 / (1 - sli.objective) for sli in suite.slis)
    for sli in suite.slis:
        share = sli.share(burn)
        burning = Traffic.of(
            end, sli.requests, lambda s, sh=share: sh if s > start else 0.0, sli.events_per_request
        )
        healthy = Traffic.of(end, sli.requests, lambda s: 0.0, sli.events_per_request)
        plays[sli.name] = ("prod-a", burning)
        plays[f"{sli.name}@b"] = ("prod-b", healthy)
    predictors = {sli.name: suite.predictor(sli, plays[sli.name][1]) for sli in suite.slis}
    for name, predictor in predictors.items():
        others = tuple(p for other, p in predictors.items() if other != name)
        for pair in (0, 1):  # the fast page first, the slow one soon after
            first = _first_clear(suite, predictor, start, end, pair, others)
            if first is not None:
                at.append(first)
    steps = max(at) + 5
    case = suite.play("VLLMErrorBudgetBurn: a fast burn pages within minutes; the other cluster and engines put "
                      "to sleep stay quiet", steps, plays, sorted(set(at)))  # fmt: skip
    for sli in suite.slis:
        if sli.name == "availability":  # the healthy cluster has no 5xx series: its failures are 0, not missing
            suite.record_is(case, c.slo_rate("errors", slos.base_window(suite.cfg)), sli, "prod-b", start, 0)
        suite.writer.write(case, sli.name, sli.model, ASLEEP, plays[sli.name][1], sli.threshold)
        for cluster, awake in (("prod-a", True), (ASLEEP, False)):
            for pod in _pods(sli.model):
                where = {**suite.writer.where(cluster, pod), "model_name": sli.model, "engine": "0"}
                for state, value in (("awake", awake), ("weights_offloaded", not awake), ("discard_all", False)):
                    suite.writer.vllm(case, f.SLEEP_STATE, where, f"{int(value)}x{steps}", sleep_state=state)
    return case


def slow_burn(suite: _Suite) -> _Case:
    """Four times the sustainable bad share from the start: both tickets fire in turn, no page ever."""
    plays: dict[str, tuple[str, Traffic]] = {}
    horizon = 260
    at: set[int] = set()
    for sli in suite.slis:
        share = sli.share(4)
        plays[sli.name] = ("prod-a", Traffic.of(horizon, sli.requests, lambda s, sh=share: sh, sli.events_per_request))
    predictors = {sli.name: suite.predictor(sli, plays[sli.name][1]) for sli in suite.slis}
    for name, predictor in predictors.items():
        others = tuple(p for other, p in predictors.items() if other != name)
        for pair in (2, 3):
            first = _first_clear(suite, predictor, 1, horizon - 5, pair, others)
            if first is not None:
                at.add(first)
    steps = max(at, default=60) + 5
    plays = {
        k: (cl, Traffic(t.good[: steps + 1], t.bad[: steps + 1], t.requests[: steps + 1]))
        for k, (cl, t) in plays.items()
    }
    return suite.play("VLLMErrorBudgetBurn: a slow burn opens tickets and never pages", steps, plays,
                      sorted(at | {30}))  # fmt: skip


def brief_spike(suite: _Suite) -> _Case:
    """Five steps at 20 times the sustainable bad share in an otherwise healthy hour: the short windows
    see it, the long ones do not, so nothing fires. Clients' 4xx answers never count."""
    spike, steps = 30, 95
    plays = {}
    for sli in suite.slis:
        share = sli.share(20)
        plays[sli.name] = (
            "prod-a",
            Traffic.of(
                steps,
                sli.requests,
                lambda s, sh=share: sh if spike < s <= spike + 5 else 0.0,
                sli.events_per_request,
            ),  # fmt: skip
        )
    case = suite.play("VLLMErrorBudgetBurn: a brief spike does not page", steps, plays,
                      [spike + 3, spike + 6, spike + 15, spike + 30, spike + 60])  # fmt: skip
    page = suite.pairs[0]
    for sli in suite.slis:
        if sli.share(20) / (1 - sli.objective) > page.factor * (1 + MARGIN):
            suite.burn_above(case, sli, "prod-a", spike + 5, page.factor)
    return case


def no_traffic(suite: _Suite) -> _Case:
    """An idle model: its records are 0, not NaN, and nothing fires. A production-stack router failing
    requests in the same namespace has no model, so it counts for none."""
    steps = 20
    plays = {sli.name: ("prod-a", Traffic.of(steps, 0.0, lambda s: 0.0)) for sli in suite.slis}
    case = suite.play(
        "VLLMErrorBudgetBurn: no traffic stays quiet, and no record is NaN", steps, plays, [10, 19]
    )
    router = suite.writer.where("prod-a", ROUTER_POD)
    route = suite.writer.route
    http = {**router, "handler": route, "method": "POST", "status": "5xx"}
    suite.writer.vllm(case, "http_requests_total", http, f"0+50x{steps}", fill=False)
    router_copy = {**router, "server": "http://10.1.2.3:8000"}
    suite.writer.vllm(case, "vllm:num_requests_running", router_copy, f"3x{steps}", fill=False)
    for sli in suite.slis:
        for record in (
            c.slo_rate("events", slos.recorded_windows(suite.cfg)[0]),
            c.slo_rate("errors", slos.period(suite.cfg)),
        ):
            suite.record_is(case, record, sli, "prod-a", 19, 0)
    return case


def low_traffic(suite: _Suite) -> _Case:
    """Every request bad, but so few that the longest window holds half the guard: quiet, although the
    short window burns far above every factor. Inter-token latency has many gaps per request, so its
    guard must count requests, not gaps."""
    plays: dict[str, tuple[str, Traffic]] = {}
    longest = suite.pairs[-1]
    steps = longest.for_ + 20
    for sli in suite.slis:
        rate = sli.min_requests / 2 / longest.long
        plays[sli.name] = ("prod-a", Traffic.of(steps, rate, lambda s: 1.0, sli.events_per_request))
    case = suite.play("VLLMErrorBudgetBurn: low traffic stays quiet", steps, plays, [70, steps - 2])
    for sli in suite.slis:
        if 1 / (1 - sli.objective) > suite.pairs[0].factor * (1 + MARGIN):
            suite.burn_above(case, sli, "prod-a", 60, suite.pairs[0].factor)
    return case


def counter_reset(suite: _Suite) -> _Case:
    """A steady half of the sustainable bad share while both pods restart, the one with the bad events at
    step 30, the other at 50: their counters start over. Rates are taken per series before summing, so
    nothing fires."""
    steps = 75
    plays = {}
    for sli in suite.slis:
        share = sli.share(0.5)
        t = Traffic.of(steps, sli.requests, lambda s, sh=share: sh, sli.events_per_request)
        plays[sli.name] = ("prod-a", Traffic(t.good, t.bad, t.requests, frozenset({30})))
    return suite.play(
        "VLLMErrorBudgetBurn: a pod restart (counter reset) does not page", steps, plays, [31, 33, 40, 52, 70]
    )


def uneven_traffic(suite: _Suite) -> _Case:
    """40 busy healthy steps, then 20 quiet ones with half the events bad. The period's burn is summed
    bad over summed events, about 0.5% of the events here; an average of per-window ratios would say
    about a sixth. Nothing fires: the long windows weigh the quiet steps by their traffic too.

    Under a tight objective (99.99% and tighter) half the quiet events would burn the budget fast enough
    to page, weighted or not; there the quiet steps carry fewer bad events: as many as burn the budget,
    over the whole scenario, at half the lowest factor of the pairs whose `for` fits in it."""
    steps = 60
    plays = {}
    lowest = min(p.factor for p in suite.pairs if p.for_ < steps)
    for sli in suite.slis:
        busy, quiet = sli.requests * 10, sli.requests / 10
        weight = (40 * busy + 20 * quiet) / (20 * quiet)  # all the events over the quiet steps' events
        bad = min(0.5, sli.share(lowest / 2 * weight))
        t = Traffic.of(steps, 1.0, lambda s, bad=bad: 0.0 if s <= 40 else bad, sli.events_per_request)
        scale = [0.0] + [busy if s <= 40 else quiet for s in range(1, steps + 1)]
        plays[sli.name] = (
            "prod-a",
            Traffic([g * k for g, k in zip(t.good, scale)], [b * k for b, k in zip(t.bad, scale)], scale),
        )
    case = suite.play(
        "VLLMErrorBudgetBurn: the period's budget is weighted by traffic", steps, plays, [steps]
    )
    period = slos.period(suite.cfg)
    for sli in suite.slis:
        predictor = suite.predictor(sli, plays[sli.name][1])
        window = predictor._window(steps, _window_steps(period, suite.step_s), suite.base)
        assert window is not None
        suite.burn_near(case, sli, "prod-a", steps, period, window[0])
    return case


SCENARIOS = (fast_burn, slow_burn, brief_spike, no_traffic, low_traffic, counter_reset, uneven_traffic)


def _test_case(suite: _Suite, case: _Case) -> dict[str, object]:
    out: dict[str, object] = {
        "name": case.name,
        "interval": f"{suite.step_s}s",
        "input_series": [{"series": s, "values": v} for s, v in case.series],
        "alert_rule_test": [
            {"eval_time": suite.at(step), "alertname": ALERT, **({"exp_alerts": firing} if firing else {})}
            for step, firing in case.checks
        ],
    }
    if case.samples:
        out["promql_expr_test"] = case.samples
    return out


def slo_rule_tests(cfg: ObspackConfig) -> tuple[dict[str, dict[str, object]], list[str]]:
    """The SLO test file (none when no SLI is enabled), and why an enabled SLO has no test."""
    if not slos.enabled_slis(cfg):
        return {}, []
    builder = Builder(cfg)
    if not builder.usable:
        return {}, [f"no SLO tests: {builder.problem}"]
    try:
        suite = _Suite(cfg, builder)
    except satisfy.Unsatisfiable as e:
        return {}, [f"no SLO tests: {e}"]
    order = [g.name for g in (*all_recording_groups(cfg), *alert_groups(cfg))]
    return {
        FILE: {
            "rule_files": ["../prometheus/recording-rules.yaml", "../prometheus/alerts.yaml"],
            "evaluation_interval": f"{suite.step_s}s",
            "group_eval_order": order,
            "tests": [_test_case(suite, scenario(suite)) for scenario in SCENARIOS],
        }
    }, []
