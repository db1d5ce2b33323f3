from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-spec-decode-acceptance-low.md.j2'

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
    l_0_plane = l_0_fires_when = l_0_related = l_0_pm = missing
    try:
        t_1 = environment.filters['format']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'format' found.")
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-spec-decode-acceptance-low.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = 'none; this is about GPU time spent on draft tokens that are thrown away'
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(('a pod and model accepts fewer than ', context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio')), ' of its draft tokens over ', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'), ' while it drafts more than ', t_1('%g', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'min_draft_tokens_per_second')), ' tokens per second, ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMZeroThroughput', 'VLLMErrorBudgetBurn', 'VLLMRequestQueueBacklog']
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
    yield 'Nothing urgent: answers are correct, and the GPU spends time on draft tokens that are thrown away. Check\nwhether it started with a rollout of the model or of the drafter (Confirm step 1 shows when acceptance\ndropped); if it did, roll back the side that changed. Otherwise retune during working hours (Fix).\n'

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'With speculative decoding (`--speculative-config`), a cheap drafter (a small model, EAGLE or MTP heads,\nn-gram lookup) proposes several tokens and the served model checks them in one step; the tokens it\naccepts come for the price of one step. The acceptance rate is accepted draft tokens over drafted ones.\nWhen it collapses, the engine still pays for drafting and checking every proposal and gets little back:\ndecoding can end up slower than without speculation.\n\nThis is a ticket, not a page: answers stay correct, only the speed gain is lost.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield 'Inter-token latency rises and throughput per GPU drops compared with a working drafter, or compared with\nno speculation at all. Nothing fails.\n'

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_on = resolve('on')
    l_0_match = resolve('match')
    l_0_pm = resolve('pm')
    pass
    yield '1. Acceptance rate per model, over a longer span to see when it dropped:\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') (rate(vllm:spec_decode_num_accepted_tokens_total'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', source='vllm', _block_vars=_block_vars))
    yield '[30m])) / sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') (rate(vllm:spec_decode_num_draft_tokens_total'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', source='vllm', _block_vars=_block_vars))
    yield '[30m]))\n   ```\n\n2. Mean tokens gained per step (1 plus accepted tokens per draft); at 1, speculation gains nothing:\n\n   ```promql\n   1 + sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', _block_vars=_block_vars))
    yield ') (rate(vllm:spec_decode_num_accepted_tokens_total'
    yield str((undefined(name='pm') if l_0_pm is missing else l_0_pm))
    yield '[30m])) / sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'pod', 'model_name', _block_vars=_block_vars))
    yield ') (rate(vllm:spec_decode_num_drafts_total'
    yield str((undefined(name='pm') if l_0_pm is missing else l_0_pm))
    yield '[30m]))\n   ```\n\n3. Acceptance by draft position: a drop only at the later positions means too many tokens are proposed\n   per step:\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', 'position', _block_vars=_block_vars))
    yield ') (rate(vllm:spec_decode_num_accepted_tokens_per_pos_total'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', source='vllm', _block_vars=_block_vars))
    yield '[30m])) / ignoring (position) group_left sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') (rate(vllm:spec_decode_num_drafts_total'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', source='vllm', _block_vars=_block_vars))
    yield "[30m]))\n   ```\n\n4. The speculative settings in use:\n\n   ```sh\n   kubectl -n <namespace> get pod <pod> -o jsonpath='{.spec.containers[*].args}'\n   ```\n"

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. **The traffic changed.** A new client, language or task that the draft model (or the n-gram lookup)\n   does not predict well.\n2. **The served model changed but the drafter did not.** A fine-tune or a new version of the target model\n   with the old draft model or heads.\n3. **Too many speculative tokens per step** for this traffic: the later positions are almost never\n   accepted.\n4. **Sampling settings.** High temperatures make any draft less likely to be accepted.\n'

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. **Retune:** lower `num_speculative_tokens` so that only the positions that are accepted are proposed.\n2. **Match the drafter to the model:** deploy the draft model or heads trained for the served version.\n3. **Turn speculation off** for this model if acceptance stays low: remove `--speculative-config` and\n   compare the inter-token latency.\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pct = resolve('pct')
    l_0_t = resolve('t')
    pass
    yield '1. The acceptance rate (step 1 of Confirm) stays above '
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'), _block_vars=_block_vars))
    yield ' over a day.\n2. The inter-token latency on the fleet dashboard is at or below its level before the drop.\n'

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '- To the owners of the model deployment: they choose the drafter and its settings. Nothing here needs\n  on-call action at night.\n'

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=24&2=27&3=30&4=33&5=36&6=41&11=51&20=61&24=71&28=83&34=91&41=99&50=108&59=118&65=128&66=139&69=142'