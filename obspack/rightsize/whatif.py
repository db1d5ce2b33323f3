"""`--what-if SETTING=VALUE`: the backtest of a value the user proposes for one workload (pure).

- `limit`: the window's runs and days replayed against it (backtest.py); it passes when nothing would have
  been killed and no run that started before the window has an unknown model load (unless the value is
  at least the current limit, which that run survived).
- `request`: the days whose working-set p99 was above it; it passes when there are none and it is not above
  the limit in force.
- `gpu-memory-utilization`: the framebuffer peak moves by the change, share for share of the card; the KV
  cache shrinks (or grows) by the same bytes. vLLM does not export the bytes of its KV cache, only their
  share, so a lower value gives a floor for the KV peak (the pool shrinks at least in the ratio of the old and
  new values): it passes when the framebuffer stays under 97% of the card and the KV floor under 100%, and
  the answer says the floor is a floor.
"""

from __future__ import annotations

from obspack.rightsize import backtest, sizing
from obspack.rightsize.backtest import sentence
from obspack.rightsize.model import FB_DANGER, WhatIf, Workload
from obspack.rightsize.settings import OptionError, WhatIfAsk


def pick(found: tuple[Workload, ...], selector: str | None) -> Workload:
    """The workload `selector` names: [CLUSTER/]NAMESPACE/NAME[:CONTAINER] (the kind is not needed); the only
    workload when there is no selector."""
    titles = ", ".join(w.key.title for w in found[:10]) + (", ..." if len(found) > 10 else "")
    if selector is None:
        if len(found) == 1:
            return found[0]
        raise OptionError(
            f"--what-if needs --workload NAMESPACE/NAME: {len(found)} workloads were found"
            + (f" ({titles})" if found else "")
        )
    path, _, container = selector.partition(":")
    parts = path.split("/")
    if len(parts) not in (2, 3) or not all(parts):
        raise OptionError(f"--workload {selector!r}: give [CLUSTER/]NAMESPACE/NAME[:CONTAINER], e.g. llm/vllm-chat")
    cluster = parts[0] if len(parts) == 3 else None
    namespace, name = parts[-2], parts[-1]
    matches = [
        w
        for w in found
        if w.key.namespace == namespace
        and w.key.name == name
        and (cluster is None or w.key.cluster == cluster)
        and (not container or w.key.container == container)
    ]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise OptionError(f"--workload {selector!r}: no such vLLM workload in the window (found: {titles or 'none'})")
    raise OptionError(
        f"--workload {selector!r} names {len(matches)} workloads: "
        + ", ".join(w.key.title for w in matches)
        + " (add the cluster, CLUSTER/NAMESPACE/NAME, or the container, NAMESPACE/NAME:CONTAINER)"
    )


def what_if(found: tuple[Workload, ...], ask: WhatIfAsk) -> WhatIf:
    w = pick(found, ask.workload)
    if ask.setting == "limit":
        return _limit(w, ask)
    if ask.setting == "request":
        return _request(w, ask)
    return _utilization(w, ask)


def _limit(w: Workload, ask: WhatIfAsk) -> WhatIf:
    m = w.memory
    request = m.request if m.request is not None else m.current_request
    bt = backtest.replay(w.history, ask.value, request)
    survived = m.current_limit is not None and ask.value >= m.current_limit
    unknown = bt.loads_unknown > 0 and not survived
    passes = not bt.kills and not unknown
    answer = sentence(bt, ask.text)
    if unknown:
        answer += (
            f"; not proven: {'1 run' if bt.loads_unknown == 1 else f'{bt.loads_unknown} runs'} started before the window "
            "with no model load in the data, and a limit under the current one may kill the next start"
        )
    return WhatIf(w.key, ask.setting, ask.value, ask.text, passes, answer, bt)


def _request(w: Workload, ask: WhatIfAsk) -> WhatIf:
    m = w.memory
    limit = m.limit if m.limit is not None else m.current_limit
    bt = backtest.replay(w.history, limit, ask.value)
    above = limit is not None and ask.value > limit
    passes = bt.days_over_request == 0 and not above
    answer = f"with {ask.text} requested, the working set's p99 was above it on {bt.days_over_request} of {bt.days} days"
    if above:
        answer += f"; it is above the limit in force ({sizing.quantity(limit)}), which Kubernetes refuses"  # type: ignore[arg-type]
    return WhatIf(w.key, ask.setting, ask.value, ask.text, passes, answer, bt)


def _utilization(w: Workload, ask: WhatIfAsk) -> WhatIf:
    g = w.gpu
    current = g.gpu_memory_utilization if g is not None else None
    ratio = g.peak_ratio if g is not None else None
    if g is None or current is None or ratio is None:
        answer = "no answer: the framebuffer (dcgm-exporter) or vllm:cache_config_info of this workload is not in the data"
        return WhatIf(w.key, ask.setting, ask.value, ask.text, False, answer)
    projected = ratio + ask.value - current
    kv = g.kv_peak * current / ask.value if g.kv_peak is not None else None
    facts: tuple[tuple[str, float | None], ...] = (
        ("current", current),
        ("framebuffer_peak_ratio", projected),
        ("kv_peak_at_least" if ask.value < current else "kv_peak_at_most", kv),
    )
    problems = []
    if projected > FB_DANGER:
        problems.append(f"the framebuffer would have peaked at {projected:.0%} of the card (CUDA out-of-memory above {FB_DANGER:.0%})")
    if kv is not None and ask.value < current and kv >= 1:
        problems.append(f"the KV cache would have run out (its peak of {g.kv_peak:.0%} needs more than the smaller pool holds)")
    if problems:
        answer = f"with {ask.value:g} (now {current:g}): " + "; ".join(problems)
        return WhatIf(w.key, ask.setting, ask.value, ask.text, False, answer, facts=facts)
    answer = f"with {ask.value:g} (now {current:g}), the framebuffer would have peaked at {projected:.0%} of the card"
    if kv is not None and ask.value < current:
        answer += (
            f"; the KV cache at {kv:.0%} at least at its peak (a floor: how much more depends on the model's weights, "
            "which vLLM does not export), so it is not proven"
        )
        return WhatIf(w.key, ask.setting, ask.value, ask.text, False, answer, facts=facts)
    if kv is not None:
        answer += f", the KV cache at {kv:.0%} at most at its peak"
    return WhatIf(w.key, ask.setting, ask.value, ask.text, True, answer, facts=facts)
