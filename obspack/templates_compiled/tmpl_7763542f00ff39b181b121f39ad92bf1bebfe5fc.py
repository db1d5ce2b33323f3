from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/_kv.md.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_match = resolve('match')
    l_0_c = resolve('c')
    l_0_pm = l_0_usage = l_0_running = l_0_waiting = l_0_preemptions = l_0_pod_state = l_0_engines = l_0_replicas = l_0_queue_time = l_0_request_size = l_0_capacity = l_0__replicas = l_0__balance = l_0__memory = l_0__bound = l_0__queue = l_0__prefix = l_0__fixes = l_0_capacity_fixes = missing
    pass
    l_0_pm = context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name')
    context.vars['pm'] = l_0_pm
    context.exported_vars.add('pm')
    l_0_usage = str_join((environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'KV_USAGE'), (undefined(name='pm') if l_0_pm is missing else l_0_pm), ))
    context.vars['usage'] = l_0_usage
    context.exported_vars.add('usage')
    l_0_running = str_join((environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'RUNNING'), (undefined(name='pm') if l_0_pm is missing else l_0_pm), ))
    context.vars['running'] = l_0_running
    context.exported_vars.add('running')
    l_0_waiting = str_join((environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'WAITING'), (undefined(name='pm') if l_0_pm is missing else l_0_pm), ))
    context.vars['waiting'] = l_0_waiting
    context.exported_vars.add('waiting')
    l_0_preemptions = str_join((environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'PREEMPTION_RATE'), (undefined(name='pm') if l_0_pm is missing else l_0_pm), ))
    context.vars['preemptions'] = l_0_preemptions
    context.exported_vars.add('preemptions')
    yield '\n'
    def macro():
        t_1 = []
        pass
        t_1.extend((
            'Where the pod stands: KV cache usage (0 to 1), requests running, requests waiting, and preemptions per\nsecond. Run them side by side, or open the triage dashboard:\n\n```promql\n',
            str((undefined(name='usage') if l_0_usage is missing else l_0_usage)),
            '\n```\n\n```promql\n',
            str((undefined(name='running') if l_0_running is missing else l_0_running)),
            '\n```\n\n```promql\n',
            str((undefined(name='waiting') if l_0_waiting is missing else l_0_waiting)),
            '\n```\n\n```promql\n',
            str((undefined(name='preemptions') if l_0_preemptions is missing else l_0_preemptions)),
            '\n```',
        ))
        return concat(t_1)
    context.exported_vars.add('pod_state')
    context.vars['pod_state'] = l_0_pod_state = Macro(environment, macro, 'pod_state', (), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    def macro(l_1_what):
        t_2 = []
        l_1_on = resolve('on')
        if l_1_what is missing:
            l_1_what = undefined("parameter 'what' was not provided", name='what')
        pass
        t_2.extend((
            "Which engines of the pod? A pod started with `--data-parallel-size` runs several engines (the `engine`\nlabel, vLLM 0.8.3 and later), each with its own scheduler, queue and KV cache. The alert names the engine\nwhen only some of the pod's engines ",
            str(l_1_what),
            '; without an `engine` label, all of them ',
            str(l_1_what),
            ' (or the pod\nhas one engine). Per engine, side by side (the pod page of the triage dashboard draws them too):\n\n```promql\nmax by (',
            str(context.call((undefined(name='on') if l_1_on is missing else l_1_on), 'namespace', 'pod', 'engine')),
            ') (vllm:kv_cache_usage_perc',
            str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', source='vllm')),
            ' or vllm:gpu_cache_usage_perc',
            str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', source='vllm')),
            ')\n```\n\n```promql\nmax by (',
            str(context.call((undefined(name='on') if l_1_on is missing else l_1_on), 'namespace', 'pod', 'engine')),
            ') (vllm:num_requests_waiting',
            str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', source='vllm')),
            ')\n```\n\n```promql\nsum by (',
            str(context.call((undefined(name='on') if l_1_on is missing else l_1_on), 'namespace', 'pod', 'engine')),
            ') (rate(vllm:generation_tokens_total',
            str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', source='vllm')),
            "[5m]))\n```\n\nOne engine far from its siblings is that engine's problem, not the model's: vLLM's internal load\nbalancer in the API server picks an engine for each request from the request counts the engines report,\nso the other engines cannot take over what is already queued on it.",
        ))
        return concat(t_2)
    context.exported_vars.add('engines')
    context.vars['engines'] = l_0_engines = Macro(environment, macro, 'engines', ('what',), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    def macro():
        t_3 = []
        pass
        t_3.extend((
            'Is it this replica or the whole model? KV cache usage of every replica of the model:\n\n```promql\n',
            str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'KV_USAGE')),
            str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name')),
            '\n```\n\nOne replica far above the others: the load balancer sends it more (or longer) requests. All of them\nhigh: the model needs more capacity.',
        ))
        return concat(t_3)
    context.exported_vars.add('replicas')
    context.vars['replicas'] = l_0_replicas = Macro(environment, macro, 'replicas', (), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    def macro():
        t_4 = []
        l_1_on = resolve('on')
        pass
        t_4.extend((
            'How long requests wait before they start, 90th percentile over all replicas of the model:\n\n```promql\nhistogram_quantile(0.9, sum by (',
            str(context.call((undefined(name='on') if l_1_on is missing else l_1_on), 'namespace', 'model_name', 'le')),
            ') (',
            str(context.call(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'latency_bucket_record'), 'request_queue_time')),
            str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name')),
            '))\n```',
        ))
        return concat(t_4)
    context.exported_vars.add('queue_time')
    context.vars['queue_time'] = l_0_queue_time = Macro(environment, macro, 'queue_time', (), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    def macro():
        t_5 = []
        l_1_on = resolve('on')
        pass
        t_5.extend((
            'Did requests get longer? Average prompt and output tokens per finished request on this pod:\n\n```promql\nsum by (',
            str(context.call((undefined(name='on') if l_1_on is missing else l_1_on), 'namespace', 'pod', 'model_name')),
            ') (rate(vllm:request_prompt_tokens_sum',
            str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name', source='vllm')),
            '[15m])) / sum by (',
            str(context.call((undefined(name='on') if l_1_on is missing else l_1_on), 'namespace', 'pod', 'model_name')),
            ') (rate(vllm:request_prompt_tokens_count',
            str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name', source='vllm')),
            '[15m]))\n```\n\n```promql\nsum by (',
            str(context.call((undefined(name='on') if l_1_on is missing else l_1_on), 'namespace', 'pod', 'model_name')),
            ') (rate(vllm:request_generation_tokens_sum',
            str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name', source='vllm')),
            '[15m])) / sum by (',
            str(context.call((undefined(name='on') if l_1_on is missing else l_1_on), 'namespace', 'pod', 'model_name')),
            ') (rate(vllm:request_generation_tokens_count',
            str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name', source='vllm')),
            '[15m]))\n```\n\nCompare with the same hour yesterday (add `offset 1d` after each `[15m]`).',
        ))
        return concat(t_5)
    context.exported_vars.add('request_size')
    context.vars['request_size'] = l_0_request_size = Macro(environment, macro, 'request_size', (), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    def macro():
        t_6 = []
        pass
        t_6.extend((
            'How big the KV cache is and how it was configured: the labels of `vllm:cache_config_info` hold\n`num_gpu_blocks`, `block_size`, `gpu_memory_utilization`, `enable_prefix_caching` and, from vLLM 0.24,\n`kv_cache_size_tokens`:\n\n```promql\nvllm:cache_config_info',
            str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', source='vllm')),
            '\n```',
        ))
        return concat(t_6)
    context.exported_vars.add('capacity')
    context.vars['capacity'] = l_0_capacity = Macro(environment, macro, 'capacity', (), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    def macro():
        t_7 = []
        pass
        t_7.append(
            "**Add replicas**, or move traffic to replicas with room. Raise the HorizontalPodAutoscaler's minimum\n   where there is one; otherwise:\n\n   ```sh\n   kubectl -n <namespace> scale deployment/<deployment> --replicas=<replicas>\n   ```\n\n   New replicas need free GPUs and several minutes to load the model.",
        )
        return concat(t_7)
    context.vars['_replicas'] = l_0__replicas = Macro(environment, macro, '_replicas', (), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    def macro():
        t_8 = []
        pass
        t_8.append(
            '**Balance the load.** If one replica is far above the others, fix the routing: least-load or\n   KV-aware routing instead of round robin, and no sticky sessions that pin long conversations to one pod.',
        )
        return concat(t_8)
    context.vars['_balance'] = l_0__balance = Macro(environment, macro, '_balance', (), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    def macro():
        t_9 = []
        l_1_pct = resolve('pct')
        l_1_cfg = resolve('cfg')
        l_1_has_alert = resolve('has_alert')
        l_1_link = resolve('link')
        pass
        t_9.extend((
            '**Give the KV cache more memory per replica.**\n   - Raise `--gpu-memory-utilization` a step, but only when the GPU has room: its framebuffer ratio stays\n     well below ',
            str(context.call((undefined(name='pct') if l_1_pct is missing else l_1_pct), environment.getattr(environment.getattr(environment.getattr((undefined(name='cfg') if l_1_cfg is missing else l_1_cfg), 'alerts'), 'VLLMGPUMemoryNearFull'), 'ratio'))),
        ))
        if context.call((undefined(name='has_alert') if l_1_has_alert is missing else l_1_has_alert), 'VLLMGPUMemoryNearFull'):
            pass
            t_9.extend((
                ' (where ',
                str(context.call((undefined(name='link') if l_1_link is missing else l_1_link), 'VLLMGPUMemoryNearFull')),
                ' fires)',
            ))
        t_9.append(
            '     and the pod has no history of CUDA out-of-memory errors.\n   - Store the KV cache in FP8 (`--kv-cache-dtype fp8`): about half the memory per token, at a small\n     accuracy cost that the model owners must accept.\n   - Shrink the weights (a quantised checkpoint, `--quantization`) or spread them over more GPUs\n     (`--tensor-parallel-size`); the memory freed goes to the KV cache.',
        )
        return concat(t_9)
    context.vars['_memory'] = l_0__memory = Macro(environment, macro, '_memory', (), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    def macro():
        t_10 = []
        pass
        t_10.append(
            '**Bound what one request can hold.** Lower `--max-model-len` to the longest context you must serve and\n   cap `max_tokens` at the gateway, so a few huge requests cannot take the whole cache.',
        )
        return concat(t_10)
    context.vars['_bound'] = l_0__bound = Macro(environment, macro, '_bound', (), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    def macro():
        t_11 = []
        pass
        t_11.append(
            '**Prefer queueing to preemption.** Lower `--max-num-seqs` a step so that the requests admitted can\n   finish without being preempted; the others wait in the queue instead of being restarted.',
        )
        return concat(t_11)
    context.vars['_queue'] = l_0__queue = Macro(environment, macro, '_queue', (), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    def macro():
        t_12 = []
        pass
        t_12.append(
            '**Share prefixes.** When many requests start with the same long system prompt, keep prefix caching on\n   (`--enable-prefix-caching`, the default in the V1 engine): a shared prefix is stored once.',
        )
        return concat(t_12)
    context.vars['_prefix'] = l_0__prefix = Macro(environment, macro, '_prefix', (), False, False, False, context.eval_ctx.autoescape)
    yield '\n'
    l_0__fixes = {'replicas': (undefined(name='_replicas') if l_0__replicas is missing else l_0__replicas), 'balance': (undefined(name='_balance') if l_0__balance is missing else l_0__balance), 'memory': (undefined(name='_memory') if l_0__memory is missing else l_0__memory), 'bound': (undefined(name='_bound') if l_0__bound is missing else l_0__bound), 'queue': (undefined(name='_queue') if l_0__queue is missing else l_0__queue), 'prefix': (undefined(name='_prefix') if l_0__prefix is missing else l_0__prefix)}
    context.vars['_fixes'] = l_0__fixes
    def macro(l_1_order):
        t_13 = []
        if l_1_order is missing:
            l_1_order = ('replicas', 'balance', 'memory', 'bound', 'queue', 'prefix')
        pass
        l_2_loop = missing
        for l_2_name, l_2_loop in LoopContext(l_1_order, undefined):
            _loop_vars = {}
            pass
            t_13.extend((
                str(('\n' if (not environment.getattr(l_2_loop, 'first')) else cond_expr_undefined("the inline if-expression on line 141 in 'runbooks/_kv.md.j2' evaluated to false and no else section was defined."))),
                str(environment.getattr(l_2_loop, 'index')),
                '. ',
                str(context.call(environment.getitem((undefined(name='_fixes') if l_0__fixes is missing else l_0__fixes), l_2_name), _loop_vars=_loop_vars)),
            ))
        l_2_loop = l_2_name = missing
        return concat(t_13)
    context.exported_vars.add('capacity_fixes')
    context.vars['capacity_fixes'] = l_0_capacity_fixes = Macro(environment, macro, 'capacity_fixes', ('order',), False, False, False, context.eval_ctx.autoescape)

blocks = {}
debug_info = '2=14&3=17&4=20&5=23&6=26&8=30&13=35&17=37&21=39&25=41&29=48&32=56&36=60&40=66&44=70&52=79&56=84&63=92&67=98&71=108&75=114&79=122&85=135&91=140&95=147&106=156&111=165&114=174&122=189&127=198&132=207&137=216&140=218&141=224'