from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-error-budget-burn.md.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    parent_template = None
    l_0_slo = resolve('slo')
    l_0_plane = l_0_fires_when = l_0_related = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-error-budget-burn.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'none directly; the usual causes are a full KV cache or queue, a failing pod, or a bad rollout'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(("a model's SLO (the `slo` label) burns its error budget faster than a factor over both windows of a pair: ", environment.getattr((undefined(name='slo') if l_0_slo is missing else l_0_slo), 'rule'), "; and the long window holds at least the model's minimum of requests", ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMRequestQueueBacklog', 'VLLMKVCacheUsageCritical', 'VLLMRequestPreemptions', 'VLLMZeroThroughput', 'VLLMTargetDown', 'VLLMContainerRestarted', 'VLLMGPUMemoryNearFull']
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
    yield "Users of this model are getting slow or failed answers now. Find out whether a few pods or all of them\nare at fault, and act on that:\n\n1. Open the alert's `dashboard_url` (the SLO page on this model) and read its pod table at the bottom.\n2. A few pods far above the rest: take them out of service so that their controller replaces them (save\n   their logs first, `kubectl -n <namespace> logs <pod> -c <container> > <pod>.log`):\n\n   ```sh\n   kubectl -n <namespace> delete pod <pod>\n   ```\n\n3. Every pod alike, and the burn began with a rollout: roll it back. Every pod alike without a rollout: the\n   model is saturated; add replicas:\n\n   ```sh\n   kubectl -n <namespace> scale deployment/<deployment> --replicas=<replicas>\n   ```\n"

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_slo = resolve('slo')
    try:
        t_1 = environment.filters['lower']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'lower' found.")
    pass
    yield 'Users of one model get slow or failed answers often enough to threaten its objective for the\n'
    yield str(environment.getattr((undefined(name='slo') if l_0_slo is missing else l_0_slo), 'period'))
    yield ' period. The `slo` label says which promise is broken:\n\n'
    for l_1_sli in environment.getattr((undefined(name='slo') if l_0_slo is missing else l_0_slo), 'slis'):
        _loop_vars = {}
        pass
        yield '- `'
        yield str(l_1_sli)
        yield '`: '
        yield str(t_1(environment.getitem(environment.getattr((undefined(name='slo') if l_0_slo is missing else l_0_slo), 'titles'), l_1_sli)))
        if (l_1_sli == 'availability'):
            pass
            yield ', requests answered with a 5xx status'
        elif (l_1_sli == 'time_to_first_token'):
            pass
            yield ', requests whose first token came later than the threshold'
        else:
            pass
            yield ', gaps between streamed tokens longer than the threshold'
        yield '.\n'
    l_1_sli = missing
    yield '\nThe burn rate is how fast the error budget goes: 1 spends exactly the whole budget in the period, 14.4\nspends 2% of a 30-day budget in one hour. `severity: critical` (the 1h and 6h pairs) means the budget is\ngoing in hours or days: act now. `severity: warning` (the 1d and 3d pairs) is a slow leak: fix it this\nweek. The alert names no pod: the SLO is what users of the whole model see.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'For as long as the burn lasts, the share of requests given by the burn rate times (1 - objective) is slow\nor failing: at 14.4 with a 99% objective, about one in seven. Chat users see long pauses before the first\nword or a stuttering stream; API clients see errors or time out.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_rules = resolve('rules')
    l_0_dashboard = resolve('dashboard')
    l_0_model_alerts = resolve('model_alerts')
    l_0_model_pods = resolve('model_pods')
    try:
        t_2 = environment.filters['indent']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No filter named 'indent' found.")
    try:
        t_3 = environment.filters['trim']
    except KeyError:
        @internalcode
        def t_3(*unused):
            raise TemplateRuntimeError("No filter named 'trim' found.")
    pass
    yield 'The other window pairs fire on these expressions (same labels, their own `long` and `short`); like the one\nabove, they need no editing:\n'
    for l_1_rule in (undefined(name='rules') if l_0_rules is missing else l_0_rules)[1:]:
        _loop_vars = {}
        pass
        yield '\n```promql\n'
        yield str(t_3(environment.getattr(l_1_rule, 'expr')))
        yield '\n```\n'
    l_1_rule = missing
    yield "\n1. **Open the alert's dashboard link.** Its `dashboard_url` annotation, which Alertmanager puts in the\n   notification, opens the "
    yield str(environment.getattr((undefined(name='dashboard') if l_0_dashboard is missing else l_0_dashboard), 'title'))
    yield " page with the alert's cluster, namespace and model already\n   chosen (`"
    yield str(environment.getattr((undefined(name='dashboard') if l_0_dashboard is missing else l_0_dashboard), 'url'))
    yield "`). It shows each SLO of the model against its objective, the burn rate over\n   every window the alert uses (dashed lines at the factors that fire it), the error budget left this\n   period, and at the bottom **Pods: slow and failed shares now**: one row per pod of the model, with the\n   share of its requests (or token gaps) that miss each SLO, with the model's own threshold. A row opens\n   that pod's triage page.\n\n   One or two pods far above the rest: the cause is on those pods; take each as `<pod>` (a row's triage\n   page, and step 3 for its restarts). Every pod alike: the cause is load, a rollout or something all the\n   model's pods share.\n\n2. **The cause alerts firing now on the model's pods**, which the SLO page does not show. Memory, GPU and\n   restart alerts name a pod, not a model, so this keeps the alerts of the pods that serve the model:\n\n   ```promql\n   "
    yield str(t_2(context.call((undefined(name='model_alerts') if l_0_model_alerts is missing else l_0_model_alerts), _block_vars=_block_vars), 3))
    yield "\n   ```\n\n3. **The model's pods and their restarts.** Prometheus knows which pods served the model in the last hour,\n   because vLLM labels its series with `model_name`; this lists each of them with its container restarts\n   in that hour, most first:\n\n   ```promql\n   "
    yield str(t_2(context.call((undefined(name='model_pods') if l_0_model_pods is missing else l_0_model_pods), _block_vars=_block_vars), 3))
    yield "\n   ```\n\n   A pod above 0 crashed: its restarts explain failed requests (read how it stopped with\n   `kubectl -n <namespace> get pod <pod> -o jsonpath='{.status.containerStatuses[*].lastState.terminated}'`).\n"

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_links = resolve('links')
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    l_0_saturation = missing
    pass
    l_0_saturation = context.call((undefined(name='links') if l_0_links is missing else l_0_links), 'VLLMRequestQueueBacklog', 'VLLMKVCacheUsageCritical', 'VLLMRequestPreemptions', _block_vars=_block_vars)
    _block_vars['saturation'] = l_0_saturation
    yield '1. **Saturation.** The KV cache or the batch is full and requests queue'
    if (undefined(name='saturation') if l_0_saturation is missing else l_0_saturation):
        pass
        yield ' ('
        yield str((undefined(name='saturation') if l_0_saturation is missing else l_0_saturation))
        yield ')'
    yield ': time to first token\n   grows with the queue, and preempted requests stall mid-stream, which hurts inter-token latency.\n2. **A failing pod.** An engine that is stuck'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMZeroThroughput', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMZeroThroughput', _block_vars=_block_vars))
        yield ')'
    yield ', down'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMTargetDown', _block_vars=_block_vars):
        pass
        yield '   ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMTargetDown', _block_vars=_block_vars))
        yield ')'
    yield ' or restarting'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMContainerRestarted', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMContainerRestarted', _block_vars=_block_vars))
        yield ')'
    yield " answers with 5xx or\n   not at all, and the gateway keeps sending it a share of the traffic.\n3. **A rollout.** A new image, model revision or engine flags (`--max-num-seqs`, `--max-num-batched-tokens`,\n   chunked prefill) changed latency for every pod at once: compare the burn's start with the rollout.\n4. **A change in traffic.** Longer prompts, bigger `max_tokens` or more concurrent streams than the\n   replicas were sized for: the fleet page's token rates and queue show it.\n5. **A GPU problem** on some pods (thermal throttling, Xid errors, a full framebuffer"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMGPUMemoryNearFull', _block_vars=_block_vars):
        pass
        yield ': '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMGPUMemoryNearFull', _block_vars=_block_vars))
    yield '):\n   those pods are slower than the rest.\n'

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **Follow the cause alert** that fires for the model's pods (step 2 of Confirm): its runbook has the fix.\n2. **Take out a bad pod.** If a few pods carry the bad requests (the pod table, step 1 of Confirm), delete\n   them so their controller replaces them (save their logs first):\n\n   ```sh\n   kubectl -n <namespace> delete pod <pod>\n   ```\n\n3. **Roll back** a rollout that started the burn.\n4. **Add capacity** when every pod is saturated: more replicas, or fewer concurrent sequences per pod so\n   that the ones admitted stream at full speed.\n\n   ```sh\n   kubectl -n <namespace> scale deployment/<deployment> --replicas=<replicas>\n   ```\n\n5. **If the objective is wrong** for this model (a long-context model cannot reach a short first-token\n   threshold), change it for that model in obspack.yaml (`slos.models`) rather than silencing the alert.\n"

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. On the SLO page (the alert's link), the burn rate over the short window of the pair that fired drops\n   below its dashed line within minutes, and the long window follows. The pod table shows no pod far\n   above the rest.\n2. The alert resolves. The error budget left this period stops falling; what was spent comes back only as\n   the period moves on.\n"

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "- A page (critical) that the cause alerts do not explain within 30 minutes: to the team that owns the\n  model's serving, with the SLO page's link and the pods' triage links.\n- A budget already spent for the period: to whoever decides the release pace of that model; risky changes\n  wait until the budget recovers.\n"

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=14&2=17&3=20&4=23&5=28&24=38&26=54&28=56&29=60&37=76&42=86&45=111&48=115&53=119&54=121&68=123&76=125&82=128&83=140&84=143&86=149&87=158&93=167&96=173&116=183&123=193'