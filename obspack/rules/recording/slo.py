"""SLO records: per cluster, namespace, model and SLO (the `slo` label), never per pod.

One group, in order, so that every long window reads records of its own group and the burn alert crosses
a single group boundary:
1. From the raw series, once per evaluation and over the base window (5m): bad events, all events and
   requests per second, plus the model's objective and low-traffic guard as constant series. Each
   settings branch (obspack/slos.py) has its own expressions, with its own model_name matchers and
   threshold, joined with `or` into one rule per record.
2. Every longer window as the average of the base-window rates over that window: a traffic-weighted
   ratio of summed errors to summed events, never an average of ratios. Rates of counters are never
   NaN, so neither are these averages, even for a model without traffic.

The period's records (30d) sit in a group of their own: they read a month of history, and only the SLO
page needs them, so they never delay the alert's records.

How each SLI counts, per series before any sum (so a restarting pod's counter reset stays its own):
- Latency: bad = count - bucket{le=threshold}; a pod that lacks that bucket (an older vLLM, custom
  buckets) is left out of both sides rather than counted as all slow. `le` matches both the Python and
  Prometheus 3 spelling (1.0) and the Go one (1). Inter-token latency takes inter_token_latency_seconds
  and falls back per series to time_per_output_token_seconds, so 0.10-0.11 pods that emit both count once.
- Availability: http_requests_total (vLLM 0.8.3 and later) with a 5xx status is bad. It has no
  model_name: each pod's rate is joined to the model its engine serves (vllm:num_requests_running); the
  production-stack router, which has no model_name, drops out of the join.
- Sleep mode: a pod whose engine slept at any sample of the window is left out of both sides (its API
  answers 503 on purpose while it sleeps; engines before 0.11.1 report no sleep state and always count).
- Requests (the low-traffic guard counts these): the events of time to first token and availability,
  which are requests; inter-token latency counts token gaps, so its guard counts first tokens.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from obspack import conventions as c
from obspack import slos
from obspack.catalogue import vllm_latency
from obspack.config import ObspackConfig, promql_string
from obspack.rules import roles
from obspack.rules.model import RecordingRule, RuleGroup
from obspack.rules.recording import vllm

MODEL = ("namespace", "model_name")
FAILED = 'status=~"5.."'  # grouped (5xx, the instrumentator's default) or exact (503) codes


def le_matcher(threshold: float) -> str:
    """The bucket of a bound: `le="2.5"`, or both spellings of a whole number: `le=~"1(\\.0)?"`."""
    if float(threshold).is_integer():
        return f'le=~"{int(threshold)}(\\\\.0)?"'
    return f"le={promql_string(repr(float(threshold)))}"


@dataclass(frozen=True)
class Scope:
    """What to sum by, and extra matchers for engine series and for per-pod HTTP series (dashboards bind
    them to their variables; the recording rules need none)."""

    keep: tuple[str, ...] = MODEL
    engine: str = ""
    pod: str = ""
    # Leave out the pods that serve no user's request in each sum. False where `keep` holds the pod and the
    # caller leaves them out once, after combining the sums (_users, for the whole expression).
    users_only: bool = True


RECORDS = Scope()


def _users(cfg: ObspackConfig, expr: str, window: str, engine: str) -> str:
    """`expr` (per pod, or per series) without the pods that slept within the window: a sleeping engine
    answers 503 on purpose and serves nothing (its events are no one's failure). Pods that only prefill are
    left out too (obspack/rules/roles.py): they serve the decode pods' internal one-token requests, so
    counting them would count each user request twice and mix a prefill step's latency into the users' time
    to first token; the decode pod's own request stands for the user's."""
    awake = vllm.unless_asleep(cfg, f"(\n{_indent(expr)}\n)", window, engine)
    return roles.without(cfg, awake, "prefill")


def _sum(cfg: ObspackConfig, scope: Scope, expr: str, window: str) -> str:
    """Per-series rates summed by the scope's labels, the users' pods only (_users) unless the caller
    leaves the others out itself."""
    users = _users(cfg, expr, window, scope.engine) if scope.users_only else expr
    return f"sum by ({c.by(cfg, *scope.keep)}) (\n{_indent(users)}\n)"


def _indent(text: str) -> str:
    return textwrap.indent(text, "  ")


def _histograms(cfg: ObspackConfig, sli: str, branch: slos.Branch, window: str, scope: Scope) -> list[tuple[str, str]]:
    """(count rate, threshold bucket) of each name the SLI's histogram had across vLLM releases; an event
    counts where its histogram has the threshold's bucket (`and ignoring (le)`)."""
    assert branch.threshold is not None
    le = le_matcher(branch.threshold)
    return [
        (
            f"rate({metric}_count{vllm.sel(cfg, *branch.matchers, scope.engine)}[{window}])",
            f"{metric}_bucket{vllm.sel(cfg, *branch.matchers, scope.engine, le)}",
        )
        for metric in vllm_latency.SLO_HISTOGRAMS[sli]
    ]


def _every(cfg: ObspackConfig, scope: Scope, histograms: list[tuple[str, str]], window: str) -> str:
    legs = [f"(\n  {count}\n  and ignoring (le)\n  {bucket}\n)" for count, bucket in histograms]
    return _sum(cfg, scope, "\nor\n".join(legs), window)


def _latency(cfg: ObspackConfig, sli: str, branch: slos.Branch, window: str, scope: Scope) -> tuple[str, str]:
    """(bad, all) events per second: per series, then summed."""
    histograms = _histograms(cfg, sli, branch, window, scope)
    bad = [f"(\n  {count}\n  - ignoring (le)\n  rate({bucket}[{window}])\n)" for count, bucket in histograms]
    return _sum(cfg, scope, "\nor\n".join(bad), window), _every(cfg, scope, histograms, window)


def latency_events(cfg: ObspackConfig, sli: str, branch: slos.Branch, window: str, scope: Scope = RECORDS) -> tuple[str, str]:
    """(bad, all) events per second of a latency SLI over `window`, as the SLO records count them."""
    return _latency(cfg, sli, branch, window, scope)


def _http(cfg: ObspackConfig, branch: slos.Branch, window: str, scope: Scope) -> tuple[str, str]:
    """(5xx, all) HTTP requests per second, each pod's rate joined to its served model. A pod that answered
    no 5xx yet has no 5xx series at all (the instrumentator creates a status's series at its first
    request): its failures are missing here, and 0 wherever the callers count requests."""
    pod = c.by(cfg, "namespace", "pod")
    routes = f"handler=~{promql_string(cfg.slos.availability.handler_regex)}"
    served = vllm.pod_model(cfg, f"vllm:num_requests_running{vllm.sel(cfg, *branch.matchers, scope.engine)}")
    scraped = f"vllm:num_requests_running{vllm.sel(cfg, scope.engine)}"

    def joined(*status: str) -> str:
        http = f"http_requests_total{c.selector(cfg.selectors.vllm, routes, *status, scope.pod)}"
        return _sum(
            cfg,
            scope,
            f"sum by ({pod}) (\n{_indent(counter_increase(cfg, http, scraped, window))}\n)\n"
            f"* on ({pod}) group_left (model_name)\n{served}",
            window,
        )

    return joined(FAILED), joined()


def _availability(cfg: ObspackConfig, branch: slos.Branch, window: str, scope: Scope) -> tuple[str, str]:
    """(failed, all) HTTP requests per second (`_http`); a pod with requests and no 5xx series fails none."""
    failed, every = _http(cfg, branch, window, scope)
    return f"{failed}\nor\n0 * {every}", every


def counter_increase(cfg: ObspackConfig, series: str, scraped: str, window: str) -> str:
    """Per series, the increase per second of a counter over `window`, counting the first value of a series
    that appeared within it. `rate()` takes a series' first sample as its starting point, so a status's
    series that appears with 40 failures (created at the first one) would count none of those 40, and
    nothing at all until its second sample. A series that was not there one window ago, and has fewer
    samples in the window than its pod's engine gauge (`scraped`: the pod was scraped before the series
    appeared), started from 0 within the window: its value now is its increase, which is what `rate()`
    gives for the same counter written as 0 before it appeared. A series as old as its pod's scrapes (a
    new Prometheus, a pod scraped for the first time) may carry history from before: `rate()` then. A
    dashboard's `$__rate_interval` is no number of seconds: there, `rate()` alone."""
    rate = f"rate({series}[{window}])"
    try:
        seconds = slos.seconds(window)
    except ValueError:
        return rate
    pod = c.by(cfg, "namespace", "pod")
    appeared = (
        f"({series} unless {series} offset {window}) / {seconds}\n"
        f"and\n"
        f"count_over_time({series}[{window}])\n"
        f"< on ({pod}) group_left ()\n"
        f"max by ({pod}) (count_over_time({scraped}[{window}]))"
    )
    return f"(\n{_indent(appeared)}\n)\nor\n{rate}"


def sli_rates(
    cfg: ObspackConfig, sli: str, branch: slos.Branch, window: str, scope: Scope = RECORDS
) -> tuple[str, str]:
    """(bad, all) events per second of one SLI, for the models of one branch."""
    if sli == "availability":
        return _availability(cfg, branch, window, scope)
    return _latency(cfg, sli, branch, window, scope)


def pod_bad_share(cfg: ObspackConfig, sli: str, window: str, engine: str, pod: str) -> str:
    """Per pod and model, the share of its events that miss the SLO, each model with its own settings:
    for dashboards and runbooks (`engine` and `pod` narrow engine and HTTP series)."""
    scope = Scope(keep=("namespace", "pod", "model_name"), engine=engine, pod=pod, users_only=False)
    share = _availability_share if sli == "availability" else _latency_share
    parts = [f"(\n{_indent(share(cfg, sli, branch, window, scope))}\n)" for branch in slos.branches(cfg, sli)]
    # The pods that serve no user left out once, from the shares (per pod, as the records leave them out
    # of each sum): the numerator and the denominator read the same rates, and the exclusions, which read
    # the pods' labels and sleep states, cost as much again each time.
    return _users(cfg, "\nor\n".join(parts), window, engine)


def _latency_share(cfg: ObspackConfig, sli: str, branch: slos.Branch, window: str, scope: Scope) -> str:
    """1 - fast / all per pod, over the events the records count (`_latency`) with each rate read once: the
    bad events as the records write them (all - fast, per series) read the counts once more and match every
    engine series twice. A pod with no events has no share."""
    histograms = _histograms(cfg, sli, branch, window, scope)
    fast = _sum(cfg, scope, "\nor\n".join(f"rate({bucket}[{window}])" for _, bucket in histograms), window)
    every = _every(cfg, scope, histograms, window)
    return f"1 - (\n{_indent(fast)}\n  /\n  (\n{_indent(_indent(every))}\n    > 0\n  )\n)"


def _availability_share(cfg: ObspackConfig, sli: str, branch: slos.Branch, window: str, scope: Scope) -> str:
    """failed / all per pod, and 0 where a pod answered requests and no 5xx series exists yet (`_availability`):
    the requests are read twice, where the records' `(failed or 0 * all) / all` reads them three times. A pod
    with no requests has no share."""
    failed, every = _http(cfg, branch, window, scope)
    answered = f"(\n{_indent(every)}\n  > 0\n)"
    return f"{failed}\n/\n{answered}\nor\n0 * {answered}"


def _requests(cfg: ObspackConfig, sli: str, branch: slos.Branch, window: str) -> str:
    """Requests per second, the low-traffic guard's count. Time to first token and availability count
    requests already (their events record, made just before); inter-token latency counts token gaps, so
    its guard counts the model's first tokens instead."""
    if sli == "inter_token_latency":
        return vllm.counter_rate(cfg, (f"{vllm_latency.TTFT}_count",), window, RECORDS.keep, *branch.matchers)
    return _own(c.slo_rate("events", window), sli, branch)


def _own(record: str, sli: str, branch: slos.Branch) -> str:
    """A record of this group, narrowed to one SLI and the models of one branch."""
    return f"{record}{c.selector(f'slo={promql_string(sli)}', *branch.matchers)}"


def branch_rules(cfg: ObspackConfig, sli: str, branch: slos.Branch) -> list[RecordingRule]:
    """The base-window records of one SLI for the models of one branch."""
    window = slos.base_window(cfg)
    bad, every = sli_rates(cfg, sli, branch, window)
    label = (("slo", sli),)
    requests = c.slo_rate("requests", window)
    # Constants per model, carried by the model's own series (its events, from raw series) so they keep its
    # labels and come one stage after the raw rates.
    mine = _own(c.slo_rate("events", window), sli, branch)
    guard = f"{branch.min_requests:g}" if branch.min_requests is not None else f"1 / (1 - {branch.objective})"
    return [
        RecordingRule(record=c.slo_rate("errors", window), expr=bad, labels=label),
        RecordingRule(record=c.slo_rate("events", window), expr=every, labels=label),
        RecordingRule(record=requests, expr=_requests(cfg, sli, branch, window), labels=label),
        RecordingRule(record=c.SLO_OBJECTIVE, expr=f"0 * {mine} + {branch.objective}", labels=label),
        RecordingRule(record=c.SLO_MIN_REQUESTS, expr=f"0 * {mine} + {guard}", labels=label),
    ]


def window_rules(cfg: ObspackConfig, windows: tuple[str, ...]) -> list[RecordingRule]:
    """Longer windows from the base-window records: the mean rate over the window, for every SLI at once."""
    base = slos.base_window(cfg)
    return [
        RecordingRule(record=c.slo_rate(metric, w), expr=f"avg_over_time({c.slo_rate(metric, base)}[{w}])")
        for w in windows
        for metric in ("errors", "events")
    ]


def sli_rules(cfg: ObspackConfig, sli: str) -> list[RecordingRule]:
    """The base-window records of one SLI: one rule per record, the union (`or`) of every settings
    branch's expression. The branches' model_name matchers are disjoint, so the union never merges two
    branches' series; and one rule per record name keeps the group within Mimir's 20 rules and
    `promtool check rules` free of duplicate rules, however many `slos.models` entries there are."""
    per_branch = [branch_rules(cfg, sli, branch) for branch in slos.branches(cfg, sli)]
    if len(per_branch) == 1:
        return per_branch[0]
    return [
        RecordingRule(
            record=rules[0].record,
            expr="\nor\n".join(f"(\n{textwrap.indent(r.expr, '  ')}\n)" for r in rules),
            labels=rules[0].labels,
        )
        for rules in zip(*per_branch, strict=True)
    ]


def _stage(rule: RecordingRule) -> int:
    """Rules read what earlier stages wrote: rates from raw series, then what reads the events (the guard's
    requests and the per-model constants). Every SLI and model branch writes the same record names, so a
    whole stage comes before the next: a rule never reads a record that a later rule of the group writes
    for another branch, and so never a value one evaluation old."""
    return 0 if rule.record.startswith((c.slo_rate("errors", ""), c.slo_rate("events", ""))) else 1


def groups(cfg: ObspackConfig) -> list[RuleGroup]:
    """One group per SLI with its base-window records (five rules, whatever the model branches), then the
    longer windows and the period, for the SLO page."""
    slis = slos.enabled_slis(cfg)
    if not slis:
        return []

    def group(suffix: str, rules: list[RecordingRule]) -> RuleGroup:
        return RuleGroup(name=f"{c.GROUP_PREFIX}-slo{suffix}.rules", rules=tuple(rules), interval=cfg.rule_interval)

    per_sli = [
        group(
            f"-{sli.replace('_', '-')}",
            sorted(sli_rules(cfg, sli), key=_stage),
        )
        for sli in slis
    ]
    # The longer windows as records, for the SLO page only: the alert averages the base window itself.
    return [
        *per_sli,
        group("-windows", window_rules(cfg, slos.recorded_windows(cfg))),
        group("-period", window_rules(cfg, (slos.period(cfg),))),
    ]
