//! The dashboard's pages, rendered from the API's own types with maud (every value escaped).
//! Elements the script updates live carry `data-*` attributes and ids (see `dashboard.js`).

use ferry_model::{self as m, Approval, Install, Job, LogEntry, Release, Workflow};
use maud::{DOCTYPE, Markup, html};
use serde::Serialize;

use super::Session;

/// A value's name as the API spells it (its serde form: `in_progress`, `torn_down`).
pub(super) fn name<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".into(),
    }
}

pub(super) fn layout(title: &str, session: Option<&Session>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Ferry" }
                link rel="stylesheet" href="/ui/static/dashboard.css";
                script src="/ui/static/dashboard.js" defer {}
            }
            body {
                header {
                    a.brand href="/ui/installs" { "Ferry" }
                    @if let Some(s) = session {
                        nav {
                            a href="/ui/installs" { "Installs" }
                            a href="/ui/approvals" { "Approvals" }
                            // A release spans the fleet: a token bound to installs sees none.
                            @if s.state.scope.whole_org() { a href="/ui/releases" { "Releases" } }
                            @if s.may::<m::ops::ListAudit>() { a href="/ui/audit" { "Audit" } }
                        }
                        span.who { (s.caller.name) " · " (s.caller.role.name()) " · " (s.caller.org) }
                        form.inline method="post" action="/ui/logout" {
                            input type="hidden" name="csrf" value=(s.csrf);
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

pub fn login(csrf: &str, problem: Option<&str>) -> Markup {
    layout(
        "Sign in",
        None,
        html! {
            h1 { "Sign in" }
            p { "Paste an API token (" code { "ferry-server init" } " printed the first; "
                code { "ferry tokens create" } " makes more)." }
            @if let Some(p) = problem { p.problem role="alert" { (p) } }
            form method="post" action="/ui/login" {
                input type="hidden" name="csrf" value=(csrf);
                label for="token" { "API token" }
                input #token type="password" name="token" autocomplete="off" required;
                button #signin type="submit" { "Sign in" }
            }
        },
    )
}

pub fn error(message: &str) -> Markup {
    layout(
        "Error",
        None,
        html! {
            h1 { "Something went wrong" }
            p.problem role="alert" { (message) }
            p { a href="/ui/installs" { "Back to the installs" } }
        },
    )
}

fn health_of(install: &str, runners: &[m::api::RunnerInfo]) -> String {
    let records: Vec<m::RunnerRecord> = runners.iter().map(|r| r.runner.clone()).collect();
    m::health_name(m::install_health(install, &records, m::Timestamp::now())).to_string()
}

/// A badge when a live runner of the install runs its jobs unsandboxed, or refuses them.
fn sandbox_of(
    install: &str,
    runners: &[m::api::RunnerInfo],
) -> Option<(&'static str, &'static str)> {
    let records: Vec<m::RunnerRecord> = runners.iter().map(|r| r.runner.clone()).collect();
    m::install_sandbox_warning(install, &records, m::Timestamp::now()).map(|s| match s {
        m::RunnerSandbox::Unavailable => ("unavailable", s.name()),
        _ => ("unsandboxed", s.name()),
    })
}

pub fn installs(
    s: &Session,
    list: &[Install],
    runners: &[m::api::RunnerInfo],
    versions: &std::collections::BTreeMap<String, u32>,
    waiting: &std::collections::BTreeSet<String>,
) -> Markup {
    layout(
        "Installs",
        Some(s),
        html! {
            h1 { "Installs" }
            table #installs {
                thead { tr { th { "Install" } th { "App" } th { "Status" } th { "Version" } th { "Runner" } th { "Drift" } th { "Labels" } } }
                tbody {
                    @for i in list {
                        @let drifted = i.drifted();
                        tr data-install=(i.name) {
                            td { a href={ "/ui/installs/" (i.name) } { (i.name) } }
                            td { (i.app) }
                            td { span class={ "badge " (name(&i.status)) } { (name(&i.status)) }
                                @if waiting.contains(&i.name) { " " a.badge.waiting href="/ui/approvals" { "plan waiting" } } }
                            td title=(i.app_config_id) {
                                @match versions.get(&i.app_config_id) { Some(v) => { "v" (v) }, None => span.mono { (i.app_config_id) } }
                            }
                            td { @let h = health_of(&i.name, runners); span class={ "badge " (h) } { (h) }
                                @if let Some((class, text)) = sandbox_of(&i.name, runners) { " " span class={ "badge " (class) } title="how the install's runner runs jobs (docs/security.md)" { (text) } } }
                            td { @if drifted.is_empty() { "—" } @else { span.badge.failed { (drifted.join(", ")) } } }
                            td.mono { @for (k, v) in &i.labels { (k) "=" (v) " " } }
                        }
                    }
                    @if list.is_empty() { tr { td colspan="7" { "No installs yet: " code { "ferry installs create" } } } }
                }
            }
        },
    )
}

pub fn install(
    s: &Session,
    i: &Install,
    readme: &m::api::Readme,
    history: &[m::api::HistoryEntry],
    workflows: &[Workflow],
    portal: Markup,
) -> Markup {
    let components = std::iter::once((m::SANDBOX, &i.sandbox))
        .chain(i.components.iter().map(|(k, v)| (k.as_str(), v)));
    layout(
        &i.name,
        Some(s),
        html! {
            h1 { "Install " (i.name) }
            p { "App " strong { (i.app) } " · status " span class={ "badge " (name(&i.status)) } { (name(&i.status)) }
                " · config " span.mono { (i.app_config_id) } }
            @if !i.labels.is_empty() {
                p #labels { "Labels " @for (k, v) in &i.labels { span.badge.mono { (k) "=" (v) } " " } }
            }
            (drift(components.clone()))
            @if !i.inputs.is_empty() {
                h2 { "Inputs" }
                table #inputs {
                    tbody {
                        @for (k, v) in &i.inputs { tr { td.mono { (k) " = " (v) } } }
                    }
                }
            }
            (install_stack(i))
            (portal)
            @if !readme.markdown.is_empty() {
                h2 { "Readme" }
                @if let Some(w) = &readme.warning {
                    p.warning { "Shown as written: it did not render (" (w) ")." }
                }
                // Markdown as HTML; the vendor's own HTML in it is shown as text (`markdown.rs`).
                div #readme .markdown { (maud::PreEscaped(super::markdown::to_html(&readme.markdown))) }
            }
            h2 { "Components" }
            table #components {
                thead { tr { th { "Component" } th { "Status" } th { "Outputs" } th { "Updated" } } }
                tbody {
                    @for (c, state) in components {
                        tr {
                            td { (c) }
                            td { span class={ "badge " (name(&state.status)) } { (name(&state.status)) } }
                            td.mono {
                                @for (k, v) in &state.outputs {
                                    div { (k) " = "
                                        @match v { serde_json::Value::String(t) => (t), other => (other.to_string()) } }
                                }
                            }
                            td { (state.updated_at.as_deref().unwrap_or("—")) }
                        }
                    }
                }
            }
            (super::views::history(s, i, history))
            h2 { "Workflows" }
            table #workflows {
                thead { tr { th { "Workflow" } th { "Kind" } th { "Status" } th { "Created" } } }
                tbody {
                    @for w in workflows {
                        tr {
                            td { a.mono href={ "/ui/workflows/" (w.id) } { (w.id) } }
                            td { (w.kind.label()) }
                            td { span class={ "badge " (w.status) } { (w.status) } }
                            td { (w.created_at) }
                        }
                    }
                }
            }
        },
    )
}

