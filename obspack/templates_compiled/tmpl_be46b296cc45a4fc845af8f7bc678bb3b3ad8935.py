from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-cost-per-million-tokens-rising.md.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    parent_template = None
    l_0_pct = resolve('pct')
    l_0_t = resolve('t')
    l_0_held = resolve('held')
    l_0_alert = resolve('alert')
    l_0_plane = l_0_fires_when = l_0_related = missing
    try:
        t_1 = environment.filters['format']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'format' found.")
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-cost-per-million-tokens-rising.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'none; this is about cost: each GPU-hour of the model serves fewer tokens than the week before'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('the GPU-hours a model held per million tokens it served over the last 7 days are more than ', context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'increase')), ' above those of the 7 days before, in weeks where it served at least ', t_1('%g', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'min_tokens_per_second')), ' tokens per second on average, ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMGPUsMostlyIdle', 'VLLMRequestPreemptions', 'VLLMPrefixCacheHitRateLow', 'VLLMErrorBudgetBurn']
    context.vars['related'] = l_0_related
    context.exported_vars.add('related')
    yield from parent_template.root_render_func(context)

def block_now(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Nothing is broken for users: this is a ticket. Find what changed in the week the cost rose.\n\n1. On the cost page\'s "Cost per million tokens" graph, find the day the rise started and line it up with\n   the model\'s changes that day: a release, engine flags, replicas, a new client.\n2. If the idle share rose with it (Confirm 2), the traffic fell and the replicas stayed: run\n   `obspack rightsize --autoscaling` for the replicas the peak needed (fix 1).\n'

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "A million tokens of `<model>` in `<namespace>` took more GPU time this week than last week: with the same\nprices, each million tokens cost that much more. The comparison is in GPU-hours so that a price changed\nin obspack.yaml (or OpenCost's prices moving) does not fire it; the money follows at constant prices.\nIdle GPUs count: a model that kept its replicas while its traffic fell costs more per token too.\n"

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'None on users by itself, unless the cause is also slower serving (then the latency SLOs say so). The cost\nof the model rose by the share in the alert at the same traffic.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_on = resolve('on')
    l_0_c = resolve('c')
    l_0_match = resolve('match')
    pass
    yield '1. GPU-hours per million tokens per day over the two weeks (a step points at the day it changed):\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') (sum_over_time('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MODEL_GPUS_ALLOCATED'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', _block_vars=_block_vars))
    yield '[1d]))\n   / on ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ')\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') (sum_over_time('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MODEL_TOKENS'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', _block_vars=_block_vars))
    yield '[1d]))\n   * 1e6 / 3600\n   ```\n\n2. Whether the GPUs sat idle more (the traffic fell, the replicas stayed):\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', 'state', _block_vars=_block_vars))
    yield ') (avg_over_time('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MODEL_GPUS_ALLOCATED'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', _block_vars=_block_vars))
    yield '[1d]))\n   ```\n\n3. Batching: requests running per pod while serving (fewer per pod means each GPU-second makes fewer\n   tokens):\n\n   ```promql\n   avg by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') ('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'RUNNING'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ' > 0)\n   ```\n'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield '1. **The traffic fell and the replicas stayed:** the idle share rose (Confirm 2'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMGPUsMostlyIdle', _block_vars=_block_vars):
        pass
        yield ';\n   '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMGPUsMostlyIdle', _block_vars=_block_vars))
        yield ' may fire too'
    yield ').\n2. **A release or engine setting that serves slower:** a new vLLM or model version, a lower\n   `--max-num-seqs` or `--max-num-batched-tokens`, CUDA graphs or chunked prefill switched off, a larger\n   tensor-parallel degree.\n3. **Lost batching:** fewer requests in flight per pod (a router that now spreads traffic over more pods,\n   clients that stopped sending concurrently), or preemptions that redo work'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMRequestPreemptions', _block_vars=_block_vars):
        pass
        yield '   ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMRequestPreemptions', _block_vars=_block_vars))
        yield ')'
    yield '.\n4. **A prefix cache that stopped hitting**'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMPrefixCacheHitRateLow', _block_vars=_block_vars):
        pass
        yield '   ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMPrefixCacheHitRateLow', _block_vars=_block_vars))
        yield ')'
    yield ': every prompt is computed again.\n5. **A different traffic mix:** longer prompts or outputs per request cost more GPU time per token at\n   high batch sizes.\n'

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. **Idle replicas:** fewer replicas or an autoscaler. `obspack rightsize --autoscaling` prints how many\n   replicas the traffic needed at its peak and what running that many saves per month.\n2. **A slower release:** roll back, or compare the engine flags of the two versions; `obspack rightsize`\n   flags releases that raised memory, and its knobs (`--max-num-seqs`, `--gpu-memory-utilization`) with\n   the KV cache the traffic used.\n3. **Lost batching:** look at how the router or gateway spreads requests; fewer, busier replicas cost less\n   per token.\n4. **The prefix cache:** see why it stopped hitting (the KV and prefix cache page: hit rate per pod, and\n   whether the prompts still share their prefix).\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. The daily GPU-hours per million tokens (Confirm 1) back to the level of the week before.\n2. The cost page\'s "Spend per model" table over the last 7 days: its cost per million input and output\n   tokens falls.\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "- The model's owner for releases and engine settings; the platform team for the router or gateway.\n"

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=23&2=26&3=29&4=32&5=37&13=47&19=57&23=67&27=79&28=84&29=86&36=91&43=96&46=102&47=113&48=116&53=119&54=122&55=125&56=128&60=132&71=142&76=152'