from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-zero-throughput.md.j2'

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
    l_0_kv = l_0_plane = l_0_fires_when = l_0_related = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-zero-throughput.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_kv = context.vars['kv'] = environment.get_template('runbooks/_kv.md.j2', 'runbooks/vllm-zero-throughput.md.j2').make_module(context.get_all(), True, {'fires_when': l_0_fires_when, 'kv': l_0_kv, 'plane': l_0_plane, 'related': l_0_related})
    context.exported_vars.discard('kv')
    l_0_plane = 'none directly; a GPU fault or a dead worker process is the usual cause'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('a pod and model has requests running or waiting but generated no token in the last ', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'), ', ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMTargetDown', 'VLLMContainerRestarted', 'VLLMRequestQueueBacklog', 'VLLMKVCacheUsageCritical', 'VLLMGPUMemoryNearFull']
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
    yield 'The engine has work but generates nothing: every request on this replica hangs. Restart it, after saving\nwhat explains the hang:\n\n1. Save the log (one minute):\n\n   ```sh\n   kubectl -n <namespace> logs <pod> -c <container> --timestamps > <pod>-stuck.log\n   ```\n\n2. Delete the pod; its controller creates a new one and the model loads again in a few minutes:\n\n   ```sh\n   kubectl -n <namespace> delete pod <pod>\n   ```\n\nIf it hangs again on the same node, keep the node out of scheduling (`kubectl cordon <node>`) before the\nnext restart.\n\n**The alert names an `engine`:** one data-parallel engine of the pod hangs while its other engines serve.\nIts requests never finish, and the API server may keep sending it new ones. vLLM cannot restart one\nengine alone: restart the pod the same way. The requests in flight on the healthy engines are cut too, so\nwhere the other replicas of the model cannot take the traffic, scale them up first.\n'

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_t = resolve('t')
    pass
    yield 'The engine has work, but its counter of generated tokens has not moved for '
    yield str(environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'))
    yield ": it is stuck. An\nidle model never fires this alert, because it needs requests running or waiting, and neither does an\nengine put to sleep (vLLM's sleep mode, 0.11.1 and later): it serves nothing on purpose.\n\nA pod started with `--data-parallel-size` runs several engines, each judged on its own (the `engine`\nlabel, vLLM 0.8.3 and later). When every engine of the pod is stuck, as the engines of a model that step\ntogether are, the alert fires once for the pod, without an `engine` label; when only some are, it fires\nonce per stuck engine and names it. A hung engine does not stop its siblings: they keep serving, the pod's\ntotal throughput stays above zero, and only the requests placed on that engine hang.\n\nA stuck engine often still answers its HTTP port, so Kubernetes keeps the pod `Ready` and the load\nbalancer keeps sending it requests.\n"

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "Every request sent to this replica (or, with an `engine` label, placed on that engine: about one in N on\na pod of N engines) hangs until the client or the gateway gives up. With several replicas,\na share of all users equal to this replica's share of traffic sees timeouts. This lasts until the pod is\nrestarted; it rarely recovers by itself.\n"

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_kv = resolve('kv')
    l_0_c = resolve('c')
    l_0_gpu_field = resolve('gpu_field')
    l_0_match = resolve('match')
    try:
        t_1 = environment.filters['indent']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'indent' found.")
    pass
    yield '1. '
    yield str(t_1(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'pod_state'), _block_vars=_block_vars), 3))
    yield '\n\n   Tokens generated and prompt tokens processed per second:\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'GENERATION_RATE'))
    yield str(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'pm'))
    yield '\n   ```\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'PROMPT_RATE'))
    yield str(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'pm'))
    yield '\n   ```\n\n   The gauges frozen at the same values for minutes mean that the process that updates them is gone or\n   hung.\n\n2. '
    yield str(t_1(context.call(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'engines'), 'are stuck', _block_vars=_block_vars), 3))
    yield '\n\n3. The last lines of the log, with timestamps. vLLM logs its throughput every few seconds while it works;\n   look for the last such line and for `NCCL`, `timeout`, `watchdog`, `EngineCore`, `RuntimeError`:\n\n   ```sh\n   kubectl -n <namespace> logs <pod> -c <container> --timestamps --tail=200\n   ```\n\n4. What the GPUs are doing. Utilisation stuck near 100% with no tokens: a GPU kernel or a collective\n   operation between GPUs is hung. Near 0: nothing is sent to the GPU (a dead worker or a deadlock in the\n   host process).\n\n   ```promql\n   '
    yield str(t_1(context.call((undefined(name='gpu_field') if l_0_gpu_field is missing else l_0_gpu_field), 'DCGM_FI_DEV_GPU_UTIL', _block_vars=_block_vars), 3))
    yield '\n   ```\n\n   Xid errors of the same GPUs (above 0 is the code of the last Xid):\n\n   ```promql\n   '
    yield str(t_1(context.call((undefined(name='gpu_field') if l_0_gpu_field is missing else l_0_gpu_field), 'DCGM_FI_DEV_XID_ERRORS', _block_vars=_block_vars), 3))
    yield '\n   ```\n\n5. Does the driver still answer? If this hangs or prints `ERR!`, the GPU has failed:\n\n   ```sh\n   kubectl -n <namespace> exec <pod> -c <container> -- timeout 20 nvidia-smi\n   ```\n\n6. Did the engine just wake from sleep mode? The alert leaves sleeping engines out (`awake` reads 0), so a\n   stall right after a wake-up is a failed wake-up:\n\n   ```promql\n   vllm:engine_sleep_state'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name', source='vllm', extra=('sleep_state="awake"',), _block_vars=_block_vars))
    yield '\n   ```\n'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. **A hung operation between GPUs.** With tensor or pipeline parallelism, one worker stalls (a GPU fault,\n   a crashed worker) and the others wait for it in a collective operation forever.\n2. **A GPU fault.** An Xid error, a GPU that fell off the bus, or a driver problem on the node.\n3. **A dead engine or worker process.** The API server stays up with frozen numbers after the process that\n   does the work has died.\n4. **A failed wake-up.** The engine reports itself awake after sleep mode but its weights or KV cache did\n   not come back.\n5. **The counter is missing, not the tokens.** Relabeling or a scrape change dropped\n   `vllm:generation_tokens_total` while the gauges still arrive; then users see no problem.\n'

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. **Save evidence first** (one minute): the log, and the `nvidia-smi` output from step 5 of Confirm.\n\n   ```sh\n   kubectl -n <namespace> logs <pod> -c <container> --timestamps > <pod>-stuck.log\n   ```\n\n   If the image has `py-spy`, a stack dump of the stuck processes is the best evidence there is:\n   `kubectl -n <namespace> exec <pod> -c <container> -- py-spy dump --pid 1 --subprocesses`.\n2. **Restart the pod.** Its controller creates a new one; the model loads again in a few minutes:\n\n   ```sh\n   kubectl -n <namespace> delete pod <pod>\n   ```\n\n3. **An Xid, a failed `nvidia-smi`, or stuck again on the same node:** keep the node out of scheduling,\n   then delete the pod so that it starts elsewhere:\n\n   ```sh\n   kubectl cordon <node>\n   ```\n\n4. **After a wake-up:** restart the pod; tell whoever manages sleep mode for it.\n5. **Missing counter:** fix the scrape or relabeling so that `vllm:generation_tokens_total` arrives again.\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_c = resolve('c')
    l_0_kv = resolve('kv')
    pass
    yield '1. Tokens flow again and the requests drain:\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'GENERATION_RATE'))
    yield str(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'pm'))
    yield '\n   ```\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='kv') if l_0_kv is missing else l_0_kv), 'running'))
    yield '\n   ```\n\n2. The alert resolves and does not return on the new pod within a day.\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '- Xid errors or a failed `nvidia-smi`: to the GPU node owners, with the node name; the node stays cordoned.\n- The engine hangs again on healthy GPUs: to the owners of the vLLM image, with the saved log, the stack\n  dump if you have one, the vLLM version and the engine flags.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=16&2=19&3=21&4=24&5=27&6=32&30=42&31=52&44=55&50=65&51=84&56=86&60=89&66=92&80=94&86=96&99=98&102=101&113=111&138=121&142=132&146=135&151=138'