from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/obspack-exporter-target-down.md.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    parent_template = None
    l_0_held = resolve('held')
    l_0_alert = resolve('alert')
    l_0_t = resolve('t')
    l_0_match = resolve('match')
    l_0_on = resolve('on')
    l_0_plane = l_0_fires_when = l_0_related = l_0_ex = l_0_by_pod = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/obspack-exporter-target-down.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'none; this is about monitoring, not the model'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('the obspack exporter reports that its last scrapes of vLLM failed (`obspack_target_up` is 0), ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ", while Prometheus' own scrapes of vLLM in the same pod all succeeded over the last ", environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'vllm_down_window'), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMTargetDown', 'VLLMKVCacheFragmentationHigh', 'VLLMCUDAAllocatorFragmentationHigh', 'VLLMContainerRestarted']
    context.vars['related'] = l_0_related
    context.exported_vars.add('related')
    l_0_ex = context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', source='exporter')
    context.vars['ex'] = l_0_ex
    context.exported_vars.add('ex')
    l_0_by_pod = context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod')
    context.vars['by_pod'] = l_0_by_pod
    context.exported_vars.add('by_pod')
    yield from parent_template.root_render_func(context)

def block_now(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_t = resolve('t')
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield "Nothing for users: vLLM serves, since Prometheus' own scrapes of it succeed; only the exporter's derived\nfigures are missing. Fix the exporter during working hours, starting from Confirm.\n\nThe rule leaves out a pod whose vLLM target was down at any scrape in the last "
    yield str(environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'vllm_down_window'))
    yield ': a dead vLLM is\n'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMTargetDown', _block_vars=_block_vars):
        pass
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMTargetDown', _block_vars=_block_vars))
        yield "'s page"
    else:
        pass
        yield 'an incident of its own'
    yield ", and the exporter, which sees vLLM die before\nPrometheus does and come back after it, adds no warning at either edge. Only where Prometheus does not\nscrape vLLM itself can vLLM be down while this fires: Confirm's first query tells.\n"

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "The obspack exporter runs next to vLLM (usually as the `obspack-exporter` container of the vLLM pod),\nreads vLLM's `/metrics` on every Prometheus scrape, and publishes figures vLLM does not: the KV cache\nfragmentation estimate, the admission headroom and the windowed prefix cache hit ratio. The exporter\nitself answers Prometheus, but its own scrapes of vLLM fail.\n"

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield "None on users. The exporter's figures derived from vLLM's metrics are missing"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMKVCacheFragmentationHigh', _block_vars=_block_vars):
        pass
        yield ', so\n'
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMKVCacheFragmentationHigh', _block_vars=_block_vars))
        yield ' cannot fire for this pod'
    yield '. The CUDA allocator figures come from\nthe probe files, not from this scrape, and keep working.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    l_0_match = resolve('match')
    l_0_on = resolve('on')
    l_0_ex = resolve('ex')
    l_0_by_pod = resolve('by_pod')
    pass
    yield "1. Is vLLM itself reachable? 1 below: Prometheus reaches it, so the exporter's path to it is what fails.\n   Nothing: Prometheus does not scrape vLLM here; check the pod"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMTargetDown', _block_vars=_block_vars):
        pass
        yield ' as for '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMTargetDown', _block_vars=_block_vars))
    yield '.\n\n   ```promql\n   up'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', source='vllm', _block_vars=_block_vars))
    yield "\n   ```\n\n2. Why the exporter's scrapes fail, by reason:\n\n   ```promql\n   sum by ("
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'reason', _block_vars=_block_vars))
    yield ') (rate(obspack_target_scrape_errors_total'
    yield str((undefined(name='ex') if l_0_ex is missing else l_0_ex))
    yield "[5m]))\n   ```\n\n   | reason | meaning |\n   |---|---|\n   | `connection` | nothing listens at the target address: vLLM is down or still loading, or the port is wrong |\n   | `timeout` | vLLM answered slower than the exporter's `--timeout` (2s unless set) |\n   | `http_status` | vLLM answered with an error status: a wrong path, or a proxy in between |\n   | `too_large` | the payload is larger than `--max-bytes` (32MiB unless set) |\n   | `parse` | the payload is not Prometheus text, or has lines the exporter cannot read |\n   | `too_many_series` | the target exposes more engines than the exporter keeps (256): the rest are dropped, the target stays up; this alone does not fire the alert |\n\n3. How long the exporter's scrapes take:\n\n   ```promql\n   max by ("
    yield str((undefined(name='by_pod') if l_0_by_pod is missing else l_0_by_pod))
    yield ') (obspack_target_scrape_duration_seconds'
    yield str((undefined(name='ex') if l_0_ex is missing else l_0_ex))
    yield ')\n   ```\n\n4. The exporter\'s log (the first command above) and its settings (`--target`, `--timeout`, `--max-bytes`):\n\n   ```sh\n   kubectl -n <namespace> get pod <pod> -o jsonpath=\'{.spec.containers[?(@.name=="obspack-exporter")].args}\'\n   ```\n'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **vLLM is down, restarting or still loading** its model, where Prometheus does not scrape vLLM\n   itself: `connection` errors, and a restart of the vLLM container.\n2. **A wrong `--target`.** The port or path does not match vLLM's `--port` and `/metrics` after a change.\n3. **vLLM answers slowly under load.** `timeout` errors at peak traffic.\n4. **A large payload.** Many LoRA adapters or many engines make `/metrics` bigger than `--max-bytes`.\n5. **An unexpected payload.** `parse` errors: the target is not vLLM, or a vLLM release changed its format.\n"

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
    yield '1. **vLLM down or loading:** '
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMTargetDown', _block_vars=_block_vars):
        pass
        yield 'follow '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMTargetDown', _block_vars=_block_vars))
        yield '; '
    yield 'this alert resolves when vLLM is back.\n2. **Wrong target:** set `--target` to `http://127.0.0.1:<port>/metrics`, with vLLM\'s `--port`.\n3. **Timeouts:** raise the exporter\'s `--timeout` (for example to 5s); keep it below the scrape timeout\n   Prometheus uses for the exporter.\n4. **Too large:** raise `--max-bytes` (for example to 64MiB).\n5. **Parse errors:** save a sample of the payload and check that it is vLLM\'s. From inside the pod:\n\n   ```sh\n   kubectl -n <namespace> exec <pod> -c obspack-exporter -- python -c "import urllib.request; print(urllib.request.urlopen(\'http://127.0.0.1:<port>/metrics\', timeout=10).read().decode()[:2000])"\n   ```\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_ex = resolve('ex')
    l_0_by_pod = resolve('by_pod')
    pass
    yield 'The exporter reaches vLLM again and its error counters stop rising:\n\n```promql\nobspack_target_up'
    yield str((undefined(name='ex') if l_0_ex is missing else l_0_ex))
    yield '\n```\n\n```promql\nsum by ('
    yield str((undefined(name='by_pod') if l_0_by_pod is missing else l_0_by_pod))
    yield ') (rate(obspack_target_scrape_errors_total'
    yield str((undefined(name='ex') if l_0_ex is missing else l_0_ex))
    yield '[5m]))\n```\n'

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
    yield '- `parse` errors against a genuine vLLM payload: to the obspack maintainers, with the vLLM version and\n  the payload sample.\n- Only if vLLM itself is down: escalate as for a vLLM pod that is down'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMTargetDown', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMTargetDown', _block_vars=_block_vars))
        yield ')'
    yield '.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=18&2=21&3=24&4=27&5=30&6=33&7=38&11=50&12=52&16=61&22=71&23=82&24=85&27=89&29=104&32=109&38=111&53=115&62=120&70=130&71=141&82=148&86=159&90=161&93=166&96=177'