/// The install's drifted components, if any, each linked to the check that found it: that
/// check's plan is the drift.
fn drift<'a>(components: impl Iterator<Item = (&'a str, &'a m::ComponentState)>) -> Markup {
    let drifts: Vec<_> = components
        .filter_map(|(k, c)| Some((k, c.drift.as_ref().filter(|d| d.drifted)?)))
        .collect();
    html! {
        @if !drifts.is_empty() {
            p #drift.problem { "Drifted: "
                @for (n, (name, d)) in drifts.iter().enumerate() {
                    @if n > 0 { ", " }
                    a href={ "/ui/workflows/" (d.workflow) } title=(d.summary) { (name) }
                } }
        }
    }
}

/// The install stack: the link that launches it in the customer's console (once published),
/// and its status, outputs and secrets as the install's runner last read them.
fn install_stack(i: &Install) -> Markup {
    html! {
        @if i.install_stack.is_some() || i.stack_template.is_some() {
            h2 { "Install stack" }
        }
        @if let Some(t) = &i.stack_template {
            p #stack-template { a href=(t.quick_link_url) { "Launch in the AWS console" }
                " · template " span.mono { (t.template_url) } " · published " (t.published_at) }
        }
        @if let Some(st) = &i.install_stack {
            p { "Status " span #stack-status .mono { (st.status) } " · read by the runner at " (st.reported_at) }
            table #stack-outputs {
                tbody {
                    @for (k, v) in &st.outputs {
                        tr { td.mono { (k) " = "
                            @match v { serde_json::Value::String(t) => (t), other => (other.to_string()) } } }
                    }
                    @for (k, secret) in &st.secrets {
                        tr { td.mono { "secret " (k) ": " (if secret.length == 0 { "empty" } else { "set" }) } }
                    }
                }
            }
        }
    }
}

