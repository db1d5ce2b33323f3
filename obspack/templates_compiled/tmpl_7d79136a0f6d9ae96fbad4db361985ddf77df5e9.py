from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-container-restarted.md.j2'

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
    l_0_plane = l_0_fires_when = l_0_related = l_0_ksm_ctr = l_0_crash = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-container-restarted.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'decided by the termination reason and the log: GPU VRAM for a CUDA out-of-memory error, none for other crashes'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('a vLLM container restarted within the last ', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'), ' and its last termination reason is not `OOMKilled` (fires ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), "); the reason is in the alert's `reason` label", ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMContainerOOMKilled', 'VLLMGPUMemoryNearFull', 'VLLMCUDAAllocatorFragmentationHigh', 'VLLMTargetDown', 'VLLMZeroThroughput']
    context.vars['related'] = l_0_related
    context.exported_vars.add('related')
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
    yield "One replica's requests in flight are lost already; the restart itself needs nothing from you. Keep the\nevidence and stop a crash loop:\n\n1. Save the log of the run that crashed now: the next restart overwrites it.\n\n   ```sh\n   kubectl -n <namespace> logs <pod> -c <container> --previous > <pod>-previous.log\n   ```\n\n2. If the restarts began with a rollout, or the pod is in `CrashLoopBackOff` on every replica, roll back:\n\n   ```sh\n   kubectl -n <namespace> rollout undo deployment/<deployment>\n   ```\n\nA single restart of one replica, with the other replicas healthy, can wait for the checks below.\n"

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "The container stopped and Kubernetes restarted it, but not because the kernel killed it at its memory\nlimit. The alert's `reason` label says how it ended last time:\n\n- `Error`: the process exited with a non-zero code. This covers a CUDA out-of-memory crash: PyTorch raises\n  the error, vLLM exits, and Kubernetes cannot tell it from any other crash. Only the log can.\n- `Completed`: the process exited with code 0, for example after a clean shutdown on SIGTERM.\n- `ContainerCannotRun`, `StartError`: the container never started (image, command, GPU device).\n"

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Every request in flight on this replica failed, and the replica serves nothing until the model has loaded\nagain, often minutes. If it keeps crashing, the pod goes into `CrashLoopBackOff` and the capacity stays\nlost. A CUDA out-of-memory error can also fail single requests without a restart; users then see 500s from\na pod that looks healthy.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_on = resolve('on')
    l_0_ksm_ctr = resolve('ksm_ctr')
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield '1. The termination record: reason, exit code, and how long the container ran:\n\n   ```sh\n   kubectl -n <namespace> get pod <pod> -o jsonpath=\'{.status.containerStatuses[?(@.name=="<container>")].lastState.terminated}\'\n   ```\n\n   The exit code is also in Prometheus when kube-state-metrics exports it:\n\n   ```promql\n   max by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'container', _block_vars=_block_vars))
    yield ') (kube_pod_container_status_last_terminated_exitcode'
    yield str((undefined(name='ksm_ctr') if l_0_ksm_ctr is missing else l_0_ksm_ctr))
    yield ")\n   ```\n\n2. The end of the previous container's log. The first error counts; what follows it is fallout:\n\n   ```sh\n   kubectl -n <namespace> logs <pod> -c <container> --previous --tail=100\n   ```\n\n3. The pod's events, for probe failures, kills and evictions:\n\n   ```sh\n   kubectl -n <namespace> get events --field-selector involvedObject.name=<pod> --sort-by=.lastTimestamp\n   ```\n\n4. Pick the branch:\n\n   | Log, exit code and events | What happened | Go to |\n   |---|---|---|\n   | `CUDA out of memory`, `torch.OutOfMemoryError` | the GPU ran out of memory | [GPU VRAM: CUDA out of memory](#gpu-vram-cuda-out-of-memory) |\n   | exit 137, events `Liveness probe failed` or `Startup probe failed`, then `Killing` | the kubelet killed it after failed probes | [Probe kills](#probe-kills) |\n   | exit 137, no probe events | SIGKILL from elsewhere, often the kernel killing one process for host RAM | "
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMContainerOOMKilled', _block_vars=_block_vars):
        pass
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMContainerOOMKilled', _block_vars=_block_vars))
        yield ' and '
    yield 'the node kernel log check in [Did it crash, and which memory ran out?](#did-it-crash-and-which-memory-ran-out) |\n   | exit 1 with another traceback, `NCCL error`, `CUDA error`, `EngineDeadError` | an application or GPU crash | [Not memory: crashes and kills](#not-memory-crashes-and-kills) |\n   | exit 139 (segfault) or 134 (abort) | a crash in native code (CUDA, NCCL, kernels) | [Not memory: crashes and kills](#not-memory-crashes-and-kills) |\n   | `Completed` or exit 143, event `Evicted` or a rollout | stopped on purpose | [Not memory: crashes and kills](#not-memory-crashes-and-kills) |\n'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. **GPU out of memory at runtime.** vLLM reserves its KV cache when it starts, so a runtime CUDA\n   out-of-memory error comes from memory outside that reservation: activations and temporary buffers of a\n   large batch (many long prompts prefilled in one step), sampling over a large vocabulary for many\n   sequences, or a fragmented PyTorch allocator.\n2. **GPU out of memory at startup.** vLLM asks for `--gpu-memory-utilization` of the GPU while loading,\n   profiling and capturing CUDA graphs. It fails when another process holds part of the GPU (a second pod,\n   a leftover process), when the share is set too high, or when the model does not fit at this precision.\n3. **Probe kills.** Loading a model takes minutes; a liveness probe that starts checking too early kills\n   the container before it is ready, over and over.\n4. **Application crashes.** A bad or unsupported engine flag, a model the release does not support, weights\n   that cannot be downloaded or read, or a full disk for the model cache. These usually arrive with a rollout.\n5. **GPU, driver or interconnect faults.** `NCCL error`, `illegal memory access` or `unspecified launch\n   failure`, often with an Xid error on the node.\n'

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_links = resolve('links')
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    l_0_gpu_field = resolve('gpu_field')
    l_0_watch = missing
    try:
        t_1 = environment.filters['indent']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'indent' found.")
    pass
    yield "### GPU VRAM: CUDA out of memory\n\nChange one setting at a time, restart, and check again. The order goes from cheapest to most disruptive:\n\n1. **Lower `--gpu-memory-utilization` one step** (for example 0.90 to 0.85). This leaves more of the GPU\n   outside vLLM's reservation for activations, CUDA graphs and anything else on the GPU. The KV cache\n   shrinks accordingly; "
    l_0_watch = context.call((undefined(name='links') if l_0_links is missing else l_0_links), 'VLLMRequestQueueBacklog', 'VLLMRequestPreemptions', _block_vars=_block_vars)
    _block_vars['watch'] = l_0_watch
    yield 'watch the queue and preemptions afterwards'
    if (undefined(name='watch') if l_0_watch is missing else l_0_watch):
        pass
        yield ' ('
        yield str((undefined(name='watch') if l_0_watch is missing else l_0_watch))
        yield ')'
    yield ".\n2. **Cap the work per step.** Lower `--max-num-batched-tokens`, and keep chunked prefill on\n   (`--enable-chunked-prefill`, the default in the V1 engine) so that long prompts are split into chunks.\n3. **Cap concurrency.** Lower `--max-num-seqs` to the concurrency the replica really serves.\n4. **Cap the context.** Set `--max-model-len` to the longest request you must serve, not the model's maximum.\n5. **Reduce allocator fragmentation.** Set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` in the\n   container's environment"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMCUDAAllocatorFragmentationHigh', _block_vars=_block_vars):
        pass
        yield '; see '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMCUDAAllocatorFragmentationHigh', _block_vars=_block_vars))
    yield ".\n6. **Startup only:** when it fails while capturing CUDA graphs, try `--enforce-eager` to confirm (decoding\n   gets slower), then capture fewer graph sizes. When another process holds GPU memory, find it with\n   `nvidia-smi` on the node and get it removed.\n7. **The model does not fit.** Use quantised weights (an AWQ, GPTQ or FP8 checkpoint, `--quantization`),\n   an FP8 KV cache (`--kv-cache-dtype fp8`), more GPUs per replica (`--tensor-parallel-size`), or, as a\n   last resort, offload part of the weights to host RAM (`--cpu-offload-gb`, slow, and it needs a larger\n   memory limit).\n\n### Probe kills\n\nGive the model time to load: add a `startupProbe` on vLLM's `/health` whose `failureThreshold` times\n`periodSeconds` is longer than the slowest load you have seen, and give the liveness probe a generous\n`timeoutSeconds`, because a busy engine answers slowly. Do not point the liveness probe at an endpoint that\nruns inference.\n\n### Not memory: crashes and kills\n\n1. **Came with a rollout?** Roll back, then fix the flag, model or image in the release:\n\n   ```sh\n   kubectl -n <namespace> rollout undo deployment/<deployment>\n   ```\n\n2. **A traceback at startup** names the bad flag, the unsupported architecture or the missing file. Fix\n   the configuration; for downloads, check the model cache volume and the Hugging Face token.\n3. **`NCCL error`, `CUDA error`, exit 139 or 134:** check the GPUs of the pod for Xid errors (any value\n   above 0 is the code of the last Xid):\n\n   ```promql\n   "
    yield str(t_1(context.call((undefined(name='gpu_field') if l_0_gpu_field is missing else l_0_gpu_field), 'DCGM_FI_DEV_XID_ERRORS', _block_vars=_block_vars), 3))
    yield '\n   ```\n\n   With an Xid, or when it crashes again on the same node, take the node out of scheduling and escalate:\n\n   ```sh\n   kubectl cordon <node>\n   ```\n\n4. **`EngineDeadError` or "engine core" errors:** the engine process died and the API server followed.\n   Scroll up for the engine\'s first error and handle that one.\n5. **`Completed`, exit 143, `Evicted`:** the pod was stopped on purpose (a rollout, a node drain, an\n   eviction under node memory pressure, a preemption by a higher-priority pod). Check the events from\n   step 3 of Confirm; nothing in vLLM needs fixing.\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_ksm_ctr = resolve('ksm_ctr')
    l_0_c = resolve('c')
    pass
    yield '1. No restart over the next day:\n\n   ```promql\n   increase(kube_pod_container_status_restarts_total'
    yield str((undefined(name='ksm_ctr') if l_0_ksm_ctr is missing else l_0_ksm_ctr))
    yield "[24h])\n   ```\n\n2. The current container's log has no out-of-memory error:\n\n   ```sh\n   kubectl -n <namespace> logs <pod> -c <container> | grep -ciE 'CUDA out of memory|OutOfMemoryError'\n   ```\n\n3. After a GPU fix, the KV cache you gave up does not cost too much: requests do not queue and are not\n   preempted under peak traffic (`"
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'WAITING'))
    yield '` and `'
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'PREEMPTION_RATE'))
    yield '` of the pod stay near 0).\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '- Xid errors, or the same crash on one node only: to the GPU node owners; the node stays cordoned.\n- CUDA out of memory persists after steps 1 to 4 of the GPU branch: the model does not fit this GPU at this\n  precision. Capacity is a decision for the owners of the model deployment.\n- A segfault or abort you can reproduce: to the owners of the vLLM image, with the version, the flags and\n  the log.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=17&2=20&3=23&4=26&5=29&6=32&7=37&25=47&34=57&40=67&50=80&71=84&76=90&91=100&98=120&104=129&134=134&149=137&153=148&163=150&165=155'