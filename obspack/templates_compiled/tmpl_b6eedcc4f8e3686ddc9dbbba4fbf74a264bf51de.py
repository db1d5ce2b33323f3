from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-prefix-cache-hit-rate-low.md.j2'

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
    l_0_plane = l_0_fires_when = l_0_related = l_0_pm = missing
    try:
        t_1 = environment.filters['format']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'format' found.")
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-prefix-cache-hit-rate-low.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'GPU VRAM, inside the KV cache; an efficiency issue, not an outage'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('fewer than ', context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio')), ' of the prompt tokens looked up in the prefix cache were found there over the last ', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'), ' (pods with more than ', t_1('%g', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'min_query_tokens_per_second')), ' looked-up tokens per second, prefix caching on), ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMKVCacheUsageHigh', 'VLLMKVCacheUsageCritical', 'VLLMRequestQueueBacklog']
    context.vars['related'] = l_0_related
    context.exported_vars.add('related')
    l_0_pm = context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name')
    context.vars['pm'] = l_0_pm
    context.exported_vars.add('pm')
    yield from parent_template.root_render_func(context)

def block_now(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Nothing urgent: requests are served, with more prefill work than needed. Check one thing: did the rate drop\nwith a rollout or a routing change (Confirm shows the hit rate over the last day)? If so, revert that change;\notherwise improve the hit rate during working hours (Fix).\n'

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pct = resolve('pct')
    l_0_t = resolve('t')
    pass
    yield 'With prefix caching on, vLLM keeps the KV blocks of prompts it has processed and reuses them when a new\nprompt starts with exactly the same tokens (a shared system prompt, few-shot examples, the earlier turns of\na conversation). The prefill of the shared part is then skipped. Here, less than '
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'), _block_vars=_block_vars))
    yield ' of the\nprompt tokens looked up were found, so most prompts are processed from scratch.\n\nKeeping the cache costs little: blocks kept only for reuse count as free and are handed out on demand,\nso turning the feature off does not make the KV cache bigger. What low hits cost is the speed-up you are\nnot getting, plus the hashing of every prompt block.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_alert = resolve('alert')
    pass
    yield 'None directly; this is `'
    yield str(environment.getattr(environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'severity'), 'value'))
    yield '`. With better hits, time to first token and GPU work per\nrequest would be lower. Handle it during working hours.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_prefix_ratio = resolve('prefix_ratio')
    l_0_t = resolve('t')
    l_0_c = resolve('c')
    l_0_pm = resolve('pm')
    l_0_match = resolve('match')
    try:
        t_2 = environment.filters['indent']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No filter named 'indent' found.")
    pass
    yield "1. The hit ratio over the alert's window, and over the last five minutes:\n\n   ```promql\n   "
    yield str(t_2(context.call((undefined(name='prefix_ratio') if l_0_prefix_ratio is missing else l_0_prefix_ratio), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'), _block_vars=_block_vars), 3))
    yield '\n   ```\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'PREFIX_HIT_RATIO'))
    yield str((undefined(name='pm') if l_0_pm is missing else l_0_pm))
    yield '\n   ```\n\n2. How prefix caching is configured (`enable_prefix_caching`, `prefix_caching_hash_algo`, `block_size`):\n\n   ```promql\n   vllm:cache_config_info'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', source='vllm', _block_vars=_block_vars))
    yield '\n   ```\n\n3. The hit ratio of every replica of the model. All low with many replicas: requests with the same\n   prefix are spread across replicas, and each one warms its own cache.\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'PREFIX_HIT_RATIO'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', _block_vars=_block_vars))
    yield '\n   ```\n\n4. Is the cache under pressure, so that cached blocks are reused for new requests before anyone hits them?\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'KV_USAGE'))
    yield str((undefined(name='pm') if l_0_pm is missing else l_0_pm))
    yield '\n   ```\n\n5. Look at a few real prompts with the owners of the application. The cache matches from the first token\n   on, so a timestamp, a request id or a user name near the start of the system prompt defeats it.\n'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. **The prompts share nothing.** Unique documents or one-off questions; there is nothing to reuse.\n2. **Something changes at the start of every prompt.** A date, a request id or a user name in the system\n   prompt, or tools listed in a different order each time; everything after the first difference misses.\n3. **Routing spreads the same prefix over many replicas.** Round-robin routing sends each conversation\n   turn to a different pod, and each pod has a cold cache.\n4. **The KV cache is too full to keep anything.** Running requests take the blocks that held reusable\n   prefixes.\n'

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    l_0_t = resolve('t')
    pass
    yield "1. **Put stable content first.** System prompt, tool definitions and shared documents at the start;\n   dates, ids and the user's question at the end. This is a change in the application, usually the\n   biggest win.\n2. **Route by prefix or session.** Use prefix-aware or session-affinity routing in the gateway or router,\n   so that requests that share a prefix reach the same replica.\n3. **Relieve the KV cache** when it is full, so that cached prefixes survive until they are reused"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMKVCacheUsageHigh', _block_vars=_block_vars):
        pass
        yield '; see\n   '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMKVCacheUsageHigh', _block_vars=_block_vars))
    yield '.\n4. **Turn prefix caching off** when the workload has no shared prefixes: `--no-enable-prefix-caching`. It\n   saves the hashing work. The alert stops by itself, because the pod then reports\n   `enable_prefix_caching="False"`.\n5. **Accept the workload\'s rate.** If the hit rate is as good as this workload allows, set a lower\n   `alerts.VLLMPrefixCacheHitRateLow.ratio` in the obspack config (now '
    yield str(environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'))
    yield '), or disable the alert\n   for this model.\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_t = resolve('t')
    l_0_pct = resolve('pct')
    l_0_prefix_ratio = resolve('prefix_ratio')
    pass
    yield 'Over a full window of '
    yield str(environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'))
    yield ' after the change, the hit ratio stays above '
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'), _block_vars=_block_vars))
    yield ', or the pod\nreports prefix caching off:\n\n```promql\n'
    yield str(context.call((undefined(name='prefix_ratio') if l_0_prefix_ratio is missing else l_0_prefix_ratio), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'), _block_vars=_block_vars))
    yield '\n```\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Not urgent. Take the findings from step 5 of Confirm to the owners of the application (prompt layout) or of\nthe gateway (routing) during working hours.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=24&2=27&3=30&4=33&5=36&6=41&11=51&14=62&21=65&22=75&25=78&29=98&33=100&39=103&46=105&52=108&58=112&67=122&73=134&74=137&79=139&82=142&83=154&87=158&90=161'