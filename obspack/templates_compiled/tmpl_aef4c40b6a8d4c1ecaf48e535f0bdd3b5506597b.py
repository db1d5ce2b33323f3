from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/vllm-gpus-mostly-idle.md.j2'

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
    l_0_plane = l_0_fires_when = l_0_related = missing
    pass
    parent_template = environment.get_template('runbooks/_base.md.j2', 'runbooks/vllm-gpus-mostly-idle.md.j2')
    for name, parent_block in parent_template.blocks.items():
        context.blocks.setdefault(name, []).append(parent_block)
    l_0_plane = "none; this is about cost: GPUs held by the model's pods served no request"
    context.vars['plane'] = l_0_plane
    context.exported_vars.add('plane')
    l_0_fires_when = str_join(("a model's pods held GPUs and ran no request (for 5 minutes or more at a time) for more than ", context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio')), ' of their GPU-hours over the last ', environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'), ', the model held GPUs at the start of that window and still does, ', context.call((undefined(name='held') if l_0_held is missing else l_0_held), environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'for_')), ))
    context.vars['fires_when'] = l_0_fires_when
    context.exported_vars.add('fires_when')
    l_0_related = ['VLLMCostPerMillionTokensRising', 'VLLMAutoscalerThrashing', 'VLLMAutoscalerMaxedOut']
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
    yield "Nothing is broken for users: this is a ticket. Nothing should be scaled down before its owner agrees.\n\n1. Find who owns the workload: the cost page's table of the most expensive idle workloads names it and\n   its team.\n2. See whether the idle time follows a pattern (nights, weekends: scale with the traffic, fix 2) or is\n   constant (too many replicas: `obspack rightsize --autoscaling`, fix 1).\n"

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_t = resolve('t')
    pass
    yield 'Every GPU a vLLM pod holds is paid for, whether it serves or not. Over the last '
    yield str(environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'))
    yield ', the pods of\n`<model>` in `<namespace>` held their GPUs with no request running (and no token produced) for most of\ntheir GPU-hours. Engines put to sleep (vLLM sleep mode) are counted apart, as asleep, not idle: this alert\nis about GPUs that are awake and waiting. It is a ticket, not a page: nothing is broken for users, money\nis spent for nothing.\n'

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "None on users. The cost is the idle GPU-hours times the GPU's price: the cost page's table of idle\nworkloads gives it for the dashboard's range.\n"

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_t = resolve('t')
    l_0_on = resolve('on')
    l_0_c = resolve('c')
    l_0_match = resolve('match')
    l_0_hours_per_evaluation = resolve('hours_per_evaluation')
    try:
        t_1 = environment.filters['replace']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'replace' found.")
    pass
    yield "1. The model's GPUs by state over the last "
    yield str(environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'))
    yield ' (serving, idle, asleep), as GPU-hours:\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', 'state', _block_vars=_block_vars))
    yield ') (sum_over_time('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MODEL_GPUS_ALLOCATED'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', _block_vars=_block_vars))
    yield '['
    yield str(environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'))
    yield ']))\n   * on () group_left ()\n   ('
    yield str(t_1(context.eval_ctx, t_1(context.eval_ctx, context.call((undefined(name='hours_per_evaluation') if l_0_hours_per_evaluation is missing else l_0_hours_per_evaluation), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'), _block_vars=_block_vars), '\n', ' '), '  ', ' '))
    yield ')\n   ```\n\n2. The pods that hold them, with their GPUs and state now:\n\n   ```promql\n   '
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'POD_GPUS_ALLOCATED'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', _block_vars=_block_vars))
    yield '\n   ```\n\n3. Requests per second the model served over the window (a few requests an hour keep a pod idle most of\n   the time):\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') (rate(vllm:request_success_total'
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', source='vllm', _block_vars=_block_vars))
    yield '['
    yield str(environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'window'))
    yield ']))\n   ```\n'

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. **More replicas than the traffic needs:** a replica count set for a launch or a peak and never lowered,\n   or an autoscaler whose minimum is too high.\n2. **Traffic with a daily pattern:** busy in office hours, idle at night; the replicas stay.\n3. **A model nobody calls any more:** a test deployment, a model replaced by a newer one, a client moved\n   elsewhere.\n4. **Traffic that does not reach the pods:** a router or gateway that sends everything to some replicas, or\n   a Service selector that matches none (then the other alerts of the model are quiet too).\n'

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield '1. **Fewer replicas.** `obspack rightsize --autoscaling` reads how many replicas the model needed at its\n   peak and prints what running that many instead saves per month at the configured prices; lower the\n   replicas (or the autoscaler\'s minimum) to it:\n\n   ```sh\n   kubectl -n <namespace> scale deployment/<deployment> --replicas=<replicas>\n   ```\n\n2. **Scale with the traffic:** an autoscaler on the saturation signal (docs/autoscaling.md) with a low\n   minimum, so night hours run one replica, or none with a wake query.\n3. **Sleep mode for predictable quiet hours** (vLLM 0.11.1+): the engine keeps its process and frees GPU\n   memory; the GPU is still held, so this saves money only where GPUs are shared or the node scales down.\n4. **A smaller tensor-parallel degree** where the KV cache stays mostly empty (`obspack rightsize` says\n   "mostly idle" for the KV cache): fewer GPUs per replica, if the weights fit.\n5. **Remove a model nobody calls,** after asking its owner.\n'

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    l_0_pct = resolve('pct')
    l_0_t = resolve('t')
    l_0_on = resolve('on')
    l_0_c = resolve('c')
    l_0_match = resolve('match')
    pass
    yield "1. The idle share of the model's GPU-hours over the last day, falling under "
    yield str(context.call((undefined(name='pct') if l_0_pct is missing else l_0_pct), environment.getattr((undefined(name='t') if l_0_t is missing else l_0_t), 'ratio'), _block_vars=_block_vars))
    yield ':\n\n   ```promql\n   sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') (sum_over_time('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MODEL_GPUS_ALLOCATED'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', extra=('state="idle"',), _block_vars=_block_vars))
    yield '[1d]))\n   / sum by ('
    yield str(context.call((undefined(name='on') if l_0_on is missing else l_0_on), 'namespace', 'model_name', _block_vars=_block_vars))
    yield ') (sum_over_time('
    yield str(environment.getattr((undefined(name='c') if l_0_c is missing else l_0_c), 'MODEL_GPUS_ALLOCATED'))
    yield str(context.call((undefined(name='match') if l_0_match is missing else l_0_match), 'namespace', 'model_name', _block_vars=_block_vars))
    yield "[1d]))\n   ```\n\n2. The model's time to first token stays within its SLO at the next peak (the SLO page): fewer replicas\n   must still carry the busiest hour.\n"

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass
    yield "- The workload's owner (the team on the cost page) decides about replicas and removal; the platform team\n  about node pools that scale down.\n"

blocks = {'now': block_now, 'meaning': block_meaning, 'impact': block_impact, 'confirm': block_confirm, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '1=17&2=20&3=23&4=26&5=31&13=41&14=51&20=54&24=64&25=84&28=86&30=93&36=95&43=98&46=105&55=115&72=125&73=139&76=141&77=146&83=152'