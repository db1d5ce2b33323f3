from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/inference-pool-no-ready-endpoints.md.j2'

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
    l_0_match = resolve('match')
    l_0_plane = l_0_fires_when = l_0_related = l_0_pool = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/inference-pool-no-ready-endpoints.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'none directly; engines that crashed on host RAM or GPU memory empty the pool'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('the EPP of an InferencePool that had a ready endpoint within the last ', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'lookback'), ' reports none, ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['InferenceGatewayPickerDown', 'VLLMTargetDown', 'VLLMContainerOOMKilled', 'VLLMContainerRestarted', 'VLLMGPUMemoryNearFull']
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
    l_0_links = resolve('links')
    pass
    yield 'Every request to this pool fails (HTTP 503) until one vLLM pod is ready again. Look at the pods the\npool selects:\n\n```sh\nkubectl -n <namespace> get inferencepool <pool> -o jsonpath=\'{.spec.selector.matchLabels}{"\\n"}\'\nkubectl -n <namespace> get pods -l <selector> -o wide\n```\n\n- Pods crash-looping or not ready: the engines are the incident. Follow the memory-plane alerts firing\n  in this namespace'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMContainerOOMKilled', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='links') if l_0_links is missing else l_0_links), 'VLLMContainerOOMKilled', 'VLLMGPUMemoryNearFull', _block_vars=_block_vars))
        yield ')'
    yield "; if a\n  rollout started it, roll the model's Deployment back (`kubectl rollout undo`).\n- No pod matches the selector: a label or the selector changed; restore the one that matched.\n- Pods `Running` and ready: the EPP does not see them; check `targetPorts` and the EPP's log below.\n"

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'The EPP counts the endpoints of its pool that are ready to take requests (a pod per target port).\nThat count fell to zero after it had been above zero: the pool has nowhere to send requests.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'All requests to the pool\'s models fail with 503 (flow control reports them as `RejectedNoEndpoints`).\nWhere the pool is the only one of its namespace (`only_pool_in_namespace="true"` on this alert), the example\nAlertmanager configuration mutes the engine symptoms of the namespace while this fires, so the outage pages\nonce; beside a second pool they page too, as obspack cannot tell which pool an engine serves. The pool\'s\nflow-control rejections are muted; the OOM kill, restart and memory alerts that explain the outage stay.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pool = resolve('pool')
    pass
    yield '1. Ready endpoints of the pool, per EPP replica (each replica reports its own view):\n\n   ```promql\n   llm_d_epp_ready_endpoints'
    yield str((undefined(name='pool') if l_0_pool is missing else l_0_pool))
    yield ' or inference_pool_ready_pods'
    yield str((undefined(name='pool') if l_0_pool is missing else l_0_pool))
    yield '\n   ```\n\n2. The vLLM pods behind it and their restarts: the commands above, then the checks below.\n\n'
    template = environment.get_template('runbooks/_inference-pool.md.j2', 'runbooks/inference-pool-no-ready-endpoints.md.j2')
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
    yield "1. **Every engine crashed or is restarting** (host RAM, GPU memory, a bad image or model).\n2. **A rollout replaced all pods at once** and the new ones are still loading the model.\n3. **The selector or the pods' labels changed**, or `targetPorts` no longer match vLLM's `--port`.\n4. **The pods cannot be scheduled** (no free GPU after a node loss).\n"

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **Crashes:** follow the memory-plane alert that explains them; roll back a change that caused them.\n2. **Rollout:** let it finish, and give the Deployment `maxUnavailable: 0` so a pool keeps a ready pod.\n3. **Selector or port:** restore the labels, selector or `targetPorts` that matched.\n4. **Scheduling:** free or add GPU nodes; see the pending pods' events.\n"

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pool = resolve('pool')
    pass
    yield 'The pool has ready endpoints again:\n\n```promql\nmax('
    yield str(str_join(('llm_d_epp_ready_endpoints', (undefined(name='pool') if l_0_pool is missing else l_0_pool), )))
    yield ' or '
    yield str(str_join(('inference_pool_ready_pods', (undefined(name='pool') if l_0_pool is missing else l_0_pool), )))
    yield ')\n```\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '- The pods are ready but the EPP keeps reporting none: to the owners of the gateway.\n- No GPU capacity to schedule the pods: to the cluster platform team.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=17&2=20&3=23&4=26&5=29&6=34&16=45&21=52&25=62&32=72&36=82&41=86&43=93&49=103&55=113&59=123&62=128'