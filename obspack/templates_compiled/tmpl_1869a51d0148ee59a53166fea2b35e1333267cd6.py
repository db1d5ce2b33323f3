from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/_host-ram.md.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_causes = l_0_fixes = missing
    pass
    def macro():
        t_1 = []
        pass
        t_1.append(
            '1. **The limit has no headroom.** It was sized from a quiet steady state, or copied from a CPU service.\n   Loading a model stages weights in host memory, and for many models startup is the peak.\n2. **More processes than the limit was sized for.** The API server, the engine core and one worker per\n   GPU (tensor or pipeline parallel), plus extra API servers or data-parallel ranks, each carry their own\n   Python, PyTorch, CUDA runtime and tokenizer.\n3. **Host memory that vLLM was told to use.** Swap space for preempted requests (`--swap-space`, per GPU,\n   on releases that still have it), weights offloaded to the CPU (`--cpu-offload-gb`), KV cache offloaded\n   to the CPU. Each is a reservation that must fit under the limit with everything else.\n4. **Shared memory.** A memory-backed `/dev/shm` (`emptyDir` with `medium: Memory`), which tensor-parallel\n   workers use to talk to each other, is charged to the container.\n5. **Large requests.** Long prompts, many requests at once, or images and video that multimodal models\n   decode and preprocess on the host.\n6. **A leak.** The working set climbs at flat traffic over hours or days. Rare, and usually fixed by a\n   vLLM upgrade.',
        )
        return concat(t_1)
    context.exported_vars.add('causes')
    context.vars['causes'] = l_0_causes = Macro(environment, macro, 'causes', (), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    def macro():
        t_2 = []
        pass
        t_2.append(
            '1. **Give the container headroom.** Set the limit to the measured peak (a restart plus peak traffic) plus\n   20 to 30%, and set the request to the same value so the scheduler reserves it. Change it where the\n   deployment is managed (Helm values, GitOps). In an emergency, patch it directly; this rolls the pods,\n   and a GitOps tool may revert it later:\n\n   ```sh\n   kubectl -n <namespace> set resources deployment/<deployment> -c <container> --limits=memory=<new-limit> --requests=memory=<new-limit>\n   ```\n\n2. **Run fewer processes per pod.** Lower `--api-server-count`, or run fewer data-parallel ranks per pod\n   and more pods.\n3. **Shrink host-side reservations.** Lower `--swap-space` (the V1 engine recomputes preempted requests\n   instead of swapping them) and `--cpu-offload-gb`, or give the CPU KV offload a smaller size. Each GiB\n   removed is a GiB of limit freed.\n4. **Cap request-driven peaks.** Lower `--max-num-seqs` and `--max-num-batched-tokens`, limit images per\n   prompt for multimodal models (`--limit-mm-per-prompt`), and cap prompt size at the gateway.\n5. **Bound `/dev/shm`.** Give the memory-backed `emptyDir` a `sizeLimit` and include it in the limit.\n6. **Leak:** restart the pods one at a time as a stopgap, record the vLLM version and flags, and escalate:\n\n   ```sh\n   kubectl -n <namespace> rollout restart deployment/<deployment>\n   ```',
        )
        return concat(t_2)
    context.exported_vars.add('fixes')
    context.vars['fixes'] = l_0_fixes = Macro(environment, macro, 'fixes', (), False, False, False, context.eval_ctx.autoescape)

blocks = {}
debug_info = '2=12&19=22'