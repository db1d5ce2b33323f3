from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/inference-gateway-picker-down.md.j2'

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
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/inference-gateway-picker-down.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'none; the router in front of the engines'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('Prometheus cannot scrape any replica of an endpoint picker (EPP) that served EPP series (or, for jobs matching `', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'job_regex'), '`, was up) within the last ', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'lookback'), ', ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['InferencePoolNoReadyEndpoints', 'VLLMTargetDown', 'VLLMZeroThroughput']
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
    yield "Requests through the gateway fail before they reach vLLM while the EPP is down (unless its pool's\n`endpointPickerRef.failureMode` is `FailOpen`). Get the picker running again:\n\n```sh\nkubectl -n <namespace> get deploy,pods -o wide | grep <epp>\n```\n\n- Pods crash-looping: save the crashed run's log, then roll back the last change to the EPP\n  (image, flags, its ConfigMap):\n\n  ```sh\n  kubectl -n <namespace> logs deploy/<epp> --all-containers --prefix --previous > <epp>-previous.log\n  kubectl -n <namespace> rollout undo deploy/<epp>\n  ```\n\n- No pod at all (scaled to 0, evicted, unschedulable): scale it back and look at the events.\n- Pods `Running` and ready: the EPP serves and only the scrape fails (the EPP asks for a bearer token\n  on `/metrics` by default; a token that expired or lost its RBAC gets 401 or 403); no user impact, go\n  on with Confirm.\n"

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'The EPP (the endpoint picker of the Gateway API Inference Extension or the llm-d router) chooses, for\neach request, the vLLM pod to send it to. Every replica of it stopped answering Prometheus. The alert\ncounts one EPP once, whatever its number of replicas: while one replica answers, the pool is routed.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_has_alert = resolve('has_alert')
    pass
    yield "With `failureMode: FailClose` every request to the pool's models fails at the gateway; the engines\nbehind it go idle and look healthy."
    if (context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMTargetDown', _block_vars=_block_vars) or context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMZeroThroughput', _block_vars=_block_vars)):
        pass
        yield ' Where its\npool is the only one of the namespace (`only_pool_in_namespace="true"` on this alert), the example Alertmanager\nconfiguration mutes the engine symptoms of the namespace while this fires; beside a second pool they page too,\nas obspack cannot tell which pool an engine serves.'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_epp = resolve('epp')
    pass
    yield '1. Was the EPP serving until now? Its targets, 1 is up:\n\n   ```promql\n   up'
    yield str((undefined(name='epp') if l_0_epp is missing else l_0_epp))
    yield "\n   ```\n\n2. The EPP's own state: the checks below (Deployment, logs, InferencePool, objectives).\n\n"
    template = environment.get_template('runbooks/_inference-pool.md.j2', 'runbooks/inference-gateway-picker-down.md.j2')
    gen = template.root_render_func(template.new_context(context.get_all(), True, {}))
    try:
        for event in gen:
            yield event
    finally: gen.close()
    yield '\n3. Scrapes answered 401 or 403 mean the EPP runs and Prometheus is refused: the EPP checks a bearer\n   token on `/metrics` by default. `obspack doctor` reports it with the fix.\n'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **The EPP crashed** after a change of image, flags or plugin configuration, or ran out of memory.\n2. **The EPP cannot start**: its ServiceAccount lost the RBAC it needs to watch pods and the\n   InferencePool, or the InferencePool it is told to serve (`--pool-name`) does not exist.\n3. **Scaled to zero or evicted** (node drain without a PodDisruptionBudget).\n4. **Only the scrape fails**: the metrics reader's token expired or its ClusterRole binding was removed.\n"

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **Crash:** roll back (above); raise its memory limit if it was OOM-killed.\n2. **Cannot start:** restore the RBAC or the pool name from the chart's values; the log says which.\n3. **Scaled away:** scale back up and give it at least two replicas with a PodDisruptionBudget.\n4. **Scrape only:** renew the token Secret the ServiceMonitor sends, and the binding of its ServiceAccount\n   to a ClusterRole allowing `get` on the non-resource URL `/metrics`.\n"

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_epp = resolve('epp')
    l_0_match = resolve('match')
    pass
    yield "The EPP's targets are up and its pool gauges are back:\n\n```promql\nup"
    yield str((undefined(name='epp') if l_0_epp is missing else l_0_epp))
    yield '\n```\n\n```promql\nllm_d_epp_ready_endpoints'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', source='epp', _block_vars=_block_vars))
    yield ' or inference_pool_ready_pods'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', source='epp', _block_vars=_block_vars))
    yield '\n```\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "- The EPP crashes again on the previous image: to the owners of the gateway (platform team).\n- The gateway itself (Envoy, Istio, kgateway) cannot reach a running EPP: to the gateway's owners.\n"

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=17&2=20&3=23&4=26&5=29&6=34&27=44&32=54&34=64&39=68&43=78&48=80&53=88&60=98&67=108&71=119&75=121&78=126'