/// What a waiting plan changes, as the page shows it.
pub enum Plan {
    /// A structured plan's changes, one line each (`ferry_model::plan_changes`).
    Changes(String),
    /// The end of the plan job's log (a script's plan).
    Log(Vec<String>),
}

/// A workflow's steps (updated live by the script), and each plan waiting for a decision with
/// its changes and the buttons to decide: disabled for a token that may not.
pub fn workflow(s: &Session, wf: &Workflow, waiting: &[(Approval, Plan)], since: u64) -> Markup {
    let waiting_steps: Vec<String> = waiting.iter().map(|(a, _)| a.step.to_string()).collect();
    layout(
        &format!("Workflow {}", wf.id),
        Some(s),
        html! {
            h1 { "Workflow " span.mono { (wf.id) } }
            p { (wf.kind.label()) " of " a href={ "/ui/installs/" (wf.install) } { (wf.install) }
                " · " span #wf-status class={ "badge " (wf.status) } { (wf.status) } }
            @if let Some(e) = &wf.error { p.problem { (e) } }
            @for (a, plan) in waiting {
                section.approval data-step=(a.step) {
                    h2 { "Plan of " (a.component) " waits for a decision" }
                    p { (a.plan_summary) }
                    (super::views::plan(a, plan))
                    (super::views::decision(s, &wf.id, a, &format!("/ui/workflows/{}", wf.id)))
                }
            }
            table #steps data-workflow=(wf.id) data-waiting=(waiting_steps.join(",")) data-since=(since) data-ended=(wf.status.is_terminal()) {
                thead { tr { th { "#" } th { "Step" } th { "Kind" } th { "Status" } th { "Message" } th { "By" } th { "Started" } th { "Took" } th { "Job" } th {} } }
                tbody {
                    @for st in &wf.steps {
                        tr data-step=(st.index) {
                            td { (st.index) }
                            td { (st.subject()) }
                            td { (st.kind.label()) }
                            td.status { span class={ "badge " (st.status) } { (st.status) } }
                            td.message { (st.message.as_deref().unwrap_or("")) }
                            td.by { (st.actor.as_deref().unwrap_or("")) }
                            td.started { (st.started_at.as_deref().unwrap_or("")) }
                            td.took { (super::views::took(st)) }
                            td.job { @if let Some(j) = &st.job_id { a.mono href={ "/ui/jobs/" (j) } { "log" } } }
                            td.respond { (super::views::respond(s, wf, st)) }
                        }
                    }
                }
            }
        },
    )
}

/// A job's log as stored now; the script follows it from there to the job's end.
pub fn job(s: &Session, j: &Job, lines: &[LogEntry]) -> Markup {
    layout(
        &format!("Job {}", j.id),
        Some(s),
        html! {
            h1 { "Job " span.mono { (j.id) } }
            p { (name(&j.kind)) " of " (j.component) " on "
                a href={ "/ui/installs/" (j.install) } { (j.install) } " in "
                a.mono href={ "/ui/workflows/" (j.workflow_id) } { (j.workflow_id) }
                " · " span #job-status class={ "badge " (j.status.name()) } { (j.status.name()) } }
            pre #log data-job=(j.id) data-lines=(lines.len()) data-ended=(j.status.is_terminal()) {
                @for l in lines {
                    span class={ "line " (l.stream) } { (m::format_ms(l.at_ms)) "  " (l.text) "\n" }
                }
            }
        },
    )
}

pub fn releases(s: &Session, list: &[Release]) -> Markup {
    layout(
        "Releases",
        Some(s),
        html! {
            h1 { "Releases" }
            table #releases {
                thead { tr { th { "Release" } th { "App" } th { "Config" } th { "Status" } th { "Waves passed" } th { "Created" } } }
                tbody {
                    @for r in list {
                        tr {
                            td.mono { a href={ "/ui/releases/" (r.id) } { (r.id) } }
                            td { (r.app) }
                            td.mono { (r.config_id) }
                            td { span class={ "badge " (name(&r.status)) } { (name(&r.status)) } }
                            td { (r.waves.iter().filter(|w| w.passed_ms.is_some()).count()) "/" (r.waves.len()) }
                            td { (r.created_at) }
                        }
                    }
                    @if list.is_empty() { tr { td colspan="6" { "No releases yet: " code { "ferry releases create" } } } }
                }
            }
        },
    )
}
