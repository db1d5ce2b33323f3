from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-target-down.md.j2'

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
    l_0_plane = l_0_fires_when = l_0_related = l_0_target = l_0_crash = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-target-down.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'none directly; a crash of either plane makes the target go down'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('Prometheus cannot scrape a vLLM target that served vLLM metrics (or, for jobs matching `', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'job_regex'), '`, was up) within the last ', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'lookback'), ', ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMContainerRestarted', 'VLLMContainerOOMKilled', 'VLLMZeroThroughput', 'ObspackExporterTargetDown']
    context.vars['related'] = l_0_related
    context.exported_vars.add('related')
    l_0_target = context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', source='vllm')
    context.vars['target'] = l_0_target
    context.exported_vars.add('target')
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
    yield "Prometheus cannot reach this pod, so nothing else about it can be seen either. Find out what the pod is\ndoing:\n\n```sh\nkubectl -n <namespace> get pod <pod> -o wide\n```\n\n- Restarting or `CrashLoopBackOff`: save the crashed run's log now (the next restart overwrites it), then\n  follow the crash triage below:\n\n  ```sh\n  kubectl -n <namespace> logs <pod> -c <container> --previous > <pod>-previous.log\n  ```\n\n- `Running` and not ready for longer than a model load takes, or on a node that is `NotReady`: the other\n  replicas already get its traffic if its readiness probe fails; delete the pod so that its controller\n  starts a new one:\n\n  ```sh\n  kubectl -n <namespace> delete pod <pod>\n  ```\n\n- `Running` and ready: vLLM serves, only the scrape fails; no user impact, go on with Confirm.\n"

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "The pod's metrics endpoint stopped answering Prometheus. The target still exists, so the pod has not\nbeen scaled away; it is crashing, restarting, still loading its model, hung, or unreachable. Only targets\nthat recently served vLLM metrics count, so a target that never worked does not fire this alert.\n\nWhile the target is down, every other alert on this pod is blind: no KV cache, queue or throughput alert\ncan fire for it.\n"

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Usually the replica does not serve either: requests to it fail or the load balancer has taken it out. If\nonly the scrape is broken (network policy, scrape settings), users see nothing, but the pod is no longer\nwatched.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_on = resolve('on')
    l_0_match = resolve('match')
    l_0_target = resolve('target')
    pass
    yield "1. The pod's state (the first command above). `CrashLoopBackOff` or a rising restart count: go through\n   the first section of this page. `Running` but not ready: starting up or failing probes. `Pending`,\n   `Terminating` or `Unknown`: look at the node.\n\n2. The pod's events, for probe failures, kills and node problems:\n\n   ```sh\n   kubectl -n <namespace> get events --field-selector involvedObject.name=<pod> --sort-by=.lastTimestamp\n   ```\n\n3. Is it only this target? vLLM targets down per job in this cluster:\n\n   ```promql\n   count by ("
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'job', _block_vars=_block_vars))
    yield ') (up'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), source='vllm', _block_vars=_block_vars))
    yield ' == 0)\n   ```\n\n   Many targets at once, across nodes: the cause is on the Prometheus side (scrape settings, network).\n\n4. How long scrapes of this target take, against its scrape timeout (10s unless set):\n\n   ```promql\n   max by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'job', 'instance', _block_vars=_block_vars))
    yield ') (scrape_duration_seconds'
    yield str((undefined(name='target') if l_0_target is missing else l_0_target))
    yield ")\n   ```\n\n5. Ask the endpoint yourself. `<port>` is vLLM's `--port` (8000 unless set). In one terminal:\n\n   ```sh\n   kubectl -n <namespace> port-forward pod/<pod> <port>:<port>\n   ```\n\n   and in another:\n\n   ```sh\n   curl -s -m 10 -o /dev/null -w '%{http_code} in %{time_total}s\\n' http://127.0.0.1:<port>/metrics\n   ```\n\n   `/health` answers the same way when the engine is alive. A refused connection while the log shows\n   weights loading means the server is not up yet.\n"

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_alert = resolve('alert')
    pass
    yield '1. **The container crashed or is restarting.** Host RAM, GPU VRAM or an application crash;\n   [Did it crash, and which memory ran out?](#did-it-crash-and-which-memory-ran-out) tells which.\n2. **The model is still loading** after a restart. vLLM opens its HTTP port only when the engine is ready,\n   which for large models takes longer than '
    yield str(environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_'))
    yield '.\n3. **The server answers too slowly.** An overloaded or stuck engine answers `/metrics` after the scrape\n   timeout.\n4. **The node has a problem.** The node is `NotReady`, or its network is down.\n5. **Scrape settings changed.** The port name, path or a `NetworkPolicy` changed so that Prometheus no\n   longer reaches the pod.\n'

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_links = resolve('links')
    l_0_alert = resolve('alert')
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    l_0_crash_pages = missing
    pass
    yield '1. **Crash or restart:** follow the branch that\n   [Did it crash, and which memory ran out?](#did-it-crash-and-which-memory-ran-out) picks'
    l_0_crash_pages = context.call((undefined(name='links') if l_0_links is missing else l_0_links), 'VLLMContainerOOMKilled', 'VLLMContainerRestarted', _block_vars=_block_vars)
    _block_vars['crash_pages'] = l_0_crash_pages
    if (undefined(name='crash_pages') if l_0_crash_pages is missing else l_0_crash_pages):
        pass
        yield ' ('
        yield str((undefined(name='crash_pages') if l_0_crash_pages is missing else l_0_crash_pages))
        yield ')'
    yield '.\n2. **Still loading:** wait for the load to finish; if loads keep exceeding '
    yield str(environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_'))
    yield ', cache the\n   weights on a local volume instead of downloading them at start, and give the startup probe enough time.\n3. **Too slow:** if requests are stuck, save the log and delete the pod'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMZeroThroughput', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMZeroThroughput', _block_vars=_block_vars))
        yield ')'
    yield '. If the pod is only busy,\n   raise the scrape timeout of the vLLM `ServiceMonitor` or `PodMonitor` (`scrapeTimeout`, for example to\n   10s; it must stay below the scrape interval).\n4. **Node:** cordon the node and delete the pod so that it starts elsewhere:\n\n   ```sh\n   kubectl cordon <node>\n   ```\n\n5. **Scrape settings:** restore the port, path or `NetworkPolicy` that worked, then fix the change.\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_target = resolve('target')
    l_0_c = resolve('c')
    l_0_match = resolve('match')
    pass
    yield "The target is up again and vLLM's series are back:\n\n```promql\nup"
    yield str((undefined(name='target') if l_0_target is missing else l_0_target))
    yield '\n```\n\n```promql\n'
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'RUNNING'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', _block_vars=_block_vars))
    yield '\n```\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '- The node is `NotReady`, or pods on it cannot be reached: to the cluster platform team.\n- Many vLLM targets are down at once: to the owners of the monitoring stack (Prometheus, its scrape\n  settings and network access).\n- The pod is up and healthy but cannot be scraped after the settings were restored: to the owners of the\n  monitoring stack.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=17&2=20&3=23&4=26&5=29&6=32&7=37&32=47&40=57&45=67&59=79&67=83&85=88&89=98&96=101&98=115&99=123&101=125&112=132&116=144&120=146&123=150'