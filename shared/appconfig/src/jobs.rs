//! A job's spec, made from the app config and the install as it is when the step starts: one
//! pure function per kind of job, so the scheduler only finds the records it needs (the config
//! version, the install, the artifact's digest) and sends what this returns.
//!
//! Here and not in `ferry-model` because a spec is rendered from the app config's templates and
//! is a wire message of `ferry-protocol`, both of which the model does not know.

use ferry_model::{self as m, Install, Step, Workflow};
use ferry_protocol::messages::{
    ActionJob, ApiGrant, ComponentJob, ComponentKind, PolicyDoc, SecretSync,
};

use crate::operations::{self, Operation};
use crate::{AppConfig, ComponentType};

/// The template state (`.nuon.*`) of an install as it is now: its inputs, the sandbox's and the
/// components' outputs, its action runs. What every job of the install renders against.
pub fn install_state(cfg: &AppConfig, install: &Install) -> serde_json::Value {
    let outputs = install
        .components
        .iter()
        .map(|(k, v)| (k.clone(), v.outputs.clone()))
        .collect();
    cfg.template_state(&crate::state::Facts {
        org: &install.org,
        app: &install.app,
        install: &install.name,
        inputs: Some(&install.inputs),
        sandbox_outputs: Some(&install.sandbox.outputs),
        component_outputs: Some(&outputs),
        actions: Some(&install.actions),
        install_stack: install.install_stack.as_ref(),
        stack_template: install.stack_template.as_ref(),
    })
}

/// The plugin that deploys a component of this type, if this version of Ferry has one.
pub fn component_kind(t: ComponentType) -> Option<ComponentKind> {
    Some(match t {
        ComponentType::Script => ComponentKind::Script,
        ComponentType::TerraformModule => ComponentKind::Terraform,
        ComponentType::HelmChart => ComponentKind::Helm,
        ComponentType::KubernetesManifest => ComponentKind::KubernetesManifest,
        ComponentType::ContainerImage => ComponentKind::ContainerImage,
        ComponentType::Job => ComponentKind::Job,
        _ => return None,
    })
}

/// Whether a component of this type deploys into the install's cluster (`ComponentKind::facts`).
pub fn needs_cluster(t: ComponentType) -> bool {
    component_kind(t).is_some_and(|k| k.facts().needs_cluster)
}

/// The config version a step of `component` runs with: a teardown destroys with the config its
/// component was deployed with (a component removed from the app is only in that one); every
/// other step uses its workflow's.
pub fn config_of_step(install: &Install, wf: &Workflow, step: &Step) -> String {
    match step.kind {
        m::StepKind::Teardown => install
            .component(&step.component)
            .and_then(|c| c.config_id.clone())
            .unwrap_or_else(|| wf.app_config_id.clone()),
        _ => wf.app_config_id.clone(),
    }
}

/// What a teardown of `component` destroys: the artifact the last apply deployed, already in the
/// install's store.
pub fn teardown_artifact(install: &Install, component: &str) -> Result<String, String> {
    install
        .component(component)
        .and_then(|c| c.artifact_digest.clone())
        .ok_or_else(|| format!("`{component}` has no deployed artifact to tear down"))
}

