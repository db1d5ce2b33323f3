from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-kv-cache-usage-critical.md.j2'

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
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-kv-cache-usage-critical.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_kv = context.vars['kv'] = environment.get_template('runbooks/_kv.md.j2', 'runbooks/vllm-kv-cache-usage-critical.md.j2').make_module(context.get_all(), True, {'fires_when': l_0_fires_when, 'kv': l_0_kv, 'plane': l_0_plane, 'related': l_0_related})
    context.exported_vars.discard('kv')
    l_0_plane = 'GPU VRAM, inside the KV cache that vLLM reserved at start; this is about latency, not crashes'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('KV cache usage of a pod and model is above ', context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio')), ' ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMKVCacheUsageHigh', 'VLLMRequestQueueBacklog', 'VLLMRequestPreemptions', 'VLLMTargetDown', 'VLLMContainerRestarted', 'VLLMKVCacheFragmentationHigh']
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
    yield 'Users wait now. Restarting the pod does not help: the cache fills again and the requests in flight are\nlost. Relieve the pressure:\n\n1. Add replicas, or move traffic to another deployment of the model (new replicas need free GPUs and a few\n   minutes to load):\n\n   ```sh\n   kubectl -n <namespace> scale deployment/<deployment> --replicas=<replicas>\n   ```\n\n2. If no capacity can be added, shed load at the edge: rate-limit the heaviest clients at the gateway and\n   cap `max_tokens` there.\n\nWith an `engine` label, one engine of the pod is full while its siblings have room (Confirm step 2):\nadding replicas helps less than it seems. If that engine stays full, and its queue grows, while the\nothers idle, restart the pod after the other replicas have room.\n'

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pct = resolve('pct')
    l_0_t = resolve('t')
    l_0_held = resolve('held')
    l_0_alert = resolve('alert')
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield 'The KV cache, where vLLM keeps the attention state of every running request, is practically full: more\nthan '
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'), _block_vars=_block_vars))
    yield ' of its blocks are held by running requests, '
    yield str(context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_'), _block_vars=_block_vars))
    yield ". vLLM now admits a\nnew request only when another one finishes, and a running request that needs one more block forces vLLM\nto preempt another request: it drops that request's blocks and recomputes them later.\n\n"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMKVCacheUsageHigh', _block_vars=_block_vars):
        pass
        yield 'It is the sharp end of '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMKVCacheUsageHigh', _block_vars=_block_vars))
        yield '. '
    yield 'A full cache does not crash the engine; it makes\nit slow.\n\nEach data-parallel engine of a pod (`--data-parallel-size`, the `engine` label) has its own KV cache and\nis judged alone. The alert fires once for the pod, without an `engine` label, at its fullest engine\'s\nusage, when every engine is past the threshold; otherwise once per full engine, named. One full engine\nbeside engines with room means uneven placement inside the pod, not a model short of capacity.\n\n**By role** (the alert\'s `role` label, where a pod only prefills or only decodes):\n\n- `role="prefill"`: a prefill pod keeps each prompt\'s KV cache until a decode pod has read it. A full cache\n  here means the decode pods are not pulling it (slow or failing transfers, too few decode pods): look at\n  the decode side and the transfers first, not at this pod\'s size.\n- `role="decode"`: the decode pods hold every running answer; a full cache leads to preemptions and\n  stalled answers. Add decode pods (or check the P:D ratio on the Disaggregated serving dashboard).\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Users feel it now. Time to first token grows with the queue, streamed answers pause while their request is\npreempted and recomputed, and clients or the gateway start timing out. Throughput drops too, because the\nGPU repeats work for preempted requests. Long prompts and long answers are hit hardest.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_kv = resolve('kv')
    l_0_on = resolve('on')
    l_0_match = resolve('match')
    l_0_c = resolve('c')
    l_0_links = resolve('links')
    l_0_down = missing
    try:
        t_1 = environment.filters['indent']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'indent' found.")
    pass
    yield '1. '
    yield str(t_1(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'pod_state'), _block_vars=_block_vars), 3))
    yield '\n\n   Waiting above 0 or preemptions above 0 confirm that users wait. Since vLLM 0.20 the waiting requests\n   are also split by reason; `capacity` means no room in the KV cache:\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', 'reason', _block_vars=_block_vars))
    yield ') (vllm:num_requests_waiting_by_reason'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name', source='vllm', _block_vars=_block_vars))
    yield ')\n   ```\n\n2. '
    yield str(t_1(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'engines'), 'are full', _block_vars=_block_vars), 3))
    yield '\n\n3. '
    yield str(t_1(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'queue_time'), _block_vars=_block_vars), 3))
    yield '\n\n4. Did a replica go away and push its traffic here? Replicas of the model reporting over the last hours:\n\n   ```promql\n   count by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') ('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'KV_USAGE'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ')\n   ```\n\n   A drop points to a sibling pod that is down or restarting'
    l_0_down = context.call((undefined(name='links') if l_0_links is missing else l_0_links), 'VLLMTargetDown', 'VLLMContainerRestarted', _block_vars=_block_vars)
    _block_vars['down'] = l_0_down
    if (undefined(name='down') if l_0_down is missing else l_0_down):
        pass
        yield ' ('
        yield str((undefined(name='down') if l_0_down is missing else l_0_down))
        yield ')'
    yield '.\n\n5. '
    yield str(t_1(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'replicas'), _block_vars=_block_vars), 3))
    yield '\n\n6. '
    yield str(t_1(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'request_size'), _block_vars=_block_vars), 3))
    yield '\n'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. **A traffic burst, or lost capacity.** More requests than the replicas can hold, often because a sibling\n   replica crashed or is restarting.\n2. **A few very long requests.** Huge prompts or a high `max_tokens` hold many blocks each.\n3. **Uneven load balancing.** One replica gets more or longer requests than the others.\n4. **A cache too small for the traffic.** It was sized for a lighter load, or shrank after a change of\n   `--gpu-memory-utilization`, model or release.\n'

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_kv = resolve('kv')
    pass
    yield 'Restarting the pod does not help: the cache fills again, and the requests in flight are lost. First\nrelieve the pressure, then make room:\n\n- **Bring capacity back or add it.** If a sibling replica is down, handle that alert first. Otherwise\n  add replicas (step 1 below) or move traffic to another deployment of the model.\n- **Shed load at the edge** while capacity comes up: rate-limit the heaviest clients at the gateway and\n  cap `max_tokens` there.\n\nThen make room, in this order:\n\n'
    yield str(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'capacity_fixes'), _block_vars=_block_vars))
    yield '\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pct = resolve('pct')
    l_0_t = resolve('t')
    l_0_kv = resolve('kv')
    pass
    yield '1. Usage drops below '
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'), _block_vars=_block_vars))
    yield ', and waiting and preemptions go back to about 0:\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'usage'))
    yield '\n   ```\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'waiting'))
    yield '\n   ```\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'preemptions'))
    yield "\n   ```\n\n2. The model's queue time (step 3 of Confirm) returns to its level before the alert.\n"

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
    yield '- Users have waited for more than 15 minutes and no capacity can be added: declare an incident and bring\n  in the owners of the model deployment and of the gateway.\n- Several replicas of the model crash or restart at the same time: handle it as an outage of the model'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMContainerRestarted', _block_vars=_block_vars):
        pass
        yield ',\n  starting with '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMContainerRestarted', _block_vars=_block_vars))
    yield '.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=17&2=20&3=22&4=25&5=28&6=33&24=43&26=58&30=62&46=69&51=79&52=100&58=102&61=106&63=108&68=110&71=115&73=123&75=125&77=128&85=138&96=148&98=151&99=163&102=165&106=167&110=169&115=172&118=183&119=186'