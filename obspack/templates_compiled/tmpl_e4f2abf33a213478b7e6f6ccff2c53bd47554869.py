from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-kv-transfer-failures.md.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    parent_template = None
    l_0_t = resolve('t')
    l_0_rate_words = resolve('rate_words')
    l_0_pct = resolve('pct')
    l_0_held = resolve('held')
    l_0_alert = resolve('alert')
    l_0_match = resolve('match')
    l_0_plane = l_0_fires_when = l_0_related = l_0_pm = missing
    try:
        t_1 = environment.filters['format']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'format' found.")
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-kv-transfer-failures.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'none directly; the KV cache moves between the GPUs of two pods over the network (RDMA, NVLink or TCP)'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    if (environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'rate') > 0):
        pass
        l_0_rate_words = str_join(('more than ', t_1('%g', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'rate')), ' failed KV transfers per second', ))
        context.vars['rate_words'] = l_0_rate_words
        context.exported_vars.add('rate_words')
    else:
        pass
        l_0_rate_words = 'failed KV transfers in every window'
        context.vars['rate_words'] = l_0_rate_words
        context.exported_vars.add('rate_words')
    l_0_fires_when = str_join(('a pod and model shows ', (undefined(name='rate_words') if l_0_rate_words is missing else l_0_rate_words), ', or KV blocks that expired unread for more than ', context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'expired_ratio')), ' of the requests it finished (rates over ', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'), ', NIXL or Mooncake connector; the `kind` label says which), ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMZeroThroughput', 'VLLMRequestQueueBacklog', 'VLLMTargetDown', 'VLLMContainerRestarted']
    context.vars['related'] = l_0_related
    context.exported_vars.add('related')
    l_0_pm = context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'pod', 'model_name', source='vllm')
    context.vars['pm'] = l_0_pm
    context.exported_vars.add('pm')
    yield from parent_template.root_render_func(context)