/// The plan, apply or teardown job of `component` with `artifact_digest` for `op`, its templates,
/// policies and role (`crate::operations`) rendered against the install now; or why it cannot
/// run.
pub fn component_job(
    cfg: &AppConfig,
    install: &Install,
    component: &str,
    artifact_digest: String,
    op: Operation,
) -> Result<ComponentJob, String> {
    let Some(component) = cfg.component(component) else {
        return Err(format!("component `{component}` is not in the app config"));
    };
    let kind = component_kind(component.kind).ok_or_else(|| {
        format!(
            "`{}` components cannot be deployed by this version of Ferry yet",
            component.kind.as_str()
        )
    })?;
    if !matches!(op, Operation::Teardown | Operation::Deprovision) {
        unset_secrets(cfg, install)?;
    }
    let state = install_state(cfg, install);
    let rendered = component
        .render(&state)
        .map_err(|e| format!("cannot render templates: {e}"))?;
    let policies = cfg
        .policies_for(component)
        .into_iter()
        .map(|p| {
            crate::template::render(&p.text, &state)
                .map(|rego| PolicyDoc {
                    name: p.name.clone(),
                    rego,
                })
                .map_err(|e| format!("cannot render policy `{}`: {e}", p.name))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let cluster = match crate::cluster::access(&install.sandbox.outputs) {
        Ok(c) => c.filter(|_| needs_cluster(component.kind)),
        Err(e) if needs_cluster(component.kind) => return Err(e),
        Err(_) => None,
    };
    Ok(ComponentJob {
        component: component.name.clone(),
        kind,
        artifact_digest,
        vars: rendered.vars,
        env: rendered.env_vars,
        applied_digest: install
            .component(&component.name)
            .and_then(|c| c.applied_digest.clone()),
        redact: install.secret_values(&cfg.sensitive_defaults(&install.inputs)),
        settings: rendered.settings,
        timeout_secs: component.timeout_secs,
        cluster,
        policies,
        run_as: operations::run_as(
            cfg,
            &state,
            &operations::principal(m::StepKind::Plan, &component.name),
            op,
            None,
        )?,
        secret_syncs: if needs_cluster(component.kind) {
            secret_syncs(cfg, &state, &install.name)?
        } else {
            vec![]
        },
    })
}

/// Where each `kubernetes_sync` secret goes in the cluster, its names rendered against `state`.
pub fn secret_syncs(
    cfg: &AppConfig,
    state: &serde_json::Value,
    install: &str,
) -> Result<Vec<SecretSync>, String> {
    let render = |s: &crate::Secret, what: &str, text: &str| {
        crate::template::render(text, state)
            .map_err(|e| format!("secret `{}`: cannot render its {what}: {e}", s.name))
    };
    let mut out = Vec::new();
    for s in &cfg.secrets {
        for t in &s.kubernetes {
            out.push(SecretSync {
                secret: s.name.clone(),
                source: crate::stack::secret_place(install, &s.name).0,
                namespace: render(s, "Kubernetes namespace", &t.namespace)?,
                name: render(s, "Kubernetes Secret name", &t.name)?,
                key: t.key.clone(),
                base64: s.base64,
                required: s.required,
            });
        }
    }
    Ok(out)
}

/// Refuses a deploy while a required secret is not set in the install's account, saying which
/// and where the customer sets it. Known only from a runner in an install stack: an install
/// whose runner reports no stack has no secrets to check.
pub fn unset_secrets(cfg: &AppConfig, install: &Install) -> Result<(), String> {
    let Some(stack) = &install.install_stack else {
        return Ok(());
    };
    let unset: Vec<String> = cfg
        .secrets
        .iter()
        .filter(|s| s.required && stack.secrets.get(&s.name).is_none_or(|x| x.length == 0))
        .map(|s| {
            let (name, param) = crate::stack::secret_place(&install.name, &s.name);
            format!(
                "`{}`: set Secrets Manager secret `{name}` in the install's account, or the install stack's parameter `{param}`",
                s.name
            )
        })
        .collect();
    if unset.is_empty() {
        return Ok(());
    }
    Err(format!(
        "required secrets are not set: {} (the runner sees a change within a minute; then retry the deploy)",
        unset.join("; ")
    ))
}

/// One action step's job, rendered against the install as it is now: its command or script and
/// its environment (the step's `env_vars`, then the run's inputs, defaults for hooks and
/// runbooks), the install's secrets to mask in its log, its cluster, and the API grant of the
/// break-glass role it needs if that grant still holds at `now_ms`.
pub fn action_job(
    cfg: &AppConfig,
    install: &Install,
    wf: &Workflow,
    step: &Step,
    now_ms: u64,
) -> Result<ActionJob, String> {
    let Some(at) = &step.action else {
        return Err("an action step without its action".into());
    };
    let Some(action) = cfg.action(&step.component) else {
        return Err(format!(
            "action `{}` is not in app config {}",
            step.component, wf.app_config_id
        ));
    };
    let Some(def) = action.step(&at.step) else {
        return Err(format!(
            "action `{}` has no step `{}`",
            action.name, at.step
        ));
    };
    let state = install_state(cfg, install);
    let render = |what: &str, text: &str| {
        crate::template::render(text, &state)
            .map_err(|e| format!("step `{}`: cannot render {what}: {e}", at.step))
    };
    let command = def
        .command
        .as_deref()
        .map(|c| render("`command`", c))
        .transpose()?;
    let script = def
        .script
        .as_deref()
        .map(|c| render("`inline_contents`", c))
        .transpose()?;
    let mut env = Vec::new();
    for (k, v) in &def.env_vars {
        env.push((k.clone(), render(&format!("`env_vars.{k}`"), v)?));
    }
    // A run started by hand gives inputs; hooks and runbooks give none: defaults then.
    let given = wf
        .run
        .as_ref()
        .filter(|r| r.action == action.name)
        .map(|r| r.inputs.clone())
        .unwrap_or_default();
    let inputs = action.run_inputs(&given)?;
    env.retain(|(k, _)| !inputs.contains_key(k));
    env.extend(inputs);
    let run_as = action_run_as(cfg, &state, action, def)?;
    Ok(ActionJob {
        action: action.name.clone(),
        step: at.step.clone(),
        trigger: at.trigger.clone(),
        command,
        script,
        env,
        redact: install.secret_values(&cfg.sensitive_defaults(&install.inputs)),
        cluster: crate::cluster::access(&install.sandbox.outputs)
            .ok()
            .flatten(),
        break_glass_role: action.break_glass_role.clone(),
        api_grant: action
            .break_glass_role
            .as_ref()
            .and_then(|r| install.break_glass.get(r))
            .filter(|g| g.until_ms > now_ms)
            .map(|g| ApiGrant {
                by: g.by.clone(),
                until_ms: g.until_ms,
            }),
        run_as,
    })
}

/// The role an action's step runs as (`crate::operations`).
fn action_run_as(
    cfg: &AppConfig,
    state: &serde_json::Value,
    action: &crate::Action,
    step: &crate::ActionStep,
) -> Result<Option<ferry_protocol::messages::RunAs>, String> {
    // A break-glass role no `break_glass.toml` declares is a grant on the host only: the action
    // runs as its step's or its own role then.
    let named = action
        .break_glass_role
        .as_deref()
        .filter(|r| cfg.roles.iter().any(|c| c.name == *r))
        .or(step.role.as_deref())
        .or(action.role.as_deref());
    operations::run_as(
        cfg,
        state,
        &operations::principal(m::StepKind::Action, &action.name),
        Operation::Trigger,
        named,
    )
}

/// How long one execution of a `kind` job of `name` may run, if the app says: an action's
/// `timeout` bounds each of its steps, a component's `deploy_timeout` its plans and applies.
pub fn execution_timeout(cfg: &AppConfig, kind: m::JobKind, name: &str) -> Option<u64> {
    match kind {
        m::JobKind::Action => cfg
            .action(name)
            .and_then(|a| a.timeout_secs)
            .map(|s| s.ceil() as u64),
        _ => cfg.component(name).and_then(|c| c.timeout_secs),
    }
}
