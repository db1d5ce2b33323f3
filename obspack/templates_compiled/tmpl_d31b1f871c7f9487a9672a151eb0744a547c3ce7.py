from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-autoscaler-scale-up-blocked.md.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    parent_template = None
    l_0_held = resolve('held')
    l_0_alert = resolve('alert')
    l_0_plane = l_0_fires_when = l_0_related = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-autoscaler-scale-up-blocked.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'GPU capacity: the scheduler finds no node with the GPUs the pod asks for'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('a vLLM pod that requests GPUs (whole ones or MIG slices) is unschedulable, ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMAutoscalerMaxedOut', 'VLLMTargetDown', 'VLLMErrorBudgetBurn']
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
    yield "Replicas the autoscaler asked for cannot start, so the running ones carry the load alone.\n\n1. Read the scheduler's reason on the pending pod (Confirm 1): it says whether GPUs, memory or a taint is\n   missing, and that decides the fix.\n2. While the pod waits, the running replicas serve; do not restart them.\n"

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'A new vLLM replica was created (by an autoscaler, a rollout or by hand) and waits for a node with free\nGPUs. Until one is found it serves nothing: the scale-up the autoscaler asked for has not happened, and\nthe existing replicas carry the load.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'The model runs with fewer replicas than it needs: queues and time to first token grow on the others. During\na rollout, the old replicas stay, and so does the old version.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_on = resolve('on')
    l_0_match_nodes = resolve('match_nodes')
    l_0_match = resolve('match')
    pass
    yield "1. The scheduler's reason (the `FailedScheduling` events, e.g. `Insufficient nvidia.com/gpu`):\n\n   ```sh\n   kubectl -n <namespace> describe pod <pod>\n   ```\n\n2. GPUs allocatable and requested per node:\n\n   ```promql\n   sum by ("
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'node', _block_vars=_block_vars))
    yield ') (kube_node_status_allocatable'
    yield str(context.call((undefined(name='match_nodes') if l_0_match_nodes is missing else l_0_match_nodes), 'resource="nvidia_com_gpu"', _block_vars=_block_vars))
    yield ')\n   ```\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'node', _block_vars=_block_vars))
    yield ') (kube_pod_container_resource_requests'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), extra=('resource="nvidia_com_gpu"',), source='kube_state_metrics', _block_vars=_block_vars))
    yield ')\n   ```\n\n3. Other pods of the namespace pending too:\n\n   ```promql\n   max by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', _block_vars=_block_vars))
    yield ') (kube_pod_status_unschedulable'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', source='kube_state_metrics', _block_vars=_block_vars))
    yield ') == 1\n   ```\n'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **No free GPUs:** every GPU node is full, and the cluster autoscaler cannot add one (quota, capacity of\n   the GPU type in the zone, a node group at its maximum).\n2. **GPUs free, but not on a node that fits:** the pod asks for more GPUs than any one node has free\n   (tensor parallelism), or a node selector, affinity or taint narrows the choice.\n3. **Memory or CPU, not GPUs:** the host RAM request does not fit next to the GPUs that are free.\n4. **A GPU node not ready:** the GPU operator's device plugin has not registered the GPUs yet.\n"

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
    yield "1. **Add GPU capacity:** raise the GPU node group's maximum, or request capacity of the GPU type; a cluster\n   autoscaler adds a node for a pending pod it can place.\n2. **Free GPUs:** scale down a lower-priority model, or give vLLM's deployments a higher PriorityClass so\n   they preempt batch work.\n3. **Fit the pod:** lower the host RAM request if it is what does not fit (`obspack rightsize` gives a safe\n   value), or relax the node selector.\n4. **Lower the autoscaler's maximum** to what the cluster can hold, so it stops asking for replicas that\n   cannot run"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMAutoscalerMaxedOut', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMAutoscalerMaxedOut', _block_vars=_block_vars))
        yield ' tells you when it is too low)'
    yield '.\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. The pod is scheduled and its vLLM container starts:\n\n   ```sh\n   kubectl -n <namespace> get pod <pod> -o wide\n   ```\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "- No GPU capacity to add: to the owners of the GPU node pools or the cloud account's quota.\n"

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=15&2=18&3=21&4=24&5=29&12=39&17=49&21=59&31=71&35=75&41=79&44=84&52=94&60=105&62=112&69=122'