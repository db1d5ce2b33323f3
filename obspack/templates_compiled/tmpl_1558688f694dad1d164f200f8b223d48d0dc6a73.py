from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-prefill-decode-imbalance.md.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    parent_template = None
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
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-prefill-decode-imbalance.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'none directly; a full KV cache (GPU VRAM) on one side is one of the signs'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('for one model with both prefill-only and decode-only pods, one side averages more than ', t_1('%g', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'waiting_per_pod')), ' requests waiting for capacity per pod (or its KV cache above ', t_1('%g', (environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'kv_ratio') * 100)), '% with requests waiting), while the other side averages under one and its KV cache stays below ', t_1('%g', (environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'room_kv_ratio') * 100)), '%, ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMRequestQueueBacklog', 'VLLMKVCacheUsageHigh', 'VLLMKVCacheUsageCritical', 'VLLMKVTransferFailures']
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
    yield 'The side named by the `short` label cannot keep up while the other side idles. Move capacity to it:\n\n1. Scale the short side up (the prefill or the decode workload of the model, as the `short` label says):\n\n   ```sh\n   kubectl -n <namespace> scale deployment/<model>-<short> --replicas=<replicas>\n   ```\n\n   With a fixed GPU budget, scale the other side down by as many pods: the ratio is what is wrong, not the\n   total.\n\n2. If the short side cannot grow (no free GPUs): with `short="prefill"`, let the endpoint picker send more\n   requests decode-only (raise its P/D prompt-length threshold), so that decode pods compute short prompts\n   themselves; with `short="decode"`, scale the prefill side down to free GPUs for decode pods.\n'

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_cfg = resolve('cfg')
    pass
    yield "With prefill/decode disaggregation a prefill pod computes each prompt's KV cache (one step, max_tokens 1)\nand a decode pod reads it over NIXL or Mooncake and generates the answer. The two sides scale apart, and\nthe right ratio between them follows the traffic: long prompts with short answers need more prefill pods,\nlong answers more decode pods. When the traffic's shape moves and the ratio does not, one side queues while\nthe other waits for work.\n\nEach side is averaged over its own pods (roles from the pod label `"
    yield str((environment.getattr(environment.getattr((undefined(name='cfg') if l_0_cfg is missing else l_0_cfg), 'disaggregation'), 'role_label') or '(none set)'))
    yield "`, else\nthe pod names; docs/rules.md). Only requests waiting for capacity count: a decode pod's requests waiting for\ntheir KV from a prefill pod are deferred, and more decode pods would not start them.\n"

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Prefill short: every request waits for its prompt, so time to first token climbs for all users while\ndecode GPUs idle. Decode short: the first token comes, then the answers stall or get preempted, inter-token\nlatency climbs, and prefill pods hold KV cache that nobody reads (it may expire unread).\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_triage = resolve('triage')
    l_0_c = resolve('c')
    l_0_match = resolve('match')
    l_0_on = resolve('on')
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield "1. Pods per role and each side's queue and KV cache: open the dashboard above (the alert's `dashboard_url`\n   opens it on the model), or list the pods with their role:\n\n   ```sh\n   "
    yield str((undefined(name='triage') if l_0_triage is missing else l_0_triage))
    yield '\n   ```\n\n2. The queue of each pod of the model, with its KV cache usage:\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'WAITING'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', _block_vars=_block_vars))
    yield '\n   ```\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'KV_USAGE'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', _block_vars=_block_vars))
    yield "\n   ```\n\n3. Did the traffic's shape change? Prompt and generated tokens per second of the model, against last week:\n\n   ```promql\n   sum by ("
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') ('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'PROMPT_RATE'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ')\n   ```\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') ('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'GENERATION_RATE'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ')\n   ```\n\n4. Are transfers failing or slow (a decode side that looks short may be starved of KV instead)?\n'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMKVTransferFailures', _block_vars=_block_vars):
        pass
        yield 'Check '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMKVTransferFailures', _block_vars=_block_vars))
        yield ' and the transfer time on the dashboard.'
    else:
        pass
        yield 'Check the transfer time and failures on the dashboard.'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **The traffic's shape changed:** longer prompts (RAG, agents, long system prompts) load prefill; longer\n   answers (reasoning models, larger max_tokens) load decode.\n2. **A side lost pods:** crash loops, evictions or a rollout on one side only.\n3. **An autoscaler scales one side only,** or both on one signal that only one side feels.\n4. **The endpoint picker's P/D threshold** sends more (or fewer) requests through prefill than before.\n5. **Decode pods do not pull KV fast enough** (slow or failing transfers): prefill KV caches fill up.\n"

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
    yield '1. **Set the ratio to the traffic:** scale the short side, and the other side down if GPUs are fixed. Keep\n   the new ratio in the deployment (Helm values, the ModelService) so that the next rollout keeps it.\n2. **Autoscale each side on its own signal:** prefill on its queue (or time to first token), decode on its\n   KV cache usage and batch.\n3. **Fix transfers** when the prefill side fills its KV cache while decode has room'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMKVTransferFailures', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMKVTransferFailures', _block_vars=_block_vars))
        yield ')'
    yield '.\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_t = resolve('t')
    try:
        t_1 = environment.filters['format']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'format' found.")
    pass
    yield "1. The alert resolves, and both sides' average queues stay below "
    yield str(t_1('%g', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'waiting_per_pod')))
    yield ' at peak.\n2. Time to first token (prefill short) or inter-token latency (decode short) is back to its usual level.\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "- The short side cannot grow (no GPUs) for more than an hour: to the owners of the model deployment and of\n  the GPU capacity.\n- The picker's decisions changed without a config change: to the owners of the inference gateway.\n"

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=22&2=25&3=28&4=31&5=36&21=46&28=56&32=59&37=69&42=84&48=86&52=89&58=92&62=97&66=102&68=111&76=121&81=132&83=139&84=155&87=158'