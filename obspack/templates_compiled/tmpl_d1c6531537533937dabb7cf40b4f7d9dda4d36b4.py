from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-autoscaler-thrashing.md.j2'

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
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-autoscaler-thrashing.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'none; every replica started loads its model into host RAM and GPU memory for minutes'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('an HPA of a namespace that runs vLLM raised its desired replicas at least ', t_1('%g', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'reversals')), ' times and lowered them as often within ', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'), ', ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMAutoscalerMaxedOut', 'VLLMAutoscalerSignalMissing', 'VLLMContainerRestarted']
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
    yield 'The replica count flaps, and every new replica spends minutes loading its model. Stop the flapping\nfirst; it is safe and takes effect at the next evaluation:\n\n1. Lengthen the scale-down stabilization of the HPA (fix 1 below has the command; on a ScaledObject, set\n   it under `advanced.horizontalPodAutoscalerConfig`).\n2. If two autoscalers target the workload (`kubectl -n <namespace> get scaledobject,hpa` lists an HPA and\n   a ScaledObject for it, or two ScaledObjects), delete the extra one.\n'

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'The autoscaler keeps changing its mind. For a web service a flapping replica count is cheap; for vLLM each\nnew replica pulls weights and loads them onto its GPUs before it serves (minutes), and each removed one\nthrows that work away. The signal swings across its target faster than replicas can follow, or scale-down\nacts before the new replicas have absorbed the load.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'GPU time spent loading models instead of serving; requests that arrive during a scale-down are cut off or\nretried; the queue on the remaining replicas swings with the count.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_on = resolve('on')
    l_0_match = resolve('match')
    l_0_c = resolve('c')
    pass
    yield '1. Desired and current replicas over the last hour (graph it):\n\n   ```promql\n   max by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'horizontalpodautoscaler', _block_vars=_block_vars))
    yield ') (kube_horizontalpodautoscaler_status_desired_replicas'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', extra=('horizontalpodautoscaler="<hpa>"',), source='kube_state_metrics', _block_vars=_block_vars))
    yield ")\n   ```\n\n2. The HPA's events and behaviour:\n\n   ```sh\n   kubectl -n <namespace> describe hpa <hpa>\n   ```\n\n3. The saturation signal of the namespace's models over the same hour: does it cross 1 back and forth?\n\n   ```promql\n   "
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'SATURATION_PART'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', _block_vars=_block_vars))
    yield '\n   ```\n'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **A short scale-down stabilization** (the HPA's default 300 s, or less): a dip lowers the count before\n   the next burst.\n2. **A signal that reacts to the new replicas before they serve:** while a replica loads, the others keep\n   the queue; once it serves, the queue drops and the autoscaler removes a replica.\n3. **Two autoscalers on one workload** (an HPA and a ScaledObject, or two ScaledObjects): they fight.\n4. **Bursty traffic** with bursts shorter than a model load.\n"

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. **Lengthen the scale-down stabilization** to more than a model load plus a burst (obspack renders 10m\n   by default: `scale_down_stabilization` in obspack.yaml). By hand, on an HPA:\n\n   ```sh\n   kubectl -n <namespace> patch hpa <hpa> --type merge -p \'{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":900}}}}\'\n   ```\n\n   On a ScaledObject, set `advanced.horizontalPodAutoscalerConfig.behavior.scaleDown` instead.\n2. **Limit the scale-down rate** (one pod per five minutes) so a dip removes one replica, not several.\n3. **One autoscaler per workload:** delete the extra one.\n4. **Raise the target a little** (`autoscaling.targets`) if the workload sits just at the target.\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_on = resolve('on')
    l_0_match = resolve('match')
    pass
    yield '1. The alert resolves and desired replicas change at most once per burst:\n\n   ```promql\n   changes(max by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'horizontalpodautoscaler', _block_vars=_block_vars))
    yield ') (kube_horizontalpodautoscaler_status_desired_replicas'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', extra=('horizontalpodautoscaler="<hpa>"',), source='kube_state_metrics', _block_vars=_block_vars))
    yield ')[1h:1m])\n   ```\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '- Flapping that stabilization does not stop: to the owners of the workload, with the graph of the signal\n  against the replica count.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=22&2=25&3=28&4=31&5=36&14=46&20=56&24=66&28=78&40=82&43=86&51=96&64=106&68=117&71=122'