from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/inference-gateway-scheduling-latency-high.md.j2'

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
    l_0_plane = l_0_fires_when = l_0_related = l_0_epp = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/inference-gateway-scheduling-latency-high.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = "none; the picker's CPU"
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(("the p99 of the EPP's scheduling time over ", environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'), ' is above ', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'seconds'), ' s, ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['InferenceGatewayPickerDown', 'InferencePoolSaturated', 'InferenceGatewayFlowControlRejections']
    context.vars['related'] = l_0_related
    context.exported_vars.add('related')
    l_0_epp = context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', source='epp', extra=('job="<job>"',))
    context.vars['epp'] = l_0_epp
    context.exported_vars.add('epp')
    yield from parent_template.root_render_func(context)

def block_now(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Every request waits for the picker before it reaches vLLM. Check that the EPP is not starved of CPU:\n\n```sh\nkubectl -n <namespace> top pods --containers | grep <epp>\n```\n\nAt its CPU limit: raise the limit (or remove it) and roll the Deployment. Otherwise go on with Confirm;\nthe added latency is usually tens of milliseconds, not an outage.\n'

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'The EPP runs its filters and scorers (queue, KV cache, prefix cache, LoRA affinity) for every request.\n1% of its decisions took longer than the threshold. The histogram ends at 0.1 s: a p99 shown as 0.1 s\nmeans 0.1 s or more.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Time to first token grows by the scheduling time for every request of the pool.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_epp = resolve('epp')
    pass
    yield '1. Scheduling time by plugin, to find the slow one:\n\n   ```promql\n   histogram_quantile(0.99, sum by (plugin_type, plugin_name, le) (rate(llm_d_epp_plugin_duration_seconds_bucket'
    yield str((undefined(name='epp') if l_0_epp is missing else l_0_epp))
    yield '[5m])))\n   ```\n\n2. How many endpoints it scores (large pools cost more per decision), and the checks below:\n\n'
    template = environment.get_template('runbooks/_inference-pool.md.j2', 'runbooks/inference-gateway-scheduling-latency-high.md.j2')
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
    yield '1. **CPU throttling** of the EPP container.\n2. **A costly scorer** (prefix-cache indexing of long prompts, a tokenizer plugin) on large prompts.\n3. **A large pool**: each decision scores every endpoint.\n'

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **CPU:** raise the EPP's CPU request and limit.\n2. **Scorer:** lower its weight or switch it off in the EPP's configuration; size its caches.\n3. **Large pool:** split it into pools per model.\n"

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_epp = resolve('epp')
    pass
    yield 'The p99 is back under the threshold:\n\n```promql\nhistogram_quantile(0.99, sum by (le) (rate(llm_d_epp_scheduler_e2e_duration_seconds_bucket'
    yield str((undefined(name='epp') if l_0_epp is missing else l_0_epp))
    yield '[5m]) or rate(inference_extension_scheduler_e2e_duration_seconds_bucket'
    yield str((undefined(name='epp') if l_0_epp is missing else l_0_epp))
    yield '[5m])))\n```\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '- Slow with CPU to spare: to the owners of the gateway, with the plugin timings above.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=17&2=20&3=23&4=26&5=29&6=34&16=44&21=54&24=64&28=74&33=76&35=83&40=93&45=103&49=113&52=118'