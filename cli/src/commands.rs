//! The API-backed commands of apps, installs, workflows and jobs, each a short request and its
//! rendering; listings are in `listings.rs`, newer command groups have their own modules
//! (actions, releases, tokens, logs).

use std::path::Path;

use anyhow::{Context, Result, bail};
use ferry_appconfig::Package;
use ferry_client::Client as Api;
use ferry_model::api::{CreateInstall, RunnerFilter};
use ferry_model::events::EventKind;
use ferry_model::ops;

use crate::render;

pub fn print_json<T: serde::Serialize>(v: &T) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

/// Reads and validates a package locally: the same checks the API makes, before any upload.
pub fn load_package(
    dir: &Path,
) -> Result<(
    Package,
    Result<ferry_appconfig::AppConfig, ferry_appconfig::Diagnostics>,
)> {
    let pkg = Package::from_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let cfg = ferry_appconfig::load(&pkg);
    Ok((pkg, cfg))
}

pub fn apps_lint(dir: &Path, json_out: bool, rules: bool) -> Result<i32> {
    if rules {
        for (id, what) in ferry_appconfig::lint::RULES {
            println!("{id:<30} {what}");
        }
        return Ok(0);
    }
    let pkg = Package::from_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let report = ferry_appconfig::lint::lint(&pkg);
    if json_out {
        print_json(&report.findings)?;
    } else {
        for f in &report.findings {
            println!("{f}");
        }
        if report.findings.is_empty() {
            println!("{}: no findings", dir.display());
        }
    }
    Ok(if report.has_errors() { 1 } else { 0 })
}

pub fn apps_validate(dir: &Path, json_out: bool, strict: bool) -> Result<i32> {
    let pkg = Package::from_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut report = ferry_appconfig::validate(&pkg);
    if strict && !report.diagnostics.0.is_empty() {
        report.diagnostics.strict();
        report.config = None;
    }
    let errors = report.diagnostics.errors().count();
    let warnings = report.diagnostics.warnings().count();
    if json_out {
        let order = report.config.as_ref().map(|c| c.deploy_order.clone());
        let sandbox = report.config.as_ref().is_some_and(|c| c.sandbox.is_some());
        print_json(&serde_json::json!({
            "valid": errors == 0,
            "errors": errors,
            "warnings": warnings,
            "diagnostics": report.diagnostics,
            "sandbox": sandbox,
            "deploy_order": order,
        }))?;
        return Ok(if errors == 0 { 0 } else { 1 });
    }
    for d in &report.diagnostics.0 {
        eprintln!("{d}");
    }
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    match &report.config {
        Some(cfg) => {
            println!("{}: valid ({})", dir.display(), plural(warnings, "warning"));
            println!(
                "{}",
                render::deploy_order(cfg.sandbox.is_some(), &cfg.deploy_order)
            );
            Ok(0)
        }
        None => {
            eprintln!(
                "{} is invalid: {}, {}",
                dir.display(),
                plural(errors, "error"),
                plural(warnings, "warning")
            );
            Ok(1)
        }
    }
}

pub fn apps_schema(markdown: bool) -> Result<i32> {
    if markdown {
        print!("{}", ferry_appconfig::markdown_reference());
    } else {
        print_json(&ferry_appconfig::json_schema())?;
    }
    Ok(0)
}

