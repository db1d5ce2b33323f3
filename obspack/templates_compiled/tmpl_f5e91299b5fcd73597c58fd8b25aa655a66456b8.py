from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-request-queue-backlog.md.j2'

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
    l_0_kv = l_0_plane = l_0_fires_when = l_0_related = missing
    try:
        t_1 = environment.filters['format']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'format' found.")
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-request-queue-backlog.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_kv = context.vars['kv'] = environment.get_template('runbooks/_kv.md.j2', 'runbooks/vllm-request-queue-backlog.md.j2').make_module(context.get_all(), True, {'fires_when': l_0_fires_when, 'kv': l_0_kv, 'plane': l_0_plane, 'related': l_0_related})
    context.exported_vars.discard('kv')
    l_0_plane = 'none directly; a full KV cache (GPU VRAM) is one of the causes'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('at least ', t_1('%g', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'min_waiting')), ' requests wait for capacity and more than ', t_1('%g', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'waiting_to_running')), ' times as many wait as run, on one pod and model, ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMKVCacheUsageHigh', 'VLLMKVCacheUsageCritical', 'VLLMRequestPreemptions', 'VLLMZeroThroughput', 'VLLMTargetDown']
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
    l_0_c = resolve('c')
    pass
    yield 'Requests wait for capacity now, so time to first token grows. Give the model room:\n\n1. Add replicas, or move traffic to replicas with room (new ones need free GPUs and a few minutes to load):\n\n   ```sh\n   kubectl -n <namespace> scale deployment/<deployment> --replicas=<replicas>\n   ```\n\n2. If this pod runs nothing while requests wait (`'
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'RUNNING'))
    yield '` at 0 in Confirm step 1), the engine is\n   stuck, not busy: save its log and delete the pod so that its controller replaces it.\n\nWith an `engine` label, only that data-parallel engine of the pod is backed up while its siblings keep\nup (Confirm step 2): the requests already queued on it cannot move to another engine. If it also runs\nnothing, it is stuck: restart the pod as in step 2.\n'

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Requests arrive faster than vLLM starts them. The scheduler starts a waiting request only when there is\nroom on three counts: free blocks in the KV cache, a free slot under `--max-num-seqs`, and token budget\nin the next step under `--max-num-batched-tokens` (with LoRA, also a free adapter slot under\n`--max-loras`). One of them has run out, or the engine has slowed down.\n\nFrom vLLM 0.20 the engine tells why each request waits: for capacity, or deferred (set aside until\nsomething else is ready: its KV cache from a prefill pod, a structured-output grammar, a LoRA slot). The\nalert counts only the requests waiting for capacity where the engine says so, because more replicas would\nnot admit deferred ones; older engines cannot tell, and all their waiting requests count. Engines put to\nsleep are left out.\n\nEach data-parallel engine of a pod (`--data-parallel-size`, the `engine` label) has its own queue, and the\nthresholds apply to each engine\'s queue. When every engine of the pod is backed up, the alert fires once\nfor the pod, without an `engine` label, with the queues added up; otherwise once per backed-up engine,\nnamed.\n\n**By role** (the alert\'s `role` label, where a pod only prefills or only decodes):\n\n- `role="prefill"`: prompts wait for a prefill pod, so every request\'s time to first token grows while the\n  decode pods may idle. The prefill side is short of capacity, or the prefill:decode ratio is wrong: scale\n  the prefill workload (see the Disaggregated serving dashboard).\n- `role="decode"`: only requests waiting for capacity count; those waiting for their KV from a prefill pod\n  are deferred and do not. The decode side is short: add decode pods.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Every waiting request adds its wait to the time to first token. Interactive users notice within seconds;\nclients and gateways with short timeouts start failing requests that never began.\n'

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
    l_0_on = resolve('on')
    l_0_match = resolve('match')
    l_0_c = resolve('c')
    try:
        t_2 = environment.filters['indent']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No filter named 'indent' found.")
    pass
    yield '1. '
    yield str(t_2(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'pod_state'), _block_vars=_block_vars), 3))
    yield '\n\n   Read them together:\n   - KV cache usage near 1: the cache is the limit'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMKVCacheUsageCritical', _block_vars=_block_vars):
        pass
        yield '; go on with '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMKVCacheUsageCritical', _block_vars=_block_vars))
    yield '.\n   - Usage has room but running is flat at a round number: the `--max-num-seqs` cap is the limit.\n   - Running near 0 while requests wait: the engine is stuck'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMZeroThroughput', _block_vars=_block_vars):
        pass
        yield '; go to '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMZeroThroughput', _block_vars=_block_vars))
    else:
        pass
        yield ': save its log and delete the pod so that it is replaced'
    yield '.\n\n2. '
    yield str(t_2(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'engines'), 'are backed up', _block_vars=_block_vars), 3))
    yield "\n\n3. The engine flags that cap admission (`--max-num-seqs`, `--max-num-batched-tokens`, `--max-loras`):\n\n   ```sh\n   kubectl -n <namespace> get pod <pod> -o jsonpath='{.spec.containers[*].args}'\n   ```\n\n4. Since vLLM 0.20 the waiting requests are split by reason. `capacity` means no room in the KV cache;\n   `deferred` means the scheduler set them aside for another reason, such as a LoRA slot or a KV\n   transfer that has not finished:\n\n   ```promql\n   sum by ("
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', 'reason', _block_vars=_block_vars))
    yield ') (vllm:num_requests_waiting_by_reason'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name', source='vllm', _block_vars=_block_vars))
    yield ')\n   ```\n\n5. '
    yield str(t_2(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'queue_time'), _block_vars=_block_vars), 3))
    yield '\n\n6. Is the engine slower than before? Generated and prompt tokens per second on this pod:\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'GENERATION_RATE'))
    yield str(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'pm'))
    yield '\n   ```\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'PROMPT_RATE'))
    yield str(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'pm'))
    yield '\n   ```\n\n7. '
    yield str(t_2(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'replicas'), _block_vars=_block_vars), 3))
    yield '\n'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. **Not enough replicas for the traffic**, often after a burst or after a sibling replica went down.\n2. **The KV cache is full.** Long prompts or long outputs hold the blocks new requests need.\n3. **The concurrency cap.** `--max-num-seqs` is lower than the GPU could serve, so requests wait while the\n   cache has room.\n4. **LoRA adapter slots.** Requests for adapters that are not loaded wait for a slot under `--max-loras`.\n5. **The engine slowed down.** Long prefills without chunking, a throttled GPU, or a stuck engine.\n'

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
    yield '1. **Add replicas** or move traffic to replicas with room:\n\n   ```sh\n   kubectl -n <namespace> scale deployment/<deployment> --replicas=<replicas>\n   ```\n\n2. **KV cache full:** give the cache room: more replicas, fewer concurrent sequences, shorter contexts'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMKVCacheUsageCritical', _block_vars=_block_vars):
        pass
        yield ' (the fixes of '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMKVCacheUsageCritical', _block_vars=_block_vars))
        yield ')'
    yield '.\n3. **Concurrency cap with room in the cache:** raise `--max-num-seqs` a step, then watch KV cache usage and\n   preemptions'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMRequestPreemptions', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMRequestPreemptions', _block_vars=_block_vars))
        yield ')'
    yield '; stop raising when preemptions appear.\n4. **LoRA:** raise `--max-loras` if GPU memory allows, or route each adapter to fewer replicas so that\n   it stays loaded.\n5. **Long prefills:** keep chunked prefill on (`--enable-chunked-prefill`) and size\n   `--max-num-batched-tokens` so that one long prompt does not hold up a whole step.\n6. **Balance the load** when one replica queues and the others do not (least-load or KV-aware routing).\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_t = resolve('t')
    l_0_kv = resolve('kv')
    try:
        t_1 = environment.filters['format']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'format' found.")
    pass
    yield '1. Waiting requests stay below '
    yield str(t_1('%g', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'min_waiting')))
    yield ' at peak:\n\n   ```promql\n   max_over_time('
    yield str(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'waiting'))
    yield "[1d])\n   ```\n\n2. The model's queue time (step 5 of Confirm) is back to its usual level.\n"

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
    yield "- Requests have waited for more than 15 minutes and capacity cannot be added: to the owners of the model\n  deployment and of the gateway.\n- The engine is stuck or slows down over time at the same traffic: to the owners of the vLLM image, with the\n  log and the pod's throughput graph"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMZeroThroughput', _block_vars=_block_vars):
        pass
        yield ' (and '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMZeroThroughput', _block_vars=_block_vars))
        yield ')'
    yield '.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=22&2=25&3=27&4=30&5=33&6=38&15=48&22=51&47=61&51=71&52=92&55=94&57=99&59=107&72=109&75=113&80=115&84=118&87=121&89=124&97=134&104=145&106=151&113=158&114=175&117=177&122=180&126=191'