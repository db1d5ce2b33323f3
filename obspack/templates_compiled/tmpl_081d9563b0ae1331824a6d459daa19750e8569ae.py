from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-kv-offload-allocation-failures.md.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    parent_template = None
    l_0_t = resolve('t')
    l_0_rate_words = resolve('rate_words')
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
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-kv-offload-allocation-failures.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'host RAM (the CPU offload tier) or the tier behind it (local disk, a file system); not GPU VRAM'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    if (environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'rate') > 0):
        pass
        l_0_rate_words = str_join(('more than ', t_1('%g', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'rate')), ' failed KV offload allocations per second', ))
        context.vars['rate_words'] = l_0_rate_words
        context.exported_vars.add('rate_words')
    else:
        pass
        l_0_rate_words = 'failed KV offload allocations'
        context.vars['rate_words'] = l_0_rate_words
        context.exported_vars.add('rate_words')
    l_0_fires_when = str_join(('a pod and model shows ', (undefined(name='rate_words') if l_0_rate_words is missing else l_0_rate_words), ' (rate over ', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'), '), ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMPrefixCacheHitRateLow', 'VLLMHostMemoryNearLimit', 'VLLMKVCacheUsageHigh', 'VLLMRequestPreemptions']
    context.vars['related'] = l_0_related
    context.exported_vars.add('related')
    l_0_pm = context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name', source='vllm')
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
    l_0_c = resolve('c')
    l_0_match = resolve('match')
    pass
    yield 'Requests still succeed; their prefixes are computed again, which costs GPU time and latency. Nothing to do\nin the next minutes. First check that the tier is not taking the container toward its memory limit (the\nCPU tier lives in host RAM):\n\n```promql\n'
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MEMORY_LIMIT_RATIO'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', _block_vars=_block_vars))
    yield '\n```\n\nNear 1: the container risks an OOM kill; lower the offload size or raise the memory limit before anything\nelse (Fix, step 1). Otherwise, work through Confirm during working hours.\n'

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'With KV offloading (`--kv-transfer-config` with the OffloadingConnector, vLLM 0.31 and later), vLLM copies\nKV cache blocks out of GPU memory into a bigger, slower tier (CPU memory, and with the tiering spec, disk)\nand loads them back when a later prompt starts with the same prefix. An allocation failure means the tier\nhad no room for a block the engine wanted to keep (or, with tiering, to promote back to a faster tier).\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Requests still succeed: a block that could not be offloaded is simply computed again the next time its\nprefix comes. The cost is time to first token and GPU time on prompts that the tier should have served,\nso the offload tier earns less than it costs in memory.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_on = resolve('on')
    l_0_pm = resolve('pm')
    l_0_c = resolve('c')
    l_0_match = resolve('match')
    pass
    yield '1. The failures, by counter (the tiering spec counts failed promotions apart):\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', _block_vars=_block_vars))
    yield ') (rate(vllm:kv_offload_allocation_failure_total'
    yield str((undefined(name='pm') if l_0_pm is missing else l_0_pm))
    yield '[5m]))\n   ```\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', _block_vars=_block_vars))
    yield ') (rate(vllm:kv_offload_tiering_promotion_allocation_failures_total'
    yield str((undefined(name='pm') if l_0_pm is missing else l_0_pm))
    yield '[5m]))\n   ```\n\n2. How full the tier is (CPU spec; with tiering, `vllm:kv_offload_tiering_primary_write_usage_perc`):\n\n   ```promql\n   max by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', _block_vars=_block_vars))
    yield ') (vllm:kv_offload_cpu_cache_usage_perc'
    yield str((undefined(name='pm') if l_0_pm is missing else l_0_pm))
    yield ')\n   ```\n\n3. How much the tier still serves: prompt tokens loaded from outside the GPU cache, over those looked up:\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', _block_vars=_block_vars))
    yield ') (rate(vllm:external_prefix_cache_hits_total'
    yield str((undefined(name='pm') if l_0_pm is missing else l_0_pm))
    yield '[15m])) / sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', _block_vars=_block_vars))
    yield ') (rate(vllm:external_prefix_cache_queries_total'
    yield str((undefined(name='pm') if l_0_pm is missing else l_0_pm))
    yield "[15m]))\n   ```\n\n4. The container's host memory against its limit (the CPU tier lives there):\n\n   ```promql\n   "
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MEMORY_LIMIT_RATIO'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', _block_vars=_block_vars))
    yield "\n   ```\n\n5. The offload settings in use:\n\n   ```sh\n   kubectl -n <namespace> get pod <pod> -o jsonpath='{.spec.containers[*].args}'\n   ```\n"

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **The tier is too small for the working set.** Many distinct long prefixes fill it faster than blocks\n   age out, so new blocks find no room.\n2. **Blocks held by running requests.** Under heavy load, blocks being loaded or stored cannot be evicted.\n3. **The lower tier is slow or full** (tiering spec): promotions wait on a full disk or a slow file system.\n4. **A smaller tier than planned** after a change of the offload size or of the container's memory.\n"

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield "1. **Give the tier more room** if the container's memory limit allows it (check its working set against\n   the limit first"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMHostMemoryNearLimit', _block_vars=_block_vars):
        pass
        yield ', and '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMHostMemoryNearLimit', _block_vars=_block_vars))
    yield "), then restart the pods with the larger offload size.\n2. **Route prompts with the same prefix to the same replicas** (prefix-aware routing), so that each\n   replica's tier holds fewer distinct prefixes.\n3. **Tiering:** free space on the lower tier, or move it to faster storage.\n4. **If the tier rarely serves hits** (step 3 of Confirm near 0), it costs memory for nothing: consider\n   turning offload off for this model.\n"

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_on = resolve('on')
    l_0_pm = resolve('pm')
    pass
    yield '1. No failures over a day with a traffic peak:\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', _block_vars=_block_vars))
    yield ') (increase(vllm:kv_offload_allocation_failure_total'
    yield str((undefined(name='pm') if l_0_pm is missing else l_0_pm))
    yield '[1d]))\n   ```\n\n2. The external prefix-cache hit rate (step 3 of Confirm) holds or rises.\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "- Failures with a tier far from full: to the owners of the vLLM image, with the offload configuration and\n  the vLLM version.\n- The lower tier's storage is full or slow: to the storage owners of the nodes.\n"

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=24&2=27&3=30&4=32&6=37&8=40&9=43&10=46&11=51&17=62&23=66&29=76&34=86&38=99&42=103&48=107&54=111&60=119&69=123&76=133&78=144&85=150&89=161&94=166'