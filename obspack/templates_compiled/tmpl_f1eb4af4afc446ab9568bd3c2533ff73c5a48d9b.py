from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-gpu-memory-near-full.md.j2'

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
    l_0_plane = l_0_fires_when = l_0_related = l_0_pod = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-gpu-memory-near-full.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'GPU VRAM (the framebuffer of the GPUs the pod holds), not host RAM'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('more than ', context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio')), " of a GPU's framebuffer is in use on a GPU held by a vLLM pod, ", context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMCUDAAllocatorFragmentationHigh', 'VLLMContainerRestarted', 'VLLMKVCacheUsageHigh', 'VLLMHostMemoryNearLimit']
    context.vars['related'] = l_0_related
    context.exported_vars.add('related')
    l_0_pod = context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod')
    context.vars['pod'] = l_0_pod
    context.exported_vars.add('pod')
    yield from parent_template.root_render_func(context)

def block_now(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "Nothing has crashed yet; the next large allocation on this GPU may fail. Protect the traffic first:\n\n1. Make sure the model's other replicas have room to take this one's traffic if it crashes (their KV cache\n   usage and queue on the fleet page).\n2. If the framebuffer keeps rising after start (Confirm step 1 shows the last hours), vLLM's own reservation\n   is not the cause: restart this replica at the next quiet moment, so that it starts clean before it\n   crashes at peak:\n\n   ```sh\n   kubectl -n <namespace> delete pod <pod>\n   ```\n\nThen lower `--gpu-memory-utilization` a step in the deployment (Fix, step 1) before the next peak.\n"

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pct = resolve('pct')
    l_0_t = resolve('t')
    pass
    yield "dcgm-exporter reports that the GPU's memory is almost all in use. Most of it is expected: when vLLM starts,\nit reserves `--gpu-memory-utilization` of every GPU it uses (0.9 unless set) for the weights, the KV cache\nand working buffers, and it keeps that reservation for its whole life. Above "
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'), _block_vars=_block_vars))
    yield " there is\nsomething on the GPU beyond that budget: vLLM was told to take almost everything, another process shares\nthe GPU, or PyTorch's allocator grew past the budget.\n\nThe next allocation that does not fit fails with `CUDA out of memory`, which fails the request or crashes\nthe engine.\n"

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
    yield 'None yet. If an allocation fails, the request fails, or the engine exits and the replica restarts\n(reason `Error`'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMContainerRestarted', _block_vars=_block_vars):
        pass
        yield ', see '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMContainerRestarted', _block_vars=_block_vars))
    yield '). Large batches and long prompts are the first to hit\nit, so the failures tend to come at peak traffic.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_gpu_ratio = resolve('gpu_ratio')
    l_0_gpu_field = resolve('gpu_field')
    l_0_match = resolve('match')
    l_0_t = resolve('t')
    l_0_on = resolve('on')
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    try:
        t_1 = environment.filters['indent']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'indent' found.")
    pass
    yield "1. Graph the ratio of each of the pod's GPUs over the last six hours. Flat since the pod started: it is\n   the configured reservation. Climbing: something grows outside it.\n\n   ```promql\n   "
    yield str(t_1(context.call((undefined(name='gpu_ratio') if l_0_gpu_ratio is missing else l_0_gpu_ratio), _block_vars=_block_vars), 3))
    yield '\n   ```\n\n   In MiB, used and free:\n\n   ```promql\n   '
    yield str(t_1(context.call((undefined(name='gpu_field') if l_0_gpu_field is missing else l_0_gpu_field), 'DCGM_FI_DEV_FB_USED', _block_vars=_block_vars), 3))
    yield '\n   ```\n\n   ```promql\n   '
    yield str(t_1(context.call((undefined(name='gpu_field') if l_0_gpu_field is missing else l_0_gpu_field), 'DCGM_FI_DEV_FB_FREE', _block_vars=_block_vars), 3))
    yield '\n   ```\n\n2. What vLLM was told to reserve (the `gpu_memory_utilization` label):\n\n   ```promql\n   vllm:cache_config_info'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', source='vllm', _block_vars=_block_vars))
    yield '\n   ```\n\n   A value at or above '
    yield str(environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'))
    yield ' explains the alert by itself.\n\n3. Does another pod hold the same GPU (time-slicing, MPS)? dcgm-exporter reports a shared GPU once per\n   pod, so more than one series per `UUID` here means the GPU is shared:\n\n   ```promql\n   count by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'UUID', _block_vars=_block_vars))
    yield ') (DCGM_FI_DEV_FB_USED'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), source='dcgm', extra=('UUID="<uuid>"',), _block_vars=_block_vars))
    yield ")\n   ```\n\n   Processes on the GPU as the driver reports them. Inside a container the list is often empty because of\n   process isolation, so an empty list proves nothing:\n\n   ```sh\n   kubectl -n <namespace> exec <pod> -c <container> -- nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv\n   ```\n\n4. Does PyTorch's allocator hold more than it uses? Needs the obspack exporter and its CUDA probe:\n\n   ```promql\n   sum by ("
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', _block_vars=_block_vars))
    yield ') (obspack_cuda_allocator_reserved_bytes'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', source='exporter', _block_vars=_block_vars))
    yield ')\n   ```\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', _block_vars=_block_vars))
    yield ') (obspack_cuda_allocator_allocated_bytes'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', source='exporter', _block_vars=_block_vars))
    yield ')\n   ```\n\n   A wide gap between reserved and allocated memory is cached or fragmented memory'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMCUDAAllocatorFragmentationHigh', _block_vars=_block_vars):
        pass
        yield '; see\n   '
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMCUDAAllocatorFragmentationHigh', _block_vars=_block_vars))
    yield '.\n'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **vLLM was told to take almost everything.** `--gpu-memory-utilization` is set close to 1, leaving no\n   room for CUDA graphs, the CUDA context, NCCL buffers or a spike in activations.\n2. **Another process shares the GPU.** A second pod through time-slicing or MPS, a sidecar that uses\n   CUDA, or a process from a crashed container that still holds memory.\n3. **Allocations outside vLLM's budget grew.** Large batches of long prompts need big temporary buffers;\n   PyTorch's caching allocator keeps what it once reserved, and fragmentation makes it reserve more.\n4. **A release or flag change** raised the memory the engine needs outside the KV cache (a new attention\n   backend, more CUDA graph sizes, a multimodal encoder, LoRA adapters).\n"

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_links = resolve('links')
    l_0_watch = missing
    pass
    yield '1. **Leave headroom.** Lower `--gpu-memory-utilization` to 0.90 or a step below what is set now. The KV\n   cache shrinks with it; watch KV cache usage and preemptions afterwards'
    l_0_watch = context.call((undefined(name='links') if l_0_links is missing else l_0_links), 'VLLMKVCacheUsageHigh', 'VLLMRequestPreemptions', _block_vars=_block_vars)
    _block_vars['watch'] = l_0_watch
    if (undefined(name='watch') if l_0_watch is missing else l_0_watch):
        pass
        yield ' ('
        yield str((undefined(name='watch') if l_0_watch is missing else l_0_watch))
        yield ')'
    yield ".\n2. **Give vLLM a GPU of its own.** Do not share GPUs that serve vLLM through time-slicing or MPS; if a\n   stale process holds memory, restart the pod, and if the memory stays taken, drain the node.\n3. **Cap the work per step.** Lower `--max-num-batched-tokens` and `--max-num-seqs`, and keep chunked\n   prefill on (`--enable-chunked-prefill`), so that temporary buffers stay small.\n4. **Reduce fragmentation.** Set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` in the container's\n   environment (it takes effect on restart).\n5. **Drop CUDA graphs if you must.** `--enforce-eager` frees the memory of captured graphs at the cost of\n   slower decoding; use it to confirm the cause, not as the final setting.\n6. **Make the model smaller on the GPU.** Quantised weights (`--quantization`), an FP8 KV cache\n   (`--kv-cache-dtype fp8`), or more GPUs per replica (`--tensor-parallel-size`).\n"

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
    l_0_pod = resolve('pod')
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    pass
    yield '1. After the restart with the new settings, the ratio settles at the new reservation and stays below\n   '
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'), _block_vars=_block_vars))
    yield ' through peak traffic:\n\n   ```promql\n   max_over_time('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'POD_GPU_FB_RATIO_MAX'))
    yield str((undefined(name='pod') if l_0_pod is missing else l_0_pod))
    yield '[24h])\n   ```\n\n2. No `CUDA out of memory` in the log and no restart'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMContainerRestarted', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMContainerRestarted', _block_vars=_block_vars))
        yield ' stays quiet)'
    yield '.\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '- Memory on the GPU is held by a process you cannot find or stop, or stays taken after the pod is gone:\n  to the GPU node owners (the node may need a drain and a GPU reset).\n- The GPU is shared by design and vLLM cannot have it alone: to the cluster platform team, to agree on a\n  dedicated node pool.\n- The model does not fit with the headroom it needs: to the owners of the model deployment (quantisation\n  or more GPUs per replica is their call).\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=18&2=21&3=24&4=27&5=30&6=35&21=45&24=56&31=59&33=70&36=76&41=98&47=100&51=102&57=104&60=106&66=108&79=112&83=116&86=120&87=123&89=126&99=136&101=147&113=156&115=171&118=173&121=176&123=183'