from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-host-memory-near-limit.md.j2'

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
    l_0_host = l_0_plane = l_0_fires_when = l_0_related = l_0_ctr = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-host-memory-near-limit.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_host = context.vars['host'] = environment.get_template('runbooks/_host-ram.md.j2', 'runbooks/vllm-host-memory-near-limit.md.j2').make_module(context.get_all(), True, {'ctr': l_0_ctr, 'fires_when': l_0_fires_when, 'host': l_0_host, 'plane': l_0_plane, 'related': l_0_related})
    context.exported_vars.discard('host')
    l_0_plane = "host RAM (the container's memory limit), not GPU memory"
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(("a vLLM container's working set is above ", context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio')), ' of its memory limit ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMContainerOOMKilled', 'VLLMContainerRestarted', 'VLLMGPUMemoryNearFull', 'VLLMRequestPreemptions']
    context.vars['related'] = l_0_related
    context.exported_vars.add('related')
    l_0_ctr = context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'container')
    context.vars['ctr'] = l_0_ctr
    context.exported_vars.add('ctr')
    yield from parent_template.root_render_func(context)

def block_now(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "The kernel kills the container when its working set reaches the limit, and every request in flight on it\nfails. Before that happens:\n\n1. Is it still climbing? Confirm step 2 graphs the last hours. Flat just under the limit, it may hold;\n   climbing, it will be killed.\n2. If it climbs, raise the memory limit (and request) now by a quarter of today's limit. This rolls the pods\n   one at a time, which is gentler than a kill; make the same change where the deployment is managed, or\n   a GitOps tool may revert it:\n\n   ```sh\n   kubectl -n <namespace> set resources deployment/<deployment> -c <container> --limits=memory=<new-limit> --requests=memory=<new-limit>\n   ```\n"

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
    yield "The container's working set is the memory the kernel counts against the limit: the processes' resident\nmemory, shared memory such as `/dev/shm`, and file cache that is in active use. It has stayed above\n"
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'), _block_vars=_block_vars))
    yield ' of `resources.limits.memory` '
    yield str(context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_'), _block_vars=_block_vars))
    yield ". When it reaches the limit, the kernel\nkills a process of the container (exit code 137) and Kubernetes restarts it with reason `OOMKilled`.\n\nThis is host RAM. The GPU's memory has its own limit"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMGPUMemoryNearFull', _block_vars=_block_vars):
        pass
        yield ' and its own alert,\n'
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMGPUMemoryNearFull', _block_vars=_block_vars))
    yield '.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'None yet. If the container reaches its limit, every request in flight on this replica fails at once, and\nthe replica serves nothing until the model has loaded again, which takes minutes for large models. The\nother replicas take its traffic meanwhile, so latency rises across the model.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_c = resolve('c')
    l_0_ctr = resolve('ctr')
    l_0_on = resolve('on')
    l_0_match = resolve('match')
    pass
    yield '1. Working set as a share of the limit, for the container that fired:\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MEMORY_LIMIT_RATIO'))
    yield str((undefined(name='ctr') if l_0_ctr is missing else l_0_ctr))
    yield '\n   ```\n\n   The same in bytes, working set and then limit:\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MEMORY_WORKING_SET'))
    yield str((undefined(name='ctr') if l_0_ctr is missing else l_0_ctr))
    yield '\n   ```\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MEMORY_LIMIT'))
    yield str((undefined(name='ctr') if l_0_ctr is missing else l_0_ctr))
    yield '\n   ```\n\n2. Is it growing? Growth in bytes per hour over the last six hours:\n\n   ```promql\n   deriv('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MEMORY_WORKING_SET'))
    yield str((undefined(name='ctr') if l_0_ctr is missing else l_0_ctr))
    yield '[6h]) * 3600\n   ```\n\n   Flat and high since the container started: the limit is too small for this setup. Rising with traffic\n   and falling after it: request-driven. Rising steadily at flat traffic for hours: a leak.\n\n3. Is it process memory, or shared memory and file cache? Resident memory of the processes:\n\n   ```promql\n   max by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'container', _block_vars=_block_vars))
    yield ') (container_memory_rss'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'container', source='cadvisor', _block_vars=_block_vars))
    yield ')\n   ```\n\n   When this is well below the working set, the rest is file cache (the kernel gives it back under\n   pressure) or `/dev/shm` (it does not). Check `/dev/shm`:\n\n   ```sh\n   kubectl -n <namespace> exec <pod> -c <container> -- df -h /dev/shm\n   ```\n\n4. Which processes hold the memory (RSS in KiB; if the image has no `ps`, skip this step):\n\n   ```sh\n   kubectl -n <namespace> exec <pod> -c <container> -- ps -eo pid,rss,etime,args --sort=-rss\n   ```\n\n5. What the container asked for, and the engine flags that reserve host memory (`--swap-space`,\n   `--cpu-offload-gb`, `--api-server-count`, `--data-parallel-size`, `--tensor-parallel-size`):\n\n   ```sh\n   kubectl -n <namespace> get pod <pod> -o jsonpath=\'{range .spec.containers[*]}{.name}{" request="}{.resources.requests.memory}{" limit="}{.resources.limits.memory}{"\\n"}{end}\'\n   ```\n\n   ```sh\n   kubectl -n <namespace> get pod <pod> -o jsonpath=\'{.spec.containers[?(@.name=="<container>")].args}\'\n   ```\n'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_host = resolve('host')
    pass
    yield str(context.call(environment.getattr((undefined(name='host') if l_0_host is missing else l_0_host), 'causes'), _block_vars=_block_vars))
    yield '\n'

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_host = resolve('host')
    pass
    yield str(context.call(environment.getattr((undefined(name='host') if l_0_host is missing else l_0_host), 'fixes'), _block_vars=_block_vars))
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
    l_0_c = resolve('c')
    l_0_ctr = resolve('ctr')
    l_0_match = resolve('match')
    pass
    yield '1. The peak over a day that includes a restart and a traffic peak stays below '
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'), _block_vars=_block_vars))
    yield ':\n\n   ```promql\n   max_over_time('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MEMORY_LIMIT_RATIO'))
    yield str((undefined(name='ctr') if l_0_ctr is missing else l_0_ctr))
    yield '[24h])\n   ```\n\n2. The container did not restart:\n\n   ```promql\n   increase(kube_pod_container_status_restarts_total'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'container', source='kube_state_metrics', _block_vars=_block_vars))
    yield '[24h])\n   ```\n'

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
    yield '- The nodes have no allocatable memory left for a larger limit (the new pod stays `Pending`): to the\n  cluster platform team, for larger nodes or a different node pool.\n- The working set keeps growing at flat traffic: to the owners of the vLLM image, with the version, the\n  engine flags and the growth graph from step 2.\n'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMContainerOOMKilled', _block_vars=_block_vars):
        pass
        yield '- The container is OOM-killed anyway: follow '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMContainerOOMKilled', _block_vars=_block_vars))
        yield '.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=18&2=21&3=23&4=26&5=29&6=32&7=37&21=47&24=62&27=66&28=69&30=72&35=82&39=95&45=98&49=101&55=104&64=107&91=112&92=121&94=124&95=133&97=136&98=150&101=152&107=155&110=158&115=169&116=172'