/// App name from `--name` or the directory's name.
fn app_name(dir: &Path, name: Option<String>) -> Result<String> {
    if let Some(n) = name {
        return Ok(n);
    }
    let abs = std::fs::canonicalize(dir).with_context(|| format!("reading {}", dir.display()))?;
    let base = abs
        .file_name()
        .map(|s| s.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let cleaned: String = base
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let cleaned = cleaned.trim_matches('-').to_string();
    if cleaned.is_empty() {
        bail!(
            "cannot derive an app name from {}: pass --name",
            dir.display()
        );
    }
    Ok(cleaned)
}

/// Reads the package, fetches its remote references into it, validates it and uploads it.
pub async fn sync(api: &Api, dir: &Path, name: &str) -> Result<ferry_model::api::SyncResponse> {
    let mut pkg = Package::from_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut report = ferry_appconfig::validate(&pkg);
    if !report.remote.is_empty() {
        crate::fetch::fetch_remote(&mut pkg, &report.remote, dir, Default::default()).await?;
        eprintln!("fetched {} remote reference(s)", report.remote.len());
        // Again, over the fetched content.
        report = ferry_appconfig::validate(&pkg);
    }
    if report.config.is_none() {
        bail!("{} is invalid:\n{}", dir.display(), report.diagnostics);
    }
    for w in report.diagnostics.warnings() {
        eprintln!("{w}");
    }
    Ok(api.upload::<ops::SyncApp>(&[name], pkg.to_bundle()).await?)
}

pub async fn apps_sync(api: &Api, dir: &Path, name: Option<String>, json_out: bool) -> Result<i32> {
    let name = app_name(dir, name)?;
    let r = sync(api, dir, &name).await?;
    if json_out {
        print_json(&r)?;
    } else {
        println!("{}", render::sync(&r));
    }
    Ok(0)
}

pub fn parse_inputs(inputs: &[String]) -> Result<std::collections::BTreeMap<String, String>> {
    let mut out = std::collections::BTreeMap::new();
    for kv in inputs {
        let Some((k, v)) = kv.split_once('=') else {
            bail!("--input `{kv}`: expected NAME=VALUE")
        };
        if k.is_empty() {
            bail!("--input `{kv}`: the name is empty");
        }
        out.insert(k.to_string(), v.to_string());
    }
    Ok(out)
}

/// What `installs create` asks for.
pub struct NewInstall<'a> {
    pub app: &'a str,
    pub name: &'a str,
    pub inputs: &'a [String],
    pub labels: &'a [String],
    pub approve_all: bool,
    /// `vendor`, `customer` or `both`.
    pub approvals: &'a str,
}

pub async fn installs_create(
    api: &Api,
    new: NewInstall<'_>,
    json_out: bool,
    wait: bool,
) -> Result<String> {
    let NewInstall { app, name, .. } = new;
    let labels = ferry_model::parse_labels(&new.labels.join(",")).map_err(anyhow::Error::msg)?;
    let body = CreateInstall {
        app: app.to_string(),
        name: name.to_string(),
        inputs: parse_inputs(new.inputs)?,
        approve_all: new.approve_all,
        labels,
        approvals_by: approvals_by(new.approvals)?,
    };
    let r = api.call::<ops::CreateInstallOp>(&[], &(), &body).await?;
    let id = r.workflow_id.clone();
    match (json_out, wait) {
        // With --wait, --json prints the final workflow only.
        (true, true) => {}
        (true, false) => print_json(&r)?,
        (false, true) => render::say(format!(
            "install {name} created; provisioning in workflow {id}"
        )),
        (false, false) => {
            render::say(format!(
                "install {name} created; provisioning in workflow {id}"
            ));
            render::say(format!("follow it with: ferry workflows wait {id}"));
        }
    }
    if !json_out && r.runners_managed {
        render::say("its runner is started for you (the control plane runs under `ferry dev`)");
    }
    if !json_out && let Some(token) = r.runner_token.as_ref().map(|t| &t.token) {
        render::say(format!(
            "its runner bootstraps with this one-time token (valid an hour; `ferry installs runner-bundle {name}` writes a new one with everything else):\n  ferry-runner --bootstrap {token} --api {}",
            api.base()
        ));
    }
    Ok(id)
}

/// With `wait`: follows workflow `id` to its end (steps printed unless `json_out`, which prints
/// the final workflow instead); exit code 0 only if it succeeded.
pub async fn then_wait(api: &Api, id: String, wait: bool, json_out: bool) -> Result<i32> {
    if !wait {
        return Ok(0);
    }
    let started = std::time::Instant::now();
    let wf = if json_out {
        crate::watch::until::<ops::GetWorkflow>(api, EventKind::Workflow, &id, |w| {
            w.status.is_terminal()
        })
        .await?
    } else {
        crate::watch::follow(api, &id, started, || Ok(())).await?
    };
    if json_out {
        print_json(&wf)?;
    }
    if wf.status == ferry_model::WorkflowStatus::Succeeded {
        if !json_out {
            render::say(format!("workflow {id} succeeded"));
        }
        Ok(0)
    } else {
        eprintln!("workflow {id} {}", render::status_word(wf.status));
        crate::watch::report_failure(api, &wf).await;
        Ok(1)
    }
}

pub async fn installs_get(api: &Api, name: &str, json_out: bool) -> Result<i32> {
    let i = api.run::<ops::GetInstall>(&[name]).await?;
    if json_out {
        print_json(&i)?;
    } else {
        let mine = RunnerFilter {
            install: Some(name.to_string()),
        };
        let runners = api.call::<ops::ListRunners>(&[], &mine, &()).await?;
        println!("{}", render::install(&i));
        println!("{}", render::install_runner(&runners));
    }
    Ok(0)
}

