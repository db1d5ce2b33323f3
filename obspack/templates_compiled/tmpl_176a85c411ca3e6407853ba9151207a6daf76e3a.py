from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-admission-rejections.md.j2'

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
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-admission-rejections.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_kv = context.vars['kv'] = environment.get_template('runbooks/_kv.md.j2', 'runbooks/vllm-admission-rejections.md.j2').make_module(context.get_all(), True, {'fires_when': l_0_fires_when, 'kv': l_0_kv, 'plane': l_0_plane, 'related': l_0_related})
    context.exported_vars.discard('kv')
    l_0_plane = 'none directly; the queue is full because the KV cache (GPU VRAM) or the batch cannot take more'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('a pod and model refuses more than ', context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio')), ' of its requests at admission over ', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'), ', ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMRequestQueueBacklog', 'VLLMKVCacheUsageCritical', 'VLLMZeroThroughput', 'VLLMErrorBudgetBurn']
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
    yield "Every refusal is an error a client sees now. Give the model room before anything else:\n\n1. If every replica of the model refuses, add replicas (or raise the autoscaler's minimum):\n\n   ```sh\n   kubectl -n <namespace> scale deployment/<deployment> --replicas=<replicas>\n   ```\n\n2. If only this replica refuses while the others have room, the load balancer is at fault: take this pod\n   out of rotation or switch the route to least-load balancing. Step 4 of Confirm compares the replicas.\n\nDo not raise the queue caps as a first step: requests then wait instead of failing fast, and time to first\ntoken grows for everyone.\n"

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'vLLM 0.32 and later can cap its own queue: with `--max-num-queued-reqs` or `--max-num-queued-tokens` set,\na request that would make the queue longer than the cap is refused at once instead of waiting. The\n`reason` label of `vllm:admission_rejections_total` says which cap was reached. The alert compares the\nrefused requests with those the pod finished over the same window.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Every refused request is an error the client sees at once. Clients that retry make the load higher still.\nA gateway that spreads load by queue length may keep sending requests to this replica if it does not\nknow about the refusals.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_on = resolve('on')
    l_0_match = resolve('match')
    l_0_kv = resolve('kv')
    try:
        t_1 = environment.filters['indent']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'indent' found.")
    pass
    yield '1. Refused requests per second by cap, against the requests finished:\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', 'reason', _block_vars=_block_vars))
    yield ') (rate(vllm:admission_rejections_total'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name', source='vllm', _block_vars=_block_vars))
    yield '[5m]))\n   ```\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', _block_vars=_block_vars))
    yield ') (rate(vllm:request_success_total'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name', source='vllm', _block_vars=_block_vars))
    yield '[5m]))\n   ```\n\n2. '
    yield str(t_1(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'pod_state'), _block_vars=_block_vars), 3))
    yield '\n\n3. Are the waiting requests waiting for capacity (`capacity`), or set aside for another reason\n   (`deferred`: a KV transfer, a grammar, a LoRA slot)?\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', 'reason', _block_vars=_block_vars))
    yield ') (vllm:num_requests_waiting_by_reason'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name', source='vllm', _block_vars=_block_vars))
    yield ')\n   ```\n\n4. '
    yield str(t_1(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'replicas'), _block_vars=_block_vars), 3))
    yield "\n\n5. The caps in use:\n\n   ```sh\n   kubectl -n <namespace> get pod <pod> -o jsonpath='{.spec.containers[*].args}'\n   ```\n"

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
    yield '1. **More traffic than the replicas can serve.** The queue fills up and stays full; the other replicas of\n   the model are busy too.\n2. **One replica gets more than its share.** The load balancer does not see the queue or the refusals.\n3. **The engine slowed down or stalled.** Requests pile up while it serves fewer\n'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMZeroThroughput', _block_vars=_block_vars):
        pass
        yield '('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMZeroThroughput', _block_vars=_block_vars))
        yield ')'
    else:
        pass
        yield '(generation tokens per second fall while requests wait)'
    yield '.\n4. **A cap set too low** for normal bursts, for example after a change of `--max-num-queued-tokens`\n   with longer prompts.\n'

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
    yield '1. **Add replicas** when every replica of the model refuses:\n\n   ```sh\n   kubectl -n <namespace> scale deployment/<deployment> --replicas=<replicas>\n   ```\n\n2. **Spread the load** when one replica refuses and the others have room (least-load routing, or a\n   router that reads `vllm:num_requests_waiting`).\n3. **A stuck or slow engine:** '
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMZeroThroughput', _block_vars=_block_vars):
        pass
        yield 'follow '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMZeroThroughput', _block_vars=_block_vars))
    else:
        pass
        yield 'save its log, then delete the pod so that its controller replaces it'
    yield '.\n4. **A cap below normal bursts:** raise it a step, and watch the queue'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMRequestQueueBacklog', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMRequestQueueBacklog', _block_vars=_block_vars))
        yield ')'
    yield ' and the\n   time to first token: a longer queue trades refusals for waiting.\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_on = resolve('on')
    l_0_match = resolve('match')
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield '1. No refusals at the next peak:\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', _block_vars=_block_vars))
    yield ') (increase(vllm:admission_rejections_total'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name', source='vllm', _block_vars=_block_vars))
    yield '[1h]))\n   ```\n\n'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMErrorBudgetBurn', _block_vars=_block_vars):
        pass
        yield "2. The model's availability SLO stops burning ("
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMErrorBudgetBurn', _block_vars=_block_vars))
        yield ').\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '- Refusals at every replica and no capacity to add: to the owners of the model deployment and of the\n  gateway, for a capacity or rate-limit decision.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=17&2=20&3=22&4=25&5=28&6=33&21=43&27=53&32=63&36=81&40=85&43=89&49=91&52=95&60=98&65=109&69=119&78=130&79=138&82=145&86=158&89=162&90=165&93=168'