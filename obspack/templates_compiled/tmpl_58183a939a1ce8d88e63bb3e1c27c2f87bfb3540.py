from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-autoscaler-signal-missing.md.j2'

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
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-autoscaler-signal-missing.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'none; the autoscaler is blind, so the replicas stay as they are whatever the load'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(("in a namespace that runs vLLM, an HPA's ScalingActive condition is false, or KEDA's scaler failed or got an empty answer within ", environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'), ', ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMAutoscalerMaxedOut', 'VLLMTargetDown', 'VLLMAutoscalerThrashing']
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
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield "The autoscaler has no signal, so it holds the replica count where it is: no scale-up under load.\n\n1. Check whether the signal has data in Prometheus (Confirm 2).\n2. No data: the vLLM pods' metrics are missing"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMTargetDown', _block_vars=_block_vars):
        pass
        yield '; follow '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMTargetDown', _block_vars=_block_vars))
    else:
        pass
        yield '; check that Prometheus scrapes the pods'
    yield '.\n   Data: the autoscaler cannot reach Prometheus; its errors are in Confirm 3 and 4.\n3. Until it reads again, scale by hand if the queue grows.\n'

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'An autoscaler needs its metric to decide. When the HPA cannot read it (through prometheus-adapter or KEDA\'s\nmetrics server) it sets `ScalingActive=False` and holds the replica count. A KEDA ScaledObject whose query\nfails, or returns nothing, shows it only in its status and in KEDA\'s own counters; with\n`ignoreNullValues: "true"` (KEDA\'s default) an empty answer reads as 0 and the workload scales down.\nobspack renders its ScaledObjects with `ignoreNullValues: "false"` when the minimum is above zero, so an\nempty signal stops scaling instead.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'No scale-up at the next peak and no scale-down after it: queues grow, or GPUs idle. Nothing fails at once.\n'

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
    yield '1. The autoscalers of the namespace and their conditions:\n\n   ```sh\n   kubectl -n <namespace> get scaledobject,hpa\n   kubectl -n <namespace> describe hpa\n   ```\n\n2. The signal the autoscaler reads, per model:\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'SATURATION'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', _block_vars=_block_vars))
    yield "\n   ```\n\n3. KEDA's errors and empty answers per ScaledObject:\n\n   ```promql\n   sum by ("
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'scaledObject', _block_vars=_block_vars))
    yield ') (increase(keda_scaler_detail_errors_total'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), source='keda', _block_vars=_block_vars))
    yield '[1h]))\n   ```\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'scaledResource', _block_vars=_block_vars))
    yield ') (increase(keda_scaler_empty_upstream_responses_total'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), source='keda', _block_vars=_block_vars))
    yield "[1h]))\n   ```\n\n4. KEDA's operator log (in the namespace KEDA was installed to, `keda` by default) names the query and the error:\n\n   ```sh\n   kubectl -n keda logs deploy/keda-operator -c keda-operator --since=30m | grep -i error\n   ```\n"

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **The signal has no series:** no awake vLLM pod of the model (all asleep, crash-looping, or not scraped),\n   or the ScaledObject names a model, namespace or cluster that no series carries.\n2. **KEDA cannot reach Prometheus:** a wrong `serverAddress`, a network policy, or credentials the\n   TriggerAuthentication lacks (401/403 in the log).\n3. **prometheus-adapter does not serve the metric:** its rule was not loaded, or its series query matches\n   nothing (`kubectl get --raw /apis/external.metrics.k8s.io/v1beta1` lists what it serves).\n4. **The query returns several series** (KEDA refuses that): obspack's queries wrap the signal in `max()`;\n   a hand-written one may not.\n"

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
    yield "1. **No series:** bring the pods' metrics back"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMTargetDown', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMTargetDown', _block_vars=_block_vars))
        yield ')'
    yield ", or correct the model,\n   namespace and cluster of the autoscaler in obspack.yaml (they must match the `model_name`, `namespace`\n   and cluster label of the signal) and render.\n2. **Unreachable or refused:** correct `autoscaling.autoscalers[].prometheus.address`, or create the\n   TriggerAuthentication it names with a token Prometheus accepts.\n3. **prometheus-adapter:** apply the rule obspack renders (`kubernetes/autoscaling/prometheus-adapter-rules.yaml`)\n   to the adapter's config and restart it.\n"

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. `ScalingActive` back to `True`, and KEDA\'s counters flat:\n\n   ```sh\n   kubectl -n <namespace> get hpa -o custom-columns=NAME:.metadata.name,ACTIVE:.status.conditions[?(@.type==\\"ScalingActive\\")].status\n   ```\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "- KEDA or the adapter themselves failing: to the owners of the cluster's autoscaling components.\n"

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=16&2=19&3=22&4=25&5=30&9=41&13=50&21=60&24=70&35=82&41=85&45=89&54=94&64=104&65=115&73=122&80=132'