/// `installs label`: sets and removes labels, prints the install's labels after.
pub async fn installs_label(
    api: &Api,
    name: &str,
    set: &[String],
    remove: Vec<String>,
    json_out: bool,
) -> Result<i32> {
    let set = ferry_model::parse_labels(&set.join(",")).map_err(anyhow::Error::msg)?;
    let body = ferry_model::api::SetLabels { set, remove };
    let i = api.call::<ops::SetLabelsOp>(&[name], &(), &body).await?;
    if json_out {
        print_json(&i)?;
    } else {
        println!("install {name}: labels {}", render::labels(&i.labels));
    }
    Ok(0)
}

fn approvals_by(who: &str) -> Result<ferry_model::ApprovalsBy> {
    ferry_model::ApprovalsBy::parse(who)
        .ok_or_else(|| anyhow::anyhow!("`{who}`: plans are approved by vendor, customer or both"))
}

/// `ferry installs approvals NAME WHO`.
pub async fn installs_approvals(api: &Api, name: &str, who: &str, json_out: bool) -> Result<i32> {
    let body = ferry_model::api::SetApprovals {
        approvals_by: approvals_by(who)?,
    };
    let i = api.call::<ops::SetApprovalsOp>(&[name], &(), &body).await?;
    if json_out {
        print_json(&i)?;
    } else {
        let who = match i.approvals_by {
            ferry_model::ApprovalsBy::Vendor => "the vendor",
            ferry_model::ApprovalsBy::Customer => "its customer",
            ferry_model::ApprovalsBy::Both => "both the vendor and its customer",
        };
        println!("install {name}: plans are approved by {who}");
    }
    Ok(0)
}

pub async fn installs_approve_all(api: &Api, name: &str, on: bool, json_out: bool) -> Result<i32> {
    let body = ferry_model::api::ApproveAll { enabled: on };
    let i = api.call::<ops::SetApproveAll>(&[name], &(), &body).await?;
    if json_out {
        print_json(&i)?;
    } else if on {
        println!("install {name}: approve-all on; plans waiting for a decision are released");
    } else {
        println!("install {name}: approve-all off; plans wait for a decision");
    }
    Ok(0)
}

pub async fn installs_update_inputs(
    api: &Api,
    name: &str,
    inputs: &[String],
    json_out: bool,
    wait: bool,
) -> Result<String> {
    let r = api
        .call::<ops::UpdateInputs>(&[name], &(), &parse_inputs(inputs)?)
        .await?;
    let id = r.workflow_id.clone();
    if !json_out {
        render::say(format!(
            "inputs of {name} changed; deploying in workflow {id}"
        ));
    } else if !wait {
        print_json(&r)?;
    }
    Ok(id)
}

/// Starts a workflow on an install: `action` is `deploy`, `reprovision`, `teardown` or
/// `drift-check`.
pub async fn installs_deploy(
    api: &Api,
    name: &str,
    action: &str,
    scope: &ferry_model::DeployScope,
    json_out: bool,
    wait: bool,
) -> Result<String> {
    let scoped = Some(scope.clone());
    let r = match action {
        "teardown" => api.run::<ops::TeardownInstall>(&[name]).await?,
        "reprovision" => api.run::<ops::ReprovisionInstall>(&[name]).await?,
        "drift-check" => api.call::<ops::DriftCheck>(&[name], &(), &scoped).await?,
        _ => {
            api.call::<ops::DeployInstall>(&[name], &(), &scoped)
                .await?
        }
    };
    let id = r.workflow_id.clone();
    if !json_out {
        render::say(format!("{action} of {name} in workflow {id}"));
    } else if !wait {
        print_json(&r)?;
    }
    Ok(id)
}

/// Prints a workflow; exit code 1 when it failed or was cancelled (scripts can test it).
pub async fn workflows_get(api: &Api, id: &str, json_out: bool) -> Result<i32> {
    let w = api.run::<ops::GetWorkflow>(&[id]).await?;
    if json_out {
        print_json(&w)?;
    } else {
        println!("{}", render::workflow(&w));
    }
    // It read the workflow: 0, however the workflow ended (`workflows wait` is the command whose
    // exit says how it ended).
    Ok(0)
}

pub async fn workflows_cancel(api: &Api, id: &str, wait: bool, json_out: bool) -> Result<i32> {
    let mut w = api.run::<ops::CancelWorkflow>(&[id]).await?;
    if wait && !w.status.is_terminal() {
        if !render::quiet() {
            eprintln!("cancelling workflow {id}: waiting for its jobs to stop");
        }
        w = crate::watch::until::<ops::GetWorkflow>(api, EventKind::Workflow, id, |w| {
            w.status.is_terminal()
        })
        .await?;
    }
    if json_out {
        print_json(&w)?;
    } else {
        println!("{}", render::workflow(&w));
    }
    Ok(0)
}

