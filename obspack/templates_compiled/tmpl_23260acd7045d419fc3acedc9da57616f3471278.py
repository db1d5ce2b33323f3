from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/_first-branch.md.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_has_alert = resolve('has_alert')
    l_0_link = resolve('link')
    l_0_c = resolve('c')
    l_0_match = resolve('match')
    l_0_host_ram = l_0_gpu_vram = l_0_other = missing
    pass
    yield '## Did it crash, and which memory ran out?\n\nA vLLM pod can run out of two different memories, and their fixes have nothing in common. Host RAM is\ncapped by the container\'s memory limit and enforced by the Linux kernel. GPU memory (VRAM) is managed by\nvLLM and PyTorch inside the process. Settle which one it was in the first five minutes, before you change\nany setting.\n\n1. List each container\'s restarts and how it stopped last time:\n\n   ```sh\n   kubectl -n <namespace> get pod <pod> -o jsonpath=\'{range .status.containerStatuses[*]}{.name}{" restarts="}{.restartCount}{" reason="}{.lastState.terminated.reason}{" exit="}{.lastState.terminated.exitCode}{" finished="}{.lastState.terminated.finishedAt}{"\\n"}{end}\'\n   ```\n\n2. Search the log of the container that stopped (`--previous` is the run before the restart):\n\n   ```sh\n   kubectl -n <namespace> logs <pod> -c <container> --previous | grep -iE \'CUDA out of memory|OutOfMemoryError|CUDA error|Traceback\' | head -20\n   ```\n\n3. Read the two answers against this table:\n\n   | You see | Memory | Go to |\n   |---|---|---|\n'
    l_0_host_ram = (context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMContainerOOMKilled') if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMContainerOOMKilled') else "raise the container's memory limit (its working set reached it)")
    context.vars['host_ram'] = l_0_host_ram
    context.exported_vars.add('host_ram')
    l_0_gpu_vram = (context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMContainerRestarted', 'gpu-vram-cuda-out-of-memory', 'VLLMContainerRestarted, GPU branch') if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMContainerRestarted') else 'lower `--gpu-memory-utilization` a step, or cap `--max-num-seqs` and `--max-num-batched-tokens`')
    context.vars['gpu_vram'] = l_0_gpu_vram
    context.exported_vars.add('gpu_vram')
    l_0_other = (context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMContainerRestarted', 'not-memory-crashes-and-kills', 'VLLMContainerRestarted, other crashes') if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMContainerRestarted') else 'read the first traceback of the previous log; roll back if it began with a rollout')
    context.vars['other'] = l_0_other
    context.exported_vars.add('other')
    yield '   | `reason=OOMKilled`, `exit=137` | host RAM: the kernel killed the container at its memory limit | '
    yield str((undefined(name='host_ram') if l_0_host_ram is missing else l_0_host_ram))
    yield ' |\n   | `reason=Error` and `CUDA out of memory` or `OutOfMemoryError` in the log | GPU VRAM: an allocation on the GPU failed inside vLLM | '
    yield str((undefined(name='gpu_vram') if l_0_gpu_vram is missing else l_0_gpu_vram))
    yield ' |\n   | `reason=Error`, no CUDA message, and the log says an engine or worker process died | maybe host RAM: the kernel can kill one process and leave the rest to exit (step 4) | '
    yield str((undefined(name='host_ram') if l_0_host_ram is missing else l_0_host_ram))
    yield ' |\n   | `Error` with another traceback, exit 139 or 134, `Completed` | neither: a crash or a stop for another reason | '
    yield str((undefined(name='other') if l_0_other is missing else l_0_other))
    yield ' |\n   | `restarts=0` and no error in the current log | no crash | the causes below |\n\n4. Not sure? The kernel writes `Memory cgroup out of memory: Killed process` and the process id to the node\'s log for\n   every host-RAM kill, including kills of a single worker process that Kubernetes reports as `Error`.\n   Find the node with `kubectl -n <namespace> get pod <pod> -o jsonpath=\'{.spec.nodeName}\'`, then (this\n   needs node debug rights; delete the `node-debugger-*` pod afterwards):\n\n   ```sh\n   kubectl debug node/<node> -it --profile=sysadmin --image=busybox -- chroot /host sh -c "dmesg -T | grep -i \'memory cgroup out of memory\'"\n   ```\n\n   A line near the time the container finished means host RAM, whatever the termination reason says.\n\n5. Compare both planes over the last hour. Host RAM, working set as a share of the memory limit:\n\n   ```promql\n   max_over_time('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MEMORY_LIMIT_RATIO'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod'))
    yield "[1h])\n   ```\n\n   GPU VRAM, framebuffer in use as a share of the pod's fullest GPU:\n\n   ```promql\n   max_over_time("
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'POD_GPU_FB_RATIO_MAX'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod'))
    yield "[1h])\n   ```\n\n   The plane that was at its ceiling just before the restart is the one that ran out. Expect the GPU\n   ratio near vLLM's `--gpu-memory-utilization` (0.9 unless set) at all times: vLLM reserves that share at\n   start, so a high GPU ratio alone proves nothing.\n\nA full KV cache is not an out-of-memory error: vLLM reserves the KV cache when it starts and, when it is\nfull, queues or preempts requests instead of crashing. KV cache alerts are about latency, not crashes.\n"

blocks = {}
debug_info = '26=17&27=20&28=23&29=27&30=29&31=31&32=33&49=35&55=38'