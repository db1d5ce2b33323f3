from jinja2.runtime import LoopContext, Macro, Markup, Namespace, TemplateNotFound, TemplateReference, TemplateRuntimeError, Undefined, escape, identity, internalcode, markup_join, missing, str_join
name = 'runbooks/_inference-pool.md.j2'

def root(context, missing=missing):
    resolve = context.resolve_or_missing
    undefined = environment.undefined
    concat = environment.concat
    cond_expr_undefined = Undefined
    if 0: yield None
    pass
    yield "**The endpoint picker (EPP).** The InferencePool names its EPP Service in `spec.endpointPickerRef`:\n\n```sh\nkubectl -n <namespace> get inferencepool -o custom-columns=POOL:.metadata.name,EPP:.spec.endpointPickerRef.name,PORT:.spec.endpointPickerRef.port.number,FAILURE:.spec.endpointPickerRef.failureMode\nkubectl -n <namespace> get deploy,pods -o wide | grep <epp>\nkubectl -n <namespace> logs deploy/<epp> --all-containers --prefix --tail=200 | grep -iE 'error|fail|leader|no endpoints|datastore'\n```\n\nA `failureMode` of `FailOpen` lets the gateway route without the EPP; `FailClose` (the default) fails\nevery request while it is gone. With HA, one replica leads and serves; the others wait.\n\n**The InferencePool.** Its `selector` must match the vLLM pods (same namespace only), and its\n`targetPorts` must be the ports vLLM listens on (each port is one endpoint):\n\n```sh\nkubectl -n <namespace> get inferencepool <pool> -o yaml\nkubectl -n <namespace> get pods -l <selector> -o wide\n```\n\n`status.parents[].conditions` tells whether the gateway accepted the pool (`Accepted`) and resolved its\nreferences (`ResolvedRefs`); a `False` condition carries the reason.\n\n**The InferenceObjectives** of the pool set each model's priority; a typo in `poolRef` leaves its\nrequests without a pool:\n\n```sh\nkubectl -n <namespace> get inferenceobjectives -o custom-columns=NAME:.metadata.name,POOL:.spec.poolRef.name,PRIORITY:.spec.priority\n```\n"

blocks = {}
debug_info = ''