pub async fn workflows_decide(
    api: &Api,
    id: &str,
    body: ferry_model::api::Decision,
    approved: bool,
    json_out: bool,
) -> Result<i32> {
    let all = body.all;
    let decided = match approved {
        true => api.call::<ops::ApproveWorkflow>(&[id], &(), &body).await?,
        false => api.call::<ops::DenyWorkflow>(&[id], &(), &body).await?,
    };
    if json_out {
        print_json(&decided)?;
    } else {
        if all && approved {
            println!(
                "the later plans of workflow {id} are approved as they come ({} waiting now)",
                decided.len()
            );
        }
        for a in &decided {
            println!(
                "{} {}: plan of {} (step {}, {})",
                if approved { "approved" } else { "denied" },
                a.id,
                a.component,
                a.step,
                a.plan_summary
            );
        }
    }
    Ok(0)
}

/// `retry` or `skip` one step of a workflow.
pub async fn workflows_step_response(
    api: &Api,
    id: &str,
    action: &str,
    step: &str,
    json_out: bool,
) -> Result<()> {
    let body = ferry_model::api::StepRef {
        step: step.to_string(),
    };
    let as_it_was = api.find::<ops::GetWorkflow>(&[id]).await?;
    let w = match action {
        "retry" => api.call::<ops::RetryWorkflow>(&[id], &(), &body).await?,
        _ => api.call::<ops::SkipWorkflow>(&[id], &(), &body).await?,
    };
    // The scheduler changes it asynchronously: wait until it has, so that a following wait (or
    // get) sees the change, not the workflow as it was.
    let before = w.updated_at.clone();
    let changed = crate::watch::until::<ops::GetWorkflow>(api, EventKind::Workflow, id, |w| {
        w.updated_at != before
    });
    let w = tokio::time::timeout(std::time::Duration::from_secs(30), changed)
        .await
        .unwrap_or(Ok(w))?;
    if json_out {
        print_json(&w)?;
    } else {
        let done = if action == "retry" {
            "retrying"
        } else {
            "skipped"
        };
        println!("{done} step {step} of workflow {id}");
    }
    if action == "skip"
        && let Some(wf) = as_it_was
    {
        warn_dependents(api, &wf, step).await;
    }
    Ok(())
}

/// After a skip: which components still to run depend on the skipped one, and what they will
/// read of it (what it deployed before, or nothing: then a template reading its outputs fails).
async fn warn_dependents(api: &Api, wf: &ferry_model::Workflow, step: &str) {
    let Some(component) = wf
        .step_named(step)
        .and_then(|i| wf.step(i))
        .map(|s| s.component.clone())
    else {
        return;
    };
    let dependents = wf.dependents_of(&component);
    if dependents.is_empty() {
        return;
    }
    let install = api
        .find::<ops::GetInstall>(&[&wf.install])
        .await
        .ok()
        .flatten();
    let deployed = install.as_ref().is_some_and(|i| i.has_deployed(&component));
    let what = if deployed {
        format!("run with what {component} deployed before")
    } else {
        format!(
            "{component} has never deployed on {}: any that reads its outputs will fail",
            wf.install
        )
    };
    eprintln!(
        "warning: {} depend{} on {component}: {what}",
        dependents.join(", "),
        if dependents.len() == 1 { "s" } else { "" }
    );
}

pub async fn jobs_cancel(api: &Api, id: &str, json_out: bool) -> Result<i32> {
    let mut j = api.run::<ops::CancelJob>(&[id]).await?;
    if !render::quiet() {
        eprintln!("cancelling job {id}");
    }
    if !j.status.is_terminal() {
        j = crate::watch::until::<ops::GetJob>(api, EventKind::Job, id, |j| j.status.is_terminal())
            .await?;
    }
    if json_out {
        print_json(&j)?;
    } else {
        println!("{}", render::job(&j));
    }
    Ok(0)
}

pub async fn jobs_get(api: &Api, id: &str, timing: bool, json_out: bool) -> Result<i32> {
    let j = api.run::<ops::GetJob>(&[id]).await?;
    if json_out {
        print_json(&j)?;
    } else {
        println!("{}", render::job(&j));
        if timing {
            println!("{}", render::job_timing(&j));
        }
    }
    Ok(0)
}
