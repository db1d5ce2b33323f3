from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/inference-gateway-flow-control-rejections.md.j2'

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
    l_0_plane = l_0_fires_when = l_0_related = l_0_fc = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/inference-gateway-flow-control-rejections.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = "none directly; the pool's capacity"
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('flow control rejects more than ', context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio')), ' of the requests leaving its queues over ', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'), ', ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['InferencePoolSaturated', 'InferencePoolNoReadyEndpoints', 'VLLMAdmissionRejections', 'VLLMRequestQueueBacklog']
    context.vars['related'] = l_0_related
    context.exported_vars.add('related')
    l_0_fc = context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', source='epp', extra=('inference_pool="<pool>"',))
    context.vars['fc'] = l_0_fc
    context.exported_vars.add('fc')
    yield from parent_template.root_render_func(context)

def block_now(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_fc = resolve('fc')
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield 'Clients get 429 (the pool is at capacity) or 503 (it has no endpoints). See which:\n\n```promql\nsum by (outcome) (rate(llm_d_epp_flow_control_requests_total'
    yield str((undefined(name='fc') if l_0_fc is missing else l_0_fc))
    yield '[5m]))\n```\n\n(GAIE EPPs: `inference_extension_flow_control_request_queue_duration_seconds_count` instead.)\n\n- `RejectedNoEndpoints`: the pool is empty'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'InferencePoolNoReadyEndpoints', _block_vars=_block_vars):
        pass
        yield ', see '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'InferencePoolNoReadyEndpoints', _block_vars=_block_vars))
    yield "; bring its pods back.\n- `RejectedCapacity`: add replicas to the pool's model servers"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'InferencePoolSaturated', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'InferencePoolSaturated', _block_vars=_block_vars))
        yield ')'
    yield '.\n  If the load is a burst of low-priority traffic, it is flow control doing its job: tell its owners.\n'

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'With the `flowControl` feature gate, the EPP holds requests in per-priority queues while the pool is\nsaturated and rejects those that do not fit (queue capacity reached), that time out, or that arrive while\nthe pool has no endpoint. This alert counts the rejected share of all requests leaving the queues.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'The rejected share of requests fails at once; clients that retry add to the load.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_fc = resolve('fc')
    pass
    yield "1. The pool's saturation as flow control sees it (1.0 is the set point; above it, requests are held):\n\n   ```promql\n   llm_d_epp_flow_control_pool_saturation"
    yield str((undefined(name='fc') if l_0_fc is missing else l_0_fc))
    yield ' or inference_extension_flow_control_pool_saturation'
    yield str((undefined(name='fc') if l_0_fc is missing else l_0_fc))
    yield '\n   ```\n\n2. Who is rejected: the `priority` of the rejected requests, against the InferenceObjectives below.\n\n'
    template = environment.get_template('runbooks/_inference-pool.md.j2', 'runbooks/inference-gateway-flow-control-rejections.md.j2')
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
    yield "1. **The pool is saturated** by more traffic than its replicas serve.\n2. **The pool is empty** (`RejectedNoEndpoints`).\n3. **Queue capacity set too low** in the EPP's flow-control configuration for the burst sizes seen.\n"

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **Saturated:** add replicas or raise the autoscaler's maximum.\n2. **Empty:** bring its pods back (the engines' alerts say why they left).\n3. **Capacity:** raise the flow-control queue limits in the EPP's configuration, within what clients\n   will wait for.\n"

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_match = resolve('match')
    pass
    yield 'No rejected outcome over the last minutes:\n\n```promql\nsum by (outcome) (rate(llm_d_epp_flow_control_requests_total'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', source='epp', extra=('inference_pool="<pool>"', 'outcome=~"Rejected.*"'), _block_vars=_block_vars))
    yield '[5m]))\n```\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "- Capacity cannot be added: to the model's owners, to agree on priorities and limits.\n"

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=18&2=21&3=24&4=27&5=30&6=35&10=47&15=49&16=54&19=61&24=71&27=81&31=91&36=95&38=102&43=112&49=122&53=132&56=135'