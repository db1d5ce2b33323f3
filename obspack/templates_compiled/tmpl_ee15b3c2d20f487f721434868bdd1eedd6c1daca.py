from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-container-oom-killed.md.j2'

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
    l_0_host = l_0_plane = l_0_fires_when = l_0_related = l_0_ctr = l_0_ksm_ctr = l_0_crash = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-container-oom-killed.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_host = context.vars['host'] = environment.get_template('runbooks/_host-ram.md.j2', 'runbooks/vllm-container-oom-killed.md.j2').make_module(context.get_all(), True, {'crash': l_0_crash, 'ctr': l_0_ctr, 'fires_when': l_0_fires_when, 'host': l_0_host, 'ksm_ctr': l_0_ksm_ctr, 'plane': l_0_plane, 'related': l_0_related})
    context.exported_vars.discard('host')
    l_0_plane = "host RAM (the container's memory limit). A CUDA out-of-memory error never ends as `OOMKilled`"
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('a vLLM container restarted within the last ', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'), ' and its last termination reason is `OOMKilled` (fires ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ')', ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMHostMemoryNearLimit', 'VLLMContainerRestarted', 'VLLMTargetDown', 'VLLMGPUMemoryNearFull']
    context.vars['related'] = l_0_related
    context.exported_vars.add('related')
    l_0_ctr = context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'container')
    context.vars['ctr'] = l_0_ctr
    context.exported_vars.add('ctr')
    l_0_ksm_ctr = context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'container', source='kube_state_metrics')
    context.vars['ksm_ctr'] = l_0_ksm_ctr
    context.exported_vars.add('ksm_ctr')
    l_0_crash = True
    context.vars['crash'] = l_0_crash
    context.exported_vars.add('crash')
    yield from parent_template.root_render_func(context)

