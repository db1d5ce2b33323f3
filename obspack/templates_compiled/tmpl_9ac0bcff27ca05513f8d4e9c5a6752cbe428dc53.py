from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-kv-cache-usage-high.md.j2'

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
    l_0_kv = l_0_plane = l_0_fires_when = l_0_related = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-kv-cache-usage-high.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_kv = context.vars['kv'] = environment.get_template('runbooks/_kv.md.j2', 'runbooks/vllm-kv-cache-usage-high.md.j2').make_module(context.get_all(), True, {'fires_when': l_0_fires_when, 'kv': l_0_kv, 'plane': l_0_plane, 'related': l_0_related})
    context.exported_vars.discard('kv')
    l_0_plane = 'GPU VRAM, inside the KV cache that vLLM reserved at start; this is about latency, not crashes'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('KV cache usage of a pod and model is above ', context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio')), ' ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMKVCacheUsageCritical', 'VLLMRequestQueueBacklog', 'VLLMRequestPreemptions', 'VLLMPrefixCacheHitRateLow', 'VLLMKVCacheFragmentationHigh', 'VLLMGPUMemoryNearFull']
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
    l_0_kv = resolve('kv')
    pass
    yield 'A warning about headroom: nothing fails while requests do not wait. Check whether users wait now:\n\n```promql\n'
    yield str(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'waiting'))
    yield '\n```\n\n```promql\n'
    yield str(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'preemptions'))
    yield '\n```\n\nWith an `engine` label, only that engine of the pod is this full; its sibling engines have\nroom (Confirm step 2). Both about 0: no action now; plan capacity (Fix). Either rising: add replicas, or move traffic to replicas\nwith room:\n\n```sh\nkubectl -n <namespace> scale deployment/<deployment> --replicas=<replicas>\n```\n'

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pct = resolve('pct')
    l_0_t = resolve('t')
    l_0_held = resolve('held')
    l_0_alert = resolve('alert')
    l_0_has_alert = resolve('has_alert')
    l_0_cfg = resolve('cfg')
    l_0_link = resolve('link')
    pass
    yield 'vLLM stores the attention keys and values of every running request in fixed-size blocks of a KV cache that\nit reserves on the GPU at start. The share of blocks held by running requests has stayed above\n'
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'), _block_vars=_block_vars))
    yield ' '
    yield str(context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_'), _block_vars=_block_vars))
    yield '. Blocks kept only for prefix caching are not counted: vLLM reuses\nthem on demand.\n\nA busy replica is supposed to run with a well-filled cache, so this is a warning about headroom. With\nlittle free space left, vLLM admits new requests more slowly and, when a running request needs a block and\nnone is free, it preempts a request (stops it and recomputes it later).'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMKVCacheUsageCritical', _block_vars=_block_vars):
        pass
        yield ' Above '
        yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr(environment.getattr(environment.getattr((undefined(name='cfg') if l_0_cfg is missing else l_0_cfg), 'alerts'), 'VLLMKVCacheUsageCritical'), 'ratio'), _block_vars=_block_vars))
        yield ',\n'
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMKVCacheUsageCritical', _block_vars=_block_vars))
        yield ' takes over.'
    yield '\nEach data-parallel engine of a pod (`--data-parallel-size`, the `engine` label) has its own KV cache and\nis judged alone. The alert fires once for the pod, without an `engine` label, at its fullest engine\'s\nusage, when every engine is past the threshold; otherwise once per full engine, named. One full engine\nbeside engines with room means uneven placement inside the pod, not a model short of capacity.\n\n**By role** (the alert\'s `role` label, where a pod only prefills or only decodes):\n\n- `role="prefill"`: a prefill pod keeps each prompt\'s KV cache until a decode pod has read it. A full cache\n  here means the decode pods are not pulling it (slow or failing transfers, too few decode pods): look at\n  the decode side and the transfers first, not at this pod\'s size.\n- `role="decode"`: the decode pods hold every running answer; a full cache leads to preemptions and\n  stalled answers. Add decode pods (or check the P:D ratio on the Disaggregated serving dashboard).\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Usually none yet. If requests start to wait, time to first token rises; if requests are preempted, their\noutput stalls while they are recomputed, and the GPU spends time on work it already did. Long prompts and\nlong outputs suffer first. Nothing crashes: a full KV cache makes vLLM queue, not fail.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_kv = resolve('kv')
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    try:
        t_1 = environment.filters['indent']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'indent' found.")
    pass
    yield '1. '
    yield str(t_1(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'pod_state'), _block_vars=_block_vars), 3))
    yield '\n\n   Waiting near 0 and no preemptions: the replica is busy but coping; note it for capacity planning.\n   Waiting or preemptions rising: users wait already; add capacity now'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMKVCacheUsageCritical', _block_vars=_block_vars):
        pass
        yield ' (as '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMKVCacheUsageCritical', _block_vars=_block_vars))
        yield ' says)'
    yield '.\n\n2. '
    yield str(t_1(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'engines'), 'are above the threshold', _block_vars=_block_vars), 3))
    yield '\n\n3. '
    yield str(t_1(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'queue_time'), _block_vars=_block_vars), 3))
    yield '\n\n4. '
    yield str(t_1(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'replicas'), _block_vars=_block_vars), 3))
    yield '\n\n5. '
    yield str(t_1(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'request_size'), _block_vars=_block_vars), 3))
    yield '\n\n6. '
    yield str(t_1(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'capacity'), _block_vars=_block_vars), 3))
    yield '\n'

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
    yield '1. **More traffic than the replicas can hold.** Usage follows the request rate; all replicas are high.\n2. **Longer requests.** Longer prompts, longer outputs or a higher `max_tokens` hold more blocks per\n   request, at the same request rate.\n3. **Uneven load balancing.** One replica gets more or longer requests than the others.\n4. **A smaller cache than before.** A lower `--gpu-memory-utilization`, a bigger model, or a release that\n   needs more memory outside the cache leaves fewer blocks (compare `num_gpu_blocks` with other replicas\n   or with the last release).\n5. **Wasted slots.** Short requests leave much of each block empty'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMKVCacheFragmentationHigh', _block_vars=_block_vars):
        pass
        yield '; see '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMKVCacheFragmentationHigh', _block_vars=_block_vars))
    yield '.\n'

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_kv = resolve('kv')
    pass
    yield 'None of these is urgent while nothing waits and nothing is preempted. In order:\n\n'
    yield str(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'capacity_fixes'), _block_vars=_block_vars))
    yield '\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pct = resolve('pct')
    l_0_t = resolve('t')
    l_0_kv = resolve('kv')
    pass
    yield '1. Usage stays below '
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'), _block_vars=_block_vars))
    yield ' at peak, or stays high with nothing waiting and no preemptions:\n\n   ```promql\n   max_over_time('
    yield str(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'usage'))
    yield '[1d])\n   ```\n\n   ```promql\n   max_over_time('
    yield str(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'preemptions'))
    yield "[1d])\n   ```\n\n2. The model's queue time (step 3 of Confirm) stays where it was before the alert.\n"

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '- Usage stays high across all replicas and no GPUs are free to add replicas: to the owners of the model\n  deployment, for a capacity decision.\n- The cache shrank after a release (fewer `num_gpu_blocks` at the same settings): to the owners of the\n  vLLM image.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=17&2=20&3=22&4=25&5=28&6=33&10=43&14=45&25=48&28=64&33=68&34=73&49=77&54=87&55=105&58=107&60=113&62=115&64=117&66=119&68=121&70=124&78=135&80=141&83=151&85=154&86=166&89=168&93=170&98=173'