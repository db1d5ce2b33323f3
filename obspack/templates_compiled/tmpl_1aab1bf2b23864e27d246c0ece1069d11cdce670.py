from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-request-preemptions.md.j2'

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
    l_0_kv = l_0_plane = l_0_fires_when = l_0_related = missing
    try:
        t_1 = environment.filters['format']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'format' found.")
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-request-preemptions.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_kv = context.vars['kv'] = environment.get_template('runbooks/_kv.md.j2', 'runbooks/vllm-request-preemptions.md.j2').make_module(context.get_all(), True, {'fires_when': l_0_fires_when, 'kv': l_0_kv, 'plane': l_0_plane, 'rate_words': l_0_rate_words, 'related': l_0_related})
    context.exported_vars.discard('kv')
    l_0_plane = 'GPU VRAM, inside the KV cache that vLLM reserved at start; this is about latency, not crashes'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    if (environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'rate') > 0):
        pass
        l_0_rate_words = str_join(('more than ', t_1('%g', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'rate')), ' preemptions per second', ))
        context.vars['rate_words'] = l_0_rate_words
        context.exported_vars.add('rate_words')
    else:
        pass
        l_0_rate_words = 'any preemption at all'
        context.vars['rate_words'] = l_0_rate_words
        context.exported_vars.add('rate_words')
    l_0_fires_when = str_join(('a pod and model shows ', (undefined(name='rate_words') if l_0_rate_words is missing else l_0_rate_words), ' (5-minute rate), ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMKVCacheUsageHigh', 'VLLMKVCacheUsageCritical', 'VLLMRequestQueueBacklog', 'VLLMKVCacheFragmentationHigh', 'VLLMHostMemoryNearLimit']
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
    yield "Preempted requests stall mid-answer while vLLM recomputes them. Relieve the cache:\n\n1. If the model's other replicas have room, the load balancer sends this one too much: fix the routing or\n   take this pod out of rotation.\n2. Otherwise add replicas (new ones need free GPUs and a few minutes to load):\n\n   ```sh\n   kubectl -n <namespace> scale deployment/<deployment> --replicas=<replicas>\n   ```\n\nLowering `--max-num-seqs` (Fix, step 1) also stops preemptions but needs a restart; plan it after the peak.\n"

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_held = resolve('held')
    l_0_alert = resolve('alert')
    pass
    yield "A running request needed another KV cache block, none was free, and vLLM stopped another running request\nto free its blocks. This is a preemption. The V1 engine drops the preempted request's KV cache and puts\nthe request back in the queue; when it resumes, the prompt and every token generated so far are computed\nagain. The older V0 engine could instead copy the blocks to host memory (`--swap-space`).\n\nAn occasional preemption at a peak is harmless. Preemptions "
    yield str(context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_'), _block_vars=_block_vars))
    yield ' mean the cache is too\nsmall for the number and length of requests admitted.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'A preempted request stalls: its stream pauses until it is scheduled again and its work is redone. The GPU\nspends time on that repeated work, so throughput drops for everyone, which makes the queue longer and\npreemption more likely.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_kv = resolve('kv')
    l_0_on = resolve('on')
    l_0_c = resolve('c')
    l_0_match = resolve('match')
    try:
        t_2 = environment.filters['indent']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No filter named 'indent' found.")
    pass
    yield '1. '
    yield str(t_2(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'pod_state'), _block_vars=_block_vars), 3))
    yield '\n\n2. Preemptions per finished request, for the whole model (0.1 means one preemption for every ten\n   requests):\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') ('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'PREEMPTION_RATE'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') / sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') ('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'REQUEST_RATE'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ')\n   ```\n\n3. '
    yield str(t_2(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'request_size'), _block_vars=_block_vars), 3))
    yield '\n\n4. '
    yield str(t_2(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'capacity'), _block_vars=_block_vars), 3))
    yield "\n\n5. The engine flags that set how many requests run at once and how long they may get (`--max-num-seqs`,\n   `--max-model-len`, `--gpu-memory-utilization`, `--kv-cache-dtype`):\n\n   ```sh\n   kubectl -n <namespace> get pod <pod> -o jsonpath='{.spec.containers[*].args}'\n   ```\n"

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
    yield '1. **Too many requests admitted for the cache.** `--max-num-seqs` lets more requests run than the cache\n   can hold once their outputs grow.\n2. **Longer outputs or prompts than before.** A new client, a higher `max_tokens`, or longer conversations.\n3. **A cache smaller than planned.** A lower `--gpu-memory-utilization`, a larger model or a new release\n   left fewer blocks.\n4. **More traffic than the replicas can hold**, which keeps the cache full all the time.\n5. **Wasted slots in the blocks** of very short requests'
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
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield 'Start with the concurrency cap, which relieves the cache at once; then give the cache room:\n\n'
    yield str(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'capacity_fixes'), ('queue', 'replicas', 'memory', 'bound', 'balance', 'prefix'), _block_vars=_block_vars))
    yield "\n\nOn the V0 engine only, preempted requests can be swapped to host memory instead of recomputed\n(`--swap-space`, in GiB per GPU). That memory counts against the container's limit; check the working set\nagainst the limit"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMHostMemoryNearLimit', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMHostMemoryNearLimit', _block_vars=_block_vars))
        yield ')'
    yield ' before you raise it.\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_kv = resolve('kv')
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield '1. No preemptions over a day with a traffic peak:\n\n   ```promql\n   max_over_time('
    yield str(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'preemptions'))
    yield '[1d])\n   ```\n\n2. The waiting requests did not grow too much in exchange'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMRequestQueueBacklog', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMRequestQueueBacklog', _block_vars=_block_vars))
        yield ' stays quiet)'
    yield ':\n\n   ```promql\n   max_over_time('
    yield str(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'waiting'))
    yield '[1d])\n   ```\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '- Preemptions continue with `--max-num-seqs` already low and no way to add capacity: to the owners of the\n  model deployment, for a capacity decision.\n- Preemptions started with a release at the same traffic and settings: to the owners of the vLLM image.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=23&2=26&3=28&4=31&5=33&7=38&9=41&10=44&11=49&24=59&30=70&33=73&38=83&39=102&45=104&48=114&50=116&59=119&66=130&68=136&71=148&75=150&77=157&81=169&84=171&87=177&90=180'