def block_now(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Requests whose KV cache does not arrive are computed again on the decode pod or fail. Find out whether one\npod carries the failures (Confirm step 1 lists them per pod). If one pod, or the pods of one node, carry\nthem, replace that pod so that it starts elsewhere:\n\n```sh\nkubectl -n <namespace> delete pod <pod>\n```\n\nIf every pod fails after a rollout, roll back the side that changed. Otherwise go on with Confirm.\n'

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'With disaggregated prefill and decode, one pod computes a request\'s prompt (prefill) and another generates\nits tokens (decode); the decode pod reads the prompt\'s KV cache from the prefill pod through a KV\nconnector (NIXL or Mooncake). This alert counts what broke on that path, per pod:\n\n- **failed transfers** and **failed receives**: the decode pod could not read the blocks;\n- **failed notifications**: the decode pod read them but could not tell the prefill pod, which then holds\n  the blocks until they expire;\n- **expired requests**: the prefill pod freed blocks that no decode pod read in time.\n\nFailures are counted where they happen, so the alert names the decode pod for failed reads\n(`kind="failed"`, any steady rate fires) and the prefill pod for expired blocks (`kind="expired"`, a share\nof the requests it finished: a few expire in normal operation, when a request is aborted before its decode\npod reads it). The `connector` label says which connector.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "Each failed transfer costs a request its prefill: the decode pod computes the prompt again (vLLM's\ndefault), which adds the whole prefill time to its time to first token and takes GPU time from other\nrequests, or the request fails when the deployment is set to fail instead. Expired blocks mean prefill\nwork thrown away. Users see slower first tokens, and errors when failures are frequent.\n"

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_on = resolve('on')
    l_0_pm = resolve('pm')
    l_0_match = resolve('match')
    pass
    yield '1. Which pods, which kind of failure, and since when (per second, by counter):\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', _block_vars=_block_vars))
    yield ') (rate(vllm:nixl_num_failed_transfers_total'
    yield str((undefined(name='pm') if l_0_pm is missing else l_0_pm))
    yield '[5m]))\n   ```\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', _block_vars=_block_vars))
    yield ') (rate(vllm:nixl_num_kv_expired_reqs_total'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', source='vllm', _block_vars=_block_vars))
    yield '[5m]))\n   ```\n\n   With Mooncake, the same counters are `vllm:mooncake_num_failed_transfers_total`,\n   `vllm:mooncake_num_failed_recvs_total` and `vllm:mooncake_num_kv_expired_reqs_total`.\n\n2. Failures on one pod only, or on every pod of the model? Every decode pod failing against the same\n   prefill pods points at those prefill pods or their network; one decode pod failing alone points at that\n   pod or its node.\n\n3. How long the transfers that succeed take (a rising p99 shows a congested or degraded link before it\n   fails):\n\n   ```promql\n   histogram_quantile(0.99, sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', 'le', _block_vars=_block_vars))
    yield ') (rate(vllm:nixl_xfer_time_seconds_bucket'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', source='vllm', _block_vars=_block_vars))
    yield '[5m])))\n   ```\n\n4. Requests waiting for their KV on the decode pods (vLLM 0.32 and later), by stage:\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'stage', _block_vars=_block_vars))
    yield ') (vllm:num_requests_kv_fetch_by_stage'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', source='vllm', _block_vars=_block_vars))
    yield ")\n   ```\n\n5. The connector's log lines on the pod:\n\n   ```sh\n   kubectl -n <namespace> logs <pod> -c <container> --tail=500 | grep -iE 'nixl|mooncake|ucx|rdma|transfer|expired|notif'\n   ```\n"

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. **A prefill pod restarted or was rescheduled.** Decode pods still ask for blocks that died with it.\n2. **The network path between the pods.** RDMA or NIC trouble on a node, a changed network policy, a\n   firewall, or UCX falling back to TCP under load.\n3. **Decode pods too slow to read in time.** A full decode pool leaves prefilled blocks unread until they\n   expire (`VLLM_NIXL_ABORT_REQUEST_TIMEOUT`); expired requests rise with the decode queue.\n4. **Mismatched deployments.** Prefill and decode pods on different vLLM releases, block sizes or tensor\n   parallel layouts cannot exchange blocks.\n'

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
    yield '1. **One pod or one node fails:** delete that pod so that it starts elsewhere, and cordon the node if the\n   failures follow it:\n\n   ```sh\n   kubectl -n <namespace> delete pod <pod>\n   ```\n\n2. **Expired requests with a long decode queue:** add decode replicas, or send less traffic to this model\n   until the queue drains'
    if context.call((undefined(name='has_alert') if l_0_has_alert is missing else l_0_has_alert), 'VLLMRequestQueueBacklog', _block_vars=_block_vars):
        pass
        yield ' ('
        yield str(context.call((undefined(name='link') if l_0_link is missing else l_0_link), 'VLLMRequestQueueBacklog', _block_vars=_block_vars))
        yield ')'
    yield '.\n3. **After a rollout:** roll back the side that changed, so that prefill and decode pods run the same\n   release and cache settings again.\n4. **Network:** move the pods off the node with the failing NIC, and hand the node to its owners.\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_on = resolve('on')
    l_0_pm = resolve('pm')
    pass
    yield '1. No failures over the next hour:\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', _block_vars=_block_vars))
    yield ') (increase(vllm:nixl_num_failed_transfers_total'
    yield str((undefined(name='pm') if l_0_pm is missing else l_0_pm))
    yield "[1h]))\n   ```\n\n2. The model's time to first token is back to its usual level on the fleet dashboard.\n"

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '- Failures spread over many nodes: to the network or RDMA owners of the cluster, with the pods and nodes.\n- Failures continue on healthy nodes with matching releases: to the owners of the vLLM image and the\n  disaggregated serving setup (router, KV connector configuration).\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=25&2=28&3=31&4=33&6=38&8=41&9=44&10=47&11=52&22=62&37=72&43=82&47=94&51=98&65=102&71=106&80=111&89=121&98=132&103=139&107=150&112=155'