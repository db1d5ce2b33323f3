from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-kv-cache-fragmentation-high.md.j2'

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
    l_0_on = resolve('on')
    l_0_plane = l_0_fires_when = l_0_related = l_0_pm = l_0_ex = l_0_by_pm = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-kv-cache-fragmentation-high.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'GPU VRAM, inside the KV cache; capacity lost to half-empty blocks'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('the obspack exporter estimates that more than ', context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio')), ' of the KV slots in used blocks are empty, ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMKVCacheUsageHigh', 'VLLMRequestPreemptions', 'VLLMCUDAAllocatorFragmentationHigh', 'ObspackExporterTargetDown']
    context.vars['related'] = l_0_related
    context.exported_vars.add('related')
    l_0_pm = context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name')
    context.vars['pm'] = l_0_pm
    context.exported_vars.add('pm')
    l_0_ex = context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name', source='exporter')
    context.vars['ex'] = l_0_ex
    context.exported_vars.add('ex')
    l_0_by_pm = context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name')
    context.vars['by_pm'] = l_0_by_pm
    context.exported_vars.add('by_pm')
    yield from parent_template.root_render_func(context)

def block_now(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_c = resolve('c')
    l_0_pm = resolve('pm')
    pass
    yield "Usually nothing: this is capacity lost to half-empty blocks, not an outage. Look at one number, the pod's\nKV cache usage now:\n\n```promql\n"
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'KV_USAGE'))
    yield str((undefined(name='pm') if l_0_pm is missing else l_0_pm))
    yield '\n```\n\nWell below 1 and nothing waiting: no action today; plan a smaller `--block-size` (Fix). Near 1 with requests\nwaiting: treat it as a full KV cache and add replicas first.\n'

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pct = resolve('pct')
    l_0_t = resolve('t')
    try:
        t_1 = environment.filters['format']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'format' found.")
    pass
    yield "vLLM hands out KV cache memory in blocks of a fixed number of token slots (`--block-size`, 16 by default).\nThe last block of each running request is only partly filled, on average half. vLLM reports no figure for\nthis, so the obspack exporter estimates it: the expected empty slots of the running requests' last blocks\nover all slots in used blocks. The estimate is above "
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'), _block_vars=_block_vars))
    yield ': with 16-token blocks that happens\nwhen running requests hold fewer than about '
    yield str(t_1('%.0f', (15 / (2 * environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio')))))
    yield ' tokens each.\n\nIn short: the requests are short compared with the block size, and part of the cache that counts as used\nholds nothing.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_links = resolve('links')
    l_0_also = missing
    pass
    yield 'None while the KV cache has room. When it fills up, the empty slots bring queueing and preemptions sooner\nthan the token count alone would explain'
    l_0_also = context.call((undefined(name='links') if l_0_links is missing else l_0_links), 'VLLMKVCacheUsageHigh', 'VLLMRequestPreemptions', _block_vars=_block_vars)
    _block_vars['also'] = l_0_also
    if (undefined(name='also') if l_0_also is missing else l_0_also):
        pass
        yield ' ('
        yield str((undefined(name='also') if l_0_also is missing else l_0_also))
        yield ')'
    yield '.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_by_pm = resolve('by_pm')
    l_0_ex = resolve('ex')
    l_0_c = resolve('c')
    l_0_pm = resolve('pm')
    l_0_match = resolve('match')
    pass
    yield '1. The estimate, and the KV cache usage that decides whether it matters:\n\n   ```promql\n   max by ('
    yield str((undefined(name='by_pm') if l_0_by_pm is missing else l_0_by_pm))
    yield ') (obspack_vllm_kv_cache_fragmentation_ratio'
    yield str((undefined(name='ex') if l_0_ex is missing else l_0_ex))
    yield ')\n   ```\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'KV_USAGE'))
    yield str((undefined(name='pm') if l_0_pm is missing else l_0_pm))
    yield '\n   ```\n\n   Low usage and no preemptions: nothing users notice.\n\n2. The block size, and the average number of slots each running request holds:\n\n   ```promql\n   max by ('
    yield str((undefined(name='by_pm') if l_0_by_pm is missing else l_0_by_pm))
    yield ') (obspack_vllm_kv_cache_block_size_tokens'
    yield str((undefined(name='ex') if l_0_ex is missing else l_0_ex))
    yield ')\n   ```\n\n   ```promql\n   sum by ('
    yield str((undefined(name='by_pm') if l_0_by_pm is missing else l_0_by_pm))
    yield ') (obspack_vllm_kv_cache_blocks'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name', source='exporter', extra=('state="used"',), _block_vars=_block_vars))
    yield ' * ignoring (state) obspack_vllm_kv_cache_block_size_tokens'
    yield str((undefined(name='ex') if l_0_ex is missing else l_0_ex))
    yield ') / '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'RUNNING'))
    yield str((undefined(name='pm') if l_0_pm is missing else l_0_pm))
    yield '\n   ```\n\n3. The block size the engine was started with (`block_size` label):\n\n   ```promql\n   vllm:cache_config_info'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', source='vllm', _block_vars=_block_vars))
    yield '\n   ```\n\n4. With few requests running the estimate is noisy; check that the alert held through busy periods and\n   not only through a quiet night:\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'RUNNING'))
    yield str((undefined(name='pm') if l_0_pm is missing else l_0_pm))
    yield '\n   ```\n'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. **Short requests.** Classification, routing or short chat turns hold a few dozen tokens each, so the\n   half-empty last block is a large part of every request.\n2. **A large block size.** Set with `--block-size`, or chosen by the attention backend.\n3. **A noisy estimate.** Few running requests, or request lengths that cluster just above a multiple of the\n   block size, make the estimate swing.\n'

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_t = resolve('t')
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield '1. **If the KV cache has room, do nothing now.** Raise `alerts.VLLMKVCacheFragmentationHigh.ratio` in the\n   obspack config (now '
    yield str(environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'))
    yield ') or disable the alert for this model.\n2. **Use smaller blocks.** Set `--block-size` to the smallest value the attention backend accepts; many GPU\n   backends need a multiple of 16, so 16 is often the floor. Restart, then check that the engine started\n   with the new `block_size` (step 3 of Confirm).\n3. **Serve short requests separately.** A deployment for short requests can use small blocks and a higher\n   `--max-num-seqs`, while long requests keep theirs.\n4. **Treat it as capacity** when the block size cannot go lower: more replicas, or more KV cache per\n   replica'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMKVCacheUsageHigh', _block_vars=_block_vars):
        pass
        yield ' (the fixes of '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMKVCacheUsageHigh', _block_vars=_block_vars))
        yield ')'
    yield '.\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pct = resolve('pct')
    l_0_t = resolve('t')
    l_0_ex = resolve('ex')
    pass
    yield 'After the restart, the estimate stays below '
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'), _block_vars=_block_vars))
    yield ' through busy periods, or the cache keeps room:\n\n```promql\nmax_over_time(obspack_vllm_kv_cache_fragmentation_ratio'
    yield str((undefined(name='ex') if l_0_ex is missing else l_0_ex))
    yield '[1d])\n```\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield "Not urgent while the cache has room. When it costs capacity and the block size cannot change, take it to\nthe owners of the model deployment as a capacity question. If the exporter's series are missing, check the\nexporter's scrapes"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'ObspackExporterTargetDown', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'ObspackExporterTargetDown', _block_vars=_block_vars))
        yield ')'
    yield '.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=19&2=22&3=25&4=28&5=31&6=34&7=37&8=42&13=53&19=57&23=74&24=76&29=79&31=90&33=99&37=113&41=117&49=120&53=124&59=133&66=135&69=139&76=149&78=161&85=163&87=170&88=182&91=184&94=187&97=198'