from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'pack-README.md.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_pack = resolve('pack')
    l_0_namespace = resolve('namespace')
    l_0_paths = resolve('paths')
    l_0_listed = missing
    try:
        t_1 = environment.filters['join']
    except KeyError:
        @internalcode
        def t_1(*unused):
            raise TemplateRuntimeError("No filter named 'join' found.")
    try:
        t_2 = environment.filters['map']
    except KeyError:
        @internalcode
        def t_2(*unused):
            raise TemplateRuntimeError("No filter named 'map' found.")
    try:
        t_3 = environment.filters['selectattr']
    except KeyError:
        @internalcode
        def t_3(*unused):
            raise TemplateRuntimeError("No filter named 'selectattr' found.")
    try:
        t_4 = environment.filters['unique']
    except KeyError:
        @internalcode
        def t_4(*unused):
            raise TemplateRuntimeError("No filter named 'unique' found.")
    pass
    yield '# obspack pack for vLLM on Kubernetes\n\nThis folder is written by `obspack render` (obspack '
    yield str(environment.getattr((undefined(name='pack') if l_0_pack is missing else l_0_pack), 'version'))
    yield ', from '
    yield str(environment.getattr((undefined(name='pack') if l_0_pack is missing else l_0_pack), 'source'))
    yield ").\nDo not edit it by hand: change the config and render again. `obspack render --check` fails in CI when\nthis folder is stale.\n\n| folder | what it holds | who reads it |\n|---|---|---|\n| `prometheus/` | plain rule files: recording rules and alerts | Prometheus `rule_files` |\n| `thanos/` | the same groups with `partial_response_strategy` (alerts `abort`, records `warn` where safe) | Thanos Ruler `--rule-file` |\n| `mimir/` | the same groups as two ruler namespaces, within Mimir's default limits | Mimir's ruler: `mimirtool rules sync mimir/*.yaml` |\n| `vmalert/` | the same groups, expressions rewritten to MetricsQL that means the same | vmalert `-rule` (VictoriaMetrics 1.79 and later) |\n| `kubernetes/` | a PrometheusRule with the same groups, one ConfigMap per dashboard | Prometheus Operator, the Grafana dashboard sidecar |\n"
    if environment.getattr(environment.getattr((undefined(name='pack') if l_0_pack is missing else l_0_pack), 'autoscaling'), 'files'):
        pass
        yield '| `kubernetes/autoscaling/` | a KEDA ScaledObject or an HPA per autoscaler'
        if environment.getattr(environment.getattr((undefined(name='pack') if l_0_pack is missing else l_0_pack), 'autoscaling'), 'adapter_rules'):
            pass
            yield ", and `prometheus-adapter-rules.yaml` (the adapter's `externalRules`, its Helm chart's `rules.external`)"
        yield ' | KEDA, the HPA controller, prometheus-adapter |\n'
    yield "| `grafana/` | one JSON model per dashboard | Grafana import, provisioning |\n| `runbooks/` | one Markdown runbook per alert, linked from each alert's `runbook_url` | on-call |\n| `tests/` | `promtool test rules` unit tests of the alerts, built with this config's thresholds | your CI: `promtool test rules tests/*.yaml` |\n| `alertmanager/` | an example routing tree (by severity and team) with inhibitions | Alertmanager, `amtool check-config` |\n\n"
    if environment.getattr((undefined(name='pack') if l_0_pack is missing else l_0_pack), 'missing_tests'):
        pass
        yield '## Tests this pack does not ship\n\nThe selectors of this config leave too few label values for some tests (`obspack render` says so too):\n\n'
        for l_1_why in environment.getattr((undefined(name='pack') if l_0_pack is missing else l_0_pack), 'missing_tests'):
            _loop_vars = {}
            pass
            yield '- '
            yield str(l_1_why)
            yield '\n'
        l_1_why = missing
        yield '\n'
    yield '## Alerts\n\n| alert | severity | runbook |\n|---|---|---|\n'
    l_0_listed = context.call((undefined(name='namespace') if l_0_namespace is missing else l_0_namespace), names=[])
    context.vars['listed'] = l_0_listed
    context.exported_vars.add('listed')
    def t_5(fiter):
        for l_1_a in fiter:
            if (environment.getattr(l_1_a, 'alert') not in environment.getattr((undefined(name='listed') if l_0_listed is missing else l_0_listed), 'names')):
                yield l_1_a
    for l_1_a in t_5(environment.getattr((undefined(name='pack') if l_0_pack is missing else l_0_pack), 'alerts')):
        _loop_vars = {}
        pass
        if not isinstance(l_0_listed, Namespace):
            raise TemplateRuntimeError("cannot assign attribute on non-namespace object")
        l_0_listed['names'] = (environment.getattr((undefined(name='listed') if l_0_listed is missing else l_0_listed), 'names') + [environment.getattr(l_1_a, 'alert')])
        yield '| '
        yield str(environment.getattr(l_1_a, 'alert'))
        yield ' | '
        yield str(t_1(context.eval_ctx, t_4(environment, t_2(context, t_3(context, environment.getattr((undefined(name='pack') if l_0_pack is missing else l_0_pack), 'alerts'), 'alert', 'equalto', environment.getattr(l_1_a, 'alert')), attribute='severity.value')), ', '))
        yield ' | [runbooks/'
        yield str(environment.getattr(l_1_a, 'runbook'))
        yield '.md](runbooks/'
        yield str(environment.getattr(l_1_a, 'runbook'))
        yield '.md) |\n'
    l_1_a = missing
    yield '\n## Dashboards\n\n| dashboard | uid | file |\n|---|---|---|\n'
    for l_1_d in environment.getattr((undefined(name='pack') if l_0_pack is missing else l_0_pack), 'dashboards'):
        _loop_vars = {}
        pass
        yield '| '
        yield str(environment.getattr(l_1_d, 'title'))
        yield ' | `'
        yield str(environment.getattr(l_1_d, 'uid'))
        yield '` | [grafana/'
        yield str(environment.getattr(l_1_d, 'name'))
        yield '.json](grafana/'
        yield str(environment.getattr(l_1_d, 'name'))
        yield '.json) |\n'
    l_1_d = missing
    yield '\n## Files\n\n'
    for l_1_p in (undefined(name='paths') if l_0_paths is missing else l_0_paths):
        _loop_vars = {}
        pass
        yield '- `'
        yield str(l_1_p)
        yield '`\n'
    l_1_p = missing

blocks = {}
debug_info = '3=40&14=44&15=47&22=52&27=55&28=59&36=64&37=67&38=76&39=78&46=88&47=92&52=102&53=106'