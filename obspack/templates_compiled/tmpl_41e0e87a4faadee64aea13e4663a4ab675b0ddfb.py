from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/_base.md.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    l_0_alert = resolve('alert')
    l_0_severity = resolve('severity')
    l_0_fires_when = resolve('fires_when')
    l_0_plane = resolve('plane')
    l_0_dashboard = resolve('dashboard')
    l_0_triage = resolve('triage')
    l_0_placeholder_note = resolve('placeholder_note')
    l_0_expr = resolve('expr')
    l_0_crash = resolve('crash')
    l_0_related = resolve('related')
    pass
    yield '# '
    yield str(environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'alert'))
    yield '\n\n'
    yield str(environment.getattr((undefined(name='alert') if l_0_alert is missing else l_0_alert), 'summary'))
    yield '\n\n- **Severity:** '
    yield str((undefined(name='severity') if l_0_severity is missing else l_0_severity))
    yield '\n- **Fires when:** '
    yield str((undefined(name='fires_when') if l_0_fires_when is missing else l_0_fires_when))
    yield '\n- **Memory plane:** '
    yield str((undefined(name='plane') if l_0_plane is missing else l_0_plane))
    yield '\n'
    if environment.getattr((undefined(name='dashboard') if l_0_dashboard is missing else l_0_dashboard), 'home'):
        pass
        yield '- **'
        yield str(environment.getattr((undefined(name='dashboard') if l_0_dashboard is missing else l_0_dashboard), 'kind'))
        yield ':** ['
        yield str(environment.getattr((undefined(name='dashboard') if l_0_dashboard is missing else l_0_dashboard), 'title'))
        yield ']('
        yield str(environment.getattr((undefined(name='dashboard') if l_0_dashboard is missing else l_0_dashboard), 'home'))
        yield ") (the alert's `dashboard_url` opens it on the "
        yield str(environment.getattr((undefined(name='dashboard') if l_0_dashboard is missing else l_0_dashboard), 'on'))
        yield ')\n'
    else:
        pass
        yield '- **'
        yield str(environment.getattr((undefined(name='dashboard') if l_0_dashboard is missing else l_0_dashboard), 'kind'))
        yield ':** '
        yield str(environment.getattr((undefined(name='dashboard') if l_0_dashboard is missing else l_0_dashboard), 'title'))
        yield ', uid `'
        yield str(environment.getattr((undefined(name='dashboard') if l_0_dashboard is missing else l_0_dashboard), 'uid'))
        yield "` (the alert's `dashboard_url` opens it on the "
        yield str(environment.getattr((undefined(name='dashboard') if l_0_dashboard is missing else l_0_dashboard), 'on'))
        yield ')\n'
    yield '\n## Do this now\n\n'
    yield from context.blocks['now'][0](context)
    yield "\n## Confirm\n\n**First command.** The alert's `triage` annotation carries it with the labels filled in:\n\n```sh\n"
    yield str((undefined(name='triage') if l_0_triage is missing else l_0_triage))
    yield '\n```\n\n'
    yield str((undefined(name='placeholder_note') if l_0_placeholder_note is missing else l_0_placeholder_note))
    yield '\n\nThe alert fires on this expression. Run it in Prometheus to list every series that fires now:\n\n```promql\n'
    yield str((undefined(name='expr') if l_0_expr is missing else l_0_expr))
    yield '\n```\n\n'
    yield from context.blocks['confirm'][0](context)
    if (undefined(name='crash') if l_0_crash is missing else l_0_crash):
        pass
        yield '\n'
        template = environment.get_template('runbooks/_first-branch.md.j2', 'runbooks/_base.md.j2')
        gen = template.root_render_func(template.new_context(context.get_all(), True, {}))
        try:
            for event in gen:
                yield event
        finally: gen.close()
    yield '\n## What it means\n\n'
    yield from context.blocks['meaning'][0](context)
    yield '\n## Impact on users\n\n'
    yield from context.blocks['impact'][0](context)
    yield '\n## Likely causes, most likely first\n\n'
    yield from context.blocks['causes'][0](context)
    yield '\n## Fix, in this order\n\n'
    yield from context.blocks['fixes'][0](context)
    yield '\n## Verify the fix\n\n'
    yield from context.blocks['verify'][0](context)
    yield '\n## Escalate\n\n'
    yield from context.blocks['escalate'][0](context)
    yield '\n## Related\n\n- '
    yield str(environment.getattr((undefined(name='dashboard') if l_0_dashboard is missing else l_0_dashboard), 'kind'))
    yield ', '
    yield str(environment.getattr((undefined(name='dashboard') if l_0_dashboard is missing else l_0_dashboard), 'title'))
    yield ' (uid `'
    yield str(environment.getattr((undefined(name='dashboard') if l_0_dashboard is missing else l_0_dashboard), 'uid'))
    yield '`), on one '
    yield str(environment.getattr((undefined(name='dashboard') if l_0_dashboard is missing else l_0_dashboard), 'on'))
    yield ':\n\n  ```text\n  '
    yield str(environment.getattr((undefined(name='dashboard') if l_0_dashboard is missing else l_0_dashboard), 'url'))
    yield '\n  ```\n\n'
    def t_1(fiter):
        l_1_has_alert = resolve('has_alert')
        for l_1_name in fiter:
            if context.call((undefined(name='has_alert') if l_1_has_alert is missing else l_1_has_alert), l_1_name):
                yield l_1_name
    for l_1_name in t_1((undefined(name='related') if l_0_related is missing else l_0_related)):
        l_1_link = resolve('link')
        l_1_summary = resolve('summary')
        _loop_vars = {}
        pass
        yield '- '
        yield str(context.call((undefined(name='link') if l_1_link is missing else l_1_link), l_1_name, _loop_vars=_loop_vars))
        yield ': '
        yield str(context.call((undefined(name='summary') if l_1_summary is missing else l_1_summary), l_1_name, _loop_vars=_loop_vars))
        yield '\n'
    l_1_name = l_1_link = l_1_summary = missing

def block_now(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass

def block_confirm(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass

def block_meaning(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass

def block_impact(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass

def block_causes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass

def block_fixes(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass

def block_verify(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass

def block_escalate(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    _block_vars = {}
    pass

blocks = {'now': block_now, 'confirm': block_confirm, 'meaning': block_meaning, 'impact': block_impact, 'causes': block_causes, 'fixes': block_fixes, 'verify': block_verify, 'escalate': block_escalate}
debug_info = '5=22&7=24&9=26&10=28&11=30&12=32&13=35&15=46&20=55&27=57&30=59&35=61&38=63&39=64&41=67&46=74&50=76&54=78&58=80&62=82&66=84&70=86&73=94&76=96&77=107&20=113&38=122&46=131&50=140&54=149&58=158&62=167&66=176'