from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-autoscaler-maxed-out.md.j2'

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
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-autoscaler-maxed-out.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'none; this is about capacity: every replica the autoscaler may start already runs'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('an HPA of a namespace that runs vLLM has as many replicas as its maximum while a model of the namespace has a saturation signal above ', t_1('%g', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'saturation')), ', ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMAutoscalerScaleUpBlocked', 'VLLMAutoscalerThrashing', 'VLLMRequestQueueBacklog', 'VLLMKVCacheUsageHigh', 'VLLMErrorBudgetBurn']
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
    yield "The autoscaler wants more replicas than its maximum allows, so the queue grows on the ones that run.\n\n1. If GPUs are free in the cluster, raise the maximum (fix 1 below).\n2. If none are free, protect the model's users while capacity is found: shed or move traffic (fix 3).\n"

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_c = resolve('c')
    pass
    yield 'The saturation signal (`'
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'SATURATION'))
    yield '`) is, per model, the larger of the requests waiting for\ncapacity per engine over the queue target and the KV cache usage over the KV target\n(`autoscaling.targets`). At 1 the replicas are as busy as the targets allow; at 2 the model needs twice\nthe replicas it has. The HPA already runs its `maxReplicas`, so it will not add any: the model is short of\ncapacity until someone raises the maximum, finds GPUs, or sheds load. This does not mean the autoscaler is\nbroken; it means its ceiling is too low for the traffic.\n'

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
    yield 'Requests queue in the engines: time to first token grows with the queue, and clients with short timeouts\nsee errors. The SLO of the model burns if this lasts'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMErrorBudgetBurn', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMErrorBudgetBurn', _block_vars=_block_vars))
        yield ')'
    yield '.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_c = resolve('c')
    l_0_match = resolve('match')
    l_0_on = resolve('on')
    pass
    yield '1. The HPA\'s replicas against its bounds:\n\n   ```sh\n   kubectl -n <namespace> get hpa <hpa>\n   ```\n\n2. The signal per model of the namespace and what drives it (`signal="queue"` or `"kv_cache"`):\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'SATURATION_PART'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', _block_vars=_block_vars))
    yield "\n   ```\n\n3. How many replicas the traffic needs now (the HPA's formula, current replicas times the signal):\n\n   ```promql\n   ceil(max by ("
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') ('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'SATURATION'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', _block_vars=_block_vars))
    yield ') * count by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') ('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'RUNNING'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', _block_vars=_block_vars))
    yield '))\n   ```\n'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. **More traffic than the maximum allows:** a launch, a batch job, a client retrying in a loop.\n2. **Slower replicas:** longer prompts or outputs than before, a release that lowered throughput, prefix\n   caching lost; each replica serves fewer requests, so the same traffic needs more of them.\n3. **A maximum set for a smaller model or older traffic,** never revisited.\n'

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    l_0_links = resolve('links')
    pass
    yield '1. **Raise the maximum** when the cluster has GPUs for it (watch for pending pods'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMAutoscalerScaleUpBlocked', _block_vars=_block_vars):
        pass
        yield ',\n   '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMAutoscalerScaleUpBlocked', _block_vars=_block_vars))
        yield ','
    yield ' right after: a replica that cannot be scheduled adds nothing). For an obspack-rendered autoscaler, change\n   `max_replicas` in obspack.yaml and render; by hand:\n\n   ```sh\n   kubectl -n <namespace> patch hpa <hpa> --type merge -p \'{"spec":{"maxReplicas":<max-replicas>}}\'\n   ```\n\n   A ScaledObject owns its HPA: patch the ScaledObject\'s `maxReplicaCount` instead, or KEDA reverts it.\n2. **Find who sends the traffic** (the gateway\'s or router\'s request rate per client) and slow a runaway\n   client down.\n3. **Shed load deliberately** while capacity is found: a rate limit at the gateway, or vLLM\'s admission caps\n   (`--max-num-queued-reqs`), so that some requests fail fast instead of all of them waiting.\n4. **Make each replica serve more:** see `obspack rightsize`'
    if (context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMKVCacheUsageHigh', _block_vars=_block_vars) or context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMRequestQueueBacklog', _block_vars=_block_vars)):
        pass
        yield ' and the KV cache and\n   queue runbooks ('
        yield str(context.call((undefined(name='links') if l_0_links is missing else l_0_links), 'VLLMKVCacheUsageHigh', 'VLLMRequestQueueBacklog', _block_vars=_block_vars))
        yield ')'
    yield '.\n'

def block_verify(context, missing=missing):
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
    yield '1. The signal back under 1 at the next peak, with replicas under the maximum:\n\n   ```promql\n   max by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') ('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'SATURATION'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', _block_vars=_block_vars))
    yield ')\n   ```\n\n2. `obspack rightsize --autoscaling` on the window that holds the peak says how many replicas the model\n   needed; set the maximum above it.\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '- No GPUs to add: to the owners of the GPU node pools, with the replica count the query in Confirm gives.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=22&2=25&3=28&4=31&5=36&11=46&12=56&19=59&21=70&23=77&33=89&39=92&42=103&48=113&49=125&50=128&62=131&63=134&65=138&69=150&75=156'