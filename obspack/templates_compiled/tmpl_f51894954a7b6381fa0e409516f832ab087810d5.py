from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-cuda-allocator-fragmentation-high.md.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    parent_template = None
    l_0_pct = resolve('pct')
    l_0_t = resolve('t')
    l_0_num = resolve('num')
    l_0_held = resolve('held')
    l_0_alert = resolve('alert')
    l_0_match = resolve('match')
    l_0_on = resolve('on')
    l_0_plane = l_0_fires_when = l_0_related = l_0_pod = l_0_by_pod = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-cuda-allocator-fragmentation-high.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = "GPU VRAM, in PyTorch's CUDA allocator outside the KV cache"
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('more than ', context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio')), " of the memory PyTorch's CUDA caching allocator holds unused in a vLLM pod, and at least ", context.call((undefined(name='num') if l_0_num is missing else l_0_num), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'min_split_gib')), ' GiB, sits in inactive split blocks, ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMGPUMemoryNearFull', 'VLLMContainerRestarted', 'VLLMKVCacheFragmentationHigh', 'ObspackExporterTargetDown']
    context.vars['related'] = l_0_related
    context.exported_vars.add('related')
    l_0_pod = context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', source='exporter')
    context.vars['pod'] = l_0_pod
    context.exported_vars.add('pod')
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
    pass
    yield "Nothing has failed yet. Plan the fix that removes most of this waste, and use the next quiet moment:\n\n1. Add `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` to the vLLM container's environment where the\n   deployment is managed; it applies as the pods restart.\n2. If allocation retries already climb (Confirm step 3), restart this replica now as a stopgap, one replica\n   at a time so that the others carry the traffic:\n\n   ```sh\n   kubectl -n <namespace> delete pod <pod>\n   ```\n"

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pct = resolve('pct')
    l_0_t = resolve('t')
    l_0_num = resolve('num')
    pass
    yield 'PyTorch gets GPU memory from the driver in large segments and cuts them into blocks for tensors. A freed\nblock stays in PyTorch\'s cache for reuse. When a segment is only partly in use, its free pieces\n("inactive split" blocks) can only serve requests that fit inside them. Of the memory PyTorch holds but no\ntensor uses, more than '
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'), _block_vars=_block_vars))
    yield ' is in such pieces, at least '
    yield str(context.call((undefined(name='num') if l_0_num is missing else l_0_num), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'min_split_gib'), _block_vars=_block_vars))
    yield ' GiB of it on one GPU.\nWhen a large request fits in none of them and the GPU has no room for a new segment, PyTorch empties its\ncache and retries, which is slow, and then fails with `CUDA out of memory`, even though enough memory is\nfree in total.\n\nvLLM allocates its weights and KV cache once at start; they are most of what PyTorch holds, and the ratio\nleaves them out. The churn comes from everything else: activations and temporary buffers whose sizes\nchange with every batch, and buffers that outlive a batch (multimodal embeddings, LoRA adapters).\n\nThe figures come from the obspack CUDA probe inside the vLLM processes, read by the obspack exporter.\n'

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
    yield 'None yet. Next come latency spikes when the allocator empties its cache and retries, then failed requests\nor an engine crash from a CUDA out-of-memory error'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMContainerRestarted', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMContainerRestarted', _block_vars=_block_vars))
        yield ')'
    yield '.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pod = resolve('pod')
    l_0_by_pod = resolve('by_pod')
    pass
    yield '1. The ratio per process and GPU:\n\n   ```promql\n   obspack_cuda_allocator_fragmentation_ratio'
    yield str((undefined(name='pod') if l_0_pod is missing else l_0_pod))
    yield '\n   ```\n\n2. Reserved, allocated and inactive split bytes per process and GPU (the ratio is split / (reserved -\n   allocated)):\n\n   ```promql\n   obspack_cuda_allocator_reserved_bytes'
    yield str((undefined(name='pod') if l_0_pod is missing else l_0_pod))
    yield '\n   ```\n\n   ```promql\n   obspack_cuda_allocator_allocated_bytes'
    yield str((undefined(name='pod') if l_0_pod is missing else l_0_pod))
    yield '\n   ```\n\n   ```promql\n   obspack_cuda_allocator_inactive_split_bytes'
    yield str((undefined(name='pod') if l_0_pod is missing else l_0_pod))
    yield '\n   ```\n\n3. Has it started to hurt? Retries happen when PyTorch had to empty its cache to satisfy a request; out of\n   memory errors mean some allocations already failed:\n\n   ```promql\n   sum by ('
    yield str((undefined(name='by_pod') if l_0_by_pod is missing else l_0_by_pod))
    yield ') (rate(obspack_cuda_alloc_retries_total'
    yield str((undefined(name='pod') if l_0_pod is missing else l_0_pod))
    yield '[15m]))\n   ```\n\n   ```promql\n   sum by ('
    yield str((undefined(name='by_pod') if l_0_by_pod is missing else l_0_by_pod))
    yield ') (increase(obspack_cuda_ooms_total'
    yield str((undefined(name='pod') if l_0_pod is missing else l_0_pod))
    yield '[1h]))\n   ```\n\n4. The allocator settings of the container (the first command above). No output means the default\n   allocator, without expandable segments.\n\n5. How long the pod has run; fragmentation builds up over days:\n\n   ```sh\n   kubectl -n <namespace> get pod <pod> -o jsonpath=\'{.status.startTime}{"\\n"}\'\n   ```\n'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **Expandable segments are off.** PyTorch's default allocator cannot grow a segment, so every size\n   mismatch leaves a hole.\n2. **Batch shapes vary widely.** Long and short prompts mixed, or a large `--max-num-batched-tokens`, make\n   temporary buffers of very different sizes.\n3. **Long uptime.** The holes accumulate; a fresh process starts clean.\n4. **Other allocations in the process.** LoRA adapters loaded and unloaded, or a multimodal encoder, add\n   buffers of changing sizes.\n"

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "1. **Turn on expandable segments.** Add `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` to the vLLM\n   container's environment in the deployment; it takes effect when the pods restart. Segments can then grow\n   in place, which removes most of this waste. If the engine does not start with it (sleep mode manages\n   memory its own way), remove it again.\n2. **Restart as a stopgap.** A new process starts without holes. One replica at a time:\n\n   ```sh\n   kubectl -n <namespace> delete pod <pod>\n   ```\n\n3. **Make batch shapes more regular.** Keep chunked prefill on (`--enable-chunked-prefill`) and lower\n   `--max-num-batched-tokens`, so that temporary buffers stay small and alike.\n4. **Leave headroom for new segments.** Lower `--gpu-memory-utilization` a step, so that a retry finds\n   room for a fresh segment instead of failing.\n"

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pct = resolve('pct')
    l_0_t = resolve('t')
    l_0_num = resolve('num')
    l_0_by_pod = resolve('by_pod')
    l_0_pod = resolve('pod')
    pass
    yield '1. The container has the setting:\n\n   ```sh\n   kubectl -n <namespace> exec <pod> -c <container> -- printenv PYTORCH_CUDA_ALLOC_CONF\n   ```\n\n2. After the restart the ratio stays below '
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'), _block_vars=_block_vars))
    yield ' for days wherever at least '
    yield str(context.call((undefined(name='num') if l_0_num is missing else l_0_num), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'min_split_gib'), _block_vars=_block_vars))
    yield ' GiB\n   is split (this query reads 0 where less is), and retries stay at 0. With expandable segments PyTorch\n   reports no inactive split bytes at all:\n\n   ```promql\n   max by ('
    yield str((undefined(name='by_pod') if l_0_by_pod is missing else l_0_by_pod))
    yield ') (max_over_time((\n     obspack_cuda_allocator_fragmentation_ratio'
    yield str((undefined(name='pod') if l_0_pod is missing else l_0_pod))
    yield '\n     * (obspack_cuda_allocator_inactive_split_bytes'
    yield str((undefined(name='pod') if l_0_pod is missing else l_0_pod))
    yield ' >= bool '
    yield str(context.call((undefined(name='num') if l_0_num is missing else l_0_num), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'min_split_gib'), _block_vars=_block_vars))
    yield ' * 1073741824)\n   )[1d:5m]))\n   ```\n'

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
    yield "- Allocations fail (`obspack_cuda_ooms_total` rises) with expandable segments on: to the owners of the\n  vLLM image, with the vLLM and PyTorch versions and the graphs from Confirm.\n- The probe series are missing for this pod: check the exporter's scrapes"
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'ObspackExporterTargetDown', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'ObspackExporterTargetDown', _block_vars=_block_vars))
        yield ')'
    yield ', and that\n  the vLLM container has `OBSPACK_PROBE_DIR` set and shares that directory with the exporter.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=20&2=23&3=26&4=29&5=32&6=35&7=40&19=50&23=62&34=67&36=78&38=85&42=96&49=98&53=100&57=102&64=104&68=108&80=113&89=123&105=133&112=147&117=151&118=153&119=155&123=160&126=171'