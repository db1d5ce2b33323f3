from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/inference-pool-saturated.md.j2'

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
    l_0_match = resolve('match')
    l_0_plane = l_0_fires_when = l_0_related = l_0_pool = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/inference-pool-saturated.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = "GPU memory (the KV cache of the pool's engines)"
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(("the pool's average KV cache utilisation is above ", context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'kv_ratio')), ' or its average waiting queue above ', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'queue_size'), ' requests per endpoint, ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['InferenceGatewayFlowControlRejections', 'VLLMKVCacheUsageHigh', 'VLLMRequestQueueBacklog', 'VLLMAutoscalerMaxedOut']
    context.vars['related'] = l_0_related
    context.exported_vars.add('related')
    l_0_pool = context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', source='epp', extra=('name="<pool>"',))
    context.vars['pool'] = l_0_pool
    context.exported_vars.add('pool')
    yield from parent_template.root_render_func(context)

def block_now(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield 'The pool has more work than its endpoints hold: requests queue and time to first token grows. Add\ncapacity first, if the cluster has GPUs for it:\n\n```sh\nkubectl -n <namespace> get inferencepool <pool> -o jsonpath=\'{.spec.selector.matchLabels}{"\\n"}\'\nkubectl -n <namespace> get deploy -l <selector>\nkubectl -n <namespace> scale deploy -l <selector> --replicas=<replicas>\n```\n\nIf an autoscaler owns the replica count, check whether it is at its maximum'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMAutoscalerMaxedOut', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMAutoscalerMaxedOut', _block_vars=_block_vars))
        yield ')'
    yield 'and raise the maximum instead.\n'

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'The EPP averages, over the pool\'s endpoints, the KV cache use and the waiting queue it reads from each\nvLLM pod. `signal="kv_cache"`: the engines\' KV caches are nearly full on average, so new requests wait\nor preempt others. `signal="queue"`: requests wait in the engines\' queues on average. Either way the\npicker has no endpoint with room left, whatever it scores.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield 'Time to first token and end-to-end latency grow for every model of the pool; with flow control on,\nrequests beyond its capacity are rejected with 429'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'InferenceGatewayFlowControlRejections', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'InferenceGatewayFlowControlRejections', _block_vars=_block_vars))
        yield ')'
    yield '.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pool = resolve('pool')
    pass
    yield "1. The pool's averages and how uneven its endpoints are (a high spread means one hot endpoint, not a full pool):\n\n   ```promql\n   llm_d_epp_average_kv_cache_utilization"
    yield str((undefined(name='pool') if l_0_pool is missing else l_0_pool))
    yield ' or inference_pool_average_kv_cache_utilization'
    yield str((undefined(name='pool') if l_0_pool is missing else l_0_pool))
    yield '\n   ```\n\n   ```promql\n   llm_d_epp_per_endpoint_queue_size'
    yield str((undefined(name='pool') if l_0_pool is missing else l_0_pool))
    yield ' or inference_pool_per_pod_queue_size'
    yield str((undefined(name='pool') if l_0_pool is missing else l_0_pool))
    yield "\n   ```\n\n2. The InferenceObjectives' priorities decide who waits: the checks below.\n\n"
    template = environment.get_template('runbooks/_inference-pool.md.j2', 'runbooks/inference-pool-saturated.md.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {}))
    try:
        for event in gen:
            yield event
    finally: gen.close()

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **More traffic than the pool's replicas serve.**\n2. **Replicas lost** (crashes, evictions): fewer endpoints carry the same load.\n3. **Longer prompts or outputs** than the pool was sized for fill the KV caches.\n4. **One endpoint takes most requests** (prefix-cache affinity): the average hides the spread.\n"

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **Traffic:** add replicas, or raise the autoscaler's maximum.\n2. **Lost replicas:** fix what removed them.\n3. **Long requests:** give the engines more KV cache (`--gpu-memory-utilization`, a larger GPU,\n   tensor parallelism), or cap `max_tokens`.\n4. **Imbalance:** lower the weight of the prefix-cache scorer in the EPP's configuration.\n"

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pool = resolve('pool')
    pass
    yield 'Both averages back below the thresholds for the pool:\n\n```promql\nllm_d_epp_average_queue_size'
    yield str((undefined(name='pool') if l_0_pool is missing else l_0_pool))
    yield ' or inference_pool_average_queue_size'
    yield str((undefined(name='pool') if l_0_pool is missing else l_0_pool))
    yield '\n```\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "- No GPU capacity for more replicas: to the cluster platform team and the model's owners.\n"

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=18&2=21&3=24&4=27&5=30&6=35&16=46&19=53&25=63&27=74&29=81&33=91&37=95&42=99&44=106&50=116&57=126&61=136&64=141'