def block_now(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "The container is back already, or waiting to restart (`CrashLoopBackOff`). Stop the next kill:\n\n1. If the kills began with a rollout, roll it back and investigate afterwards:\n\n   ```sh\n   kubectl -n <namespace> rollout undo deployment/<deployment>\n   ```\n\n2. Otherwise give the container room: raise its memory limit (and request) by a quarter of today's limit\n   (Confirm step 3 shows it). This rolls the pods one at a time; a GitOps tool may revert it, so make the\n   same change where the deployment is managed:\n\n   ```sh\n   kubectl -n <namespace> set resources deployment/<deployment> -c <container> --limits=memory=<new-limit> --requests=memory=<new-limit>\n   ```\n\nThen confirm below that it was host RAM, not a GPU error.\n"

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    l_0_t = resolve('t')
    pass
    yield "The Linux kernel killed the container because its memory reached `resources.limits.memory`, and\nKubernetes restarted it. The kill is a SIGKILL (exit code 137): vLLM had no chance to finish requests or\nlog an error, so the container's log simply stops.\n\nThis is host RAM, not GPU memory. When the GPU runs out, PyTorch raises an error inside the process and the\ncontainer ends with reason `Error`"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMContainerRestarted', _block_vars=_block_vars):
        pass
        yield '; that case is '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMContainerRestarted', 'gpu-vram-cuda-out-of-memory', 'the GPU branch of VLLMContainerRestarted', _block_vars=_block_vars))
    yield '.\n\nkube-state-metrics keeps reporting the last termination reason until the container stops again, so the\nalert also requires a restart within the last '
    yield str(environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'))
    yield '.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Every request in flight on this replica failed (connection reset, or 502/503 from the gateway). The replica\nserves nothing until the model has loaded again, which takes minutes for large models, and the other\nreplicas absorb its traffic meanwhile. If the kill repeats, the pod goes into `CrashLoopBackOff` and waits\nlonger after each try (up to five minutes), so the capacity stays lost.\n'

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
    yield '1. The first command above prints the container\'s termination record. Expect `"reason":"OOMKilled"`\n   and `"exitCode":137`. The time from `startedAt` to `finishedAt` tells when it died. Seconds to a few\n   minutes: while loading the model. Hours: under traffic, or after slow growth.\n\n2. The last lines the container wrote before the kill. Lines about loading weights, profiling memory or\n   capturing CUDA graphs mean startup; request or throughput lines mean traffic:\n\n   ```sh\n   kubectl -n <namespace> logs <pod> -c <container> --previous --tail=30\n   ```\n\n3. Memory use over the last hour against the limit. A spike that killed the container within one scrape\n   interval can read lower than the limit here:\n\n   ```promql\n   max_over_time('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MEMORY_WORKING_SET'))
    yield str((undefined(name='ctr') if l_0_ctr is missing else l_0_ctr))
    yield '[1h])\n   ```\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MEMORY_LIMIT'))
    yield str((undefined(name='ctr') if l_0_ctr is missing else l_0_ctr))
    yield '\n   ```\n\n4. Is it one replica or all of them? Restarts over the last day, per pod of the same container name:\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', _block_vars=_block_vars))
    yield ') (increase(kube_pod_container_status_restarts_total'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'container', source='kube_state_metrics', _block_vars=_block_vars))
    yield '[24h]))\n   ```\n\n   All replicas: the configuration or a new release. One replica: an unlucky request mix, or a leak.\n\n5. Did it start with a rollout? Compare the revision times with the first kill:\n\n   ```sh\n   kubectl -n <namespace> rollout history deployment/<deployment>\n   ```\n'

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
    yield '\n7. **A change raised the need.** A new vLLM release, a larger model or new engine flags arrived with the\n   last rollout, and the limit stayed the same.\n'

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_host = resolve('host')
    pass
    yield 'If the kills started with a rollout, roll it back first and investigate afterwards:\n\n```sh\nkubectl -n <namespace> rollout undo deployment/<deployment>\n```\n\nOtherwise, starting with the step that stops the crash loop:\n\n'
    yield str(context.call(environment.getattr((undefined(name='host') if l_0_host is missing else l_0_host), 'fixes'), _block_vars=_block_vars))
    yield '\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_ksm_ctr = resolve('ksm_ctr')
    l_0_pct = resolve('pct')
    l_0_cfg = resolve('cfg')
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    l_0_c = resolve('c')
    l_0_ctr = resolve('ctr')
    pass
    yield '1. The container stays up through a model load and a traffic peak; no restart in the last day:\n\n   ```promql\n   increase(kube_pod_container_status_restarts_total'
    yield str((undefined(name='ksm_ctr') if l_0_ksm_ctr is missing else l_0_ksm_ctr))
    yield '[24h])\n   ```\n\n2. Peak memory stays below '
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr(environment.getattr(environment.getattr((undefined(name='cfg') if l_0_cfg is missing else l_0_cfg), 'alerts'), 'VLLMHostMemoryNearLimit'), 'ratio'), _block_vars=_block_vars))
    yield ' of the limit'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMHostMemoryNearLimit', _block_vars=_block_vars):
        pass
        yield ', where\n   '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMHostMemoryNearLimit', _block_vars=_block_vars))
        yield ' warns'
    yield ':\n\n   ```promql\n   max_over_time('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MEMORY_LIMIT_RATIO'))
    yield str((undefined(name='ctr') if l_0_ctr is missing else l_0_ctr))
    yield '[24h])\n   ```\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '- It is OOM-killed again after you raised the limit once with headroom: to the owners of the model\n  deployment, with the termination record, the memory graph and the engine flags.\n- The nodes cannot fit a larger limit (the pod stays `Pending`): to the cluster platform team.\n- Every replica is killed right after a rollout and rolling back is not possible: to the owners of the\n  release.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=17&2=20&3=22&4=25&5=28&6=31&7=34&8=37&9=42&28=52&34=64&37=69&39=72&45=82&61=95&65=98&71=101&82=106&83=115&87=118&96=128&98=131&102=147&105=149&106=154&109=157&112=161'