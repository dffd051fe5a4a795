//! Workflow routes: list, get (queued steps say what they wait for), cancel, and the responses to
//! a workflow's steps: approve, deny, retry, skip. Each response checks the step's state first, so a
//! wrong one is a 409 that changes nothing; the scheduler and the approval service make the change.

use axum::Json;
use axum::http::StatusCode;
use ferry_model::api::{ApprovalFilter, WorkflowFilter};
use ferry_model::ops::Operation as _;
use ferry_model::{self as m, Install, Workflow};
use ferry_protocol::Control;
use ferry_store::StoreError;

use crate::auth::Ctx;
use crate::handlers::audit;
use crate::ids::Name;
use crate::{ApiError, ApiState};

#[utoipa::path(
    get,
    path = m::ops::GetWorkflow::PATH,
    security(("token" = [m::ops::GetWorkflow::ROLE_NAME])),
    tag = "workflows",
    params(("id" = String, Path, description = "The workflow's id")),
    responses((status = 200, description = "The workflow and its steps", body = m::Workflow), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn get_workflow(Ctx(s): Ctx, Name(id): Name) -> Result<Json<Workflow>, ApiError> {
    let mut wf = workflow(&s, &id).await?;
    explain_queued_steps(&s, &mut wf).await?;
    Ok(Json(wf))
}

/// The workflow named in a request's path, or a 404.
async fn workflow(s: &ApiState, id: &str) -> Result<Workflow, ApiError> {
    Ok(s.store
        .repo::<Workflow>()
        .get(&s.org, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("workflow `{id}` not found")))?
        .value)
}

/// Workflows, newest first; `?install=NAME` keeps one install's, `?kind=K` one kind's,
/// `?action=A` one action's runs.
#[utoipa::path(
    get,
    path = m::ops::ListWorkflows::PATH,
    security(("token" = [m::ops::ListWorkflows::ROLE_NAME])),
    tag = "workflows",
    params(WorkflowFilter),
    responses((status = 200, description = "Workflows, newest first", body = Vec<m::Workflow>), crate::error::Invalid, crate::error::Refusals)
)]
pub async fn list_workflows(
    Ctx(s): Ctx,
    axum::extract::Query(f): axum::extract::Query<WorkflowFilter>,
) -> Result<Json<Vec<Workflow>>, ApiError> {
    crate::ids::check_filter("install", f.install.as_deref())?;
    let reached = s.reached().await?;
    let mut all = s.store.repo::<Workflow>().list(&s.org).await?;
    all.retain(|w| reached.has(&w.install) && f.install.as_ref().is_none_or(|i| &w.install == i));
    all.retain(|w| f.kind.as_ref().is_none_or(|k| w.kind.label() == k));
    all.retain(|w| {
        f.action
            .as_ref()
            .is_none_or(|a| w.run.as_ref().is_some_and(|r| &r.action == a))
    });
    // Ids are ULIDs: their order is creation order.
    all.sort_by(|a, b| b.id.cmp(&a.id));
    Ok(Json(all))
}

/// Asks the scheduler to stop a workflow: steps not started are cancelled, running jobs are
/// stopped on their runners. 202: the workflow shows `cancelled` once its jobs have stopped.
#[utoipa::path(
    post,
    path = m::ops::CancelWorkflow::PATH,
    security(("token" = [m::ops::CancelWorkflow::ROLE_NAME])),
    tag = "workflows",
    params(("id" = String, Path, description = "The workflow's id")),
    responses((status = 202, description = "Cancelling", body = m::Workflow), crate::error::NotFound, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn cancel_workflow(
    Ctx(s): Ctx,
    Name(id): Name,
) -> Result<(StatusCode, Json<Workflow>), ApiError> {
    let w = workflow(&s, &id).await?;
    if w.status.is_terminal() {
        return Err(ApiError::Conflict(format!(
            "workflow {id} has already ended ({})",
            w.status
        )));
    }
    s.store
        .bus()
        .control(&Control::CancelRequested {
            org: s.org.clone(),
            workflow_id: id.clone(),
            actor: s.actor.clone(),
        })
        .await?;
    audit(
        &s,
        "workflow.cancel",
        &id,
        serde_json::json!({ "install": w.install }),
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(w)))
}

/// A running step whose job no runner has taken says why: no runner of its install is connected.
async fn explain_queued_steps(s: &ApiState, wf: &mut Workflow) -> Result<(), ApiError> {
    let mut known = None;
    for step in wf
        .steps
        .iter_mut()
        .filter(|s| s.status == m::StepStatus::Running)
    {
        let Some(job_id) = &step.job_id else { continue };
        let Some(job) = s.store.repo::<m::Job>().get(&s.org, job_id).await? else {
            continue;
        };
        if !job.value.status.is_unclaimed() {
            continue;
        }
        if known.is_none() {
            known = Some(s.store.repo::<m::RunnerRecord>().list(&s.org).await?);
        }
        let since = job
            .value
            .offered_at
            .as_deref()
            .unwrap_or(&job.value.created_at);
        if let Some(why) = m::waiting_for_runner(
            &wf.install,
            known.as_deref().unwrap_or_default(),
            since,
            m::Timestamp::now(),
        ) {
            step.message = Some(why);
        }
    }
    Ok(())
}

/// Approvals waiting for a decision, oldest first; `?install=NAME` keeps one install's.
#[utoipa::path(
    get,
    path = m::ops::ListApprovals::PATH,
    security(("token" = [m::ops::ListApprovals::ROLE_NAME])),
    tag = "workflows",
    params(ApprovalFilter),
    responses((status = 200, description = "Plans waiting for a decision, oldest first", body = Vec<m::Approval>), crate::error::Invalid, crate::error::Refusals)
)]
pub async fn list_approvals(
    Ctx(s): Ctx,
    axum::extract::Query(f): axum::extract::Query<ApprovalFilter>,
) -> Result<Json<Vec<m::Approval>>, ApiError> {
    crate::ids::check_filter("install", f.install.as_deref())?;
    let reached = s.reached().await?;
    let mut all = s.store.repo::<m::Approval>().list(&s.org).await?;
    all.retain(|a| {
        a.status == m::ApprovalStatus::Pending
            && reached.has(&a.install)
            && f.install.as_ref().is_none_or(|i| &a.install == i)
    });
    // Only what still waits: an approval whose step was skipped or cancelled meanwhile is not.
    let mut workflows: std::collections::HashMap<String, Option<Workflow>> = Default::default();
    let mut waiting = Vec::with_capacity(all.len());
    for a in all {
        if !workflows.contains_key(&a.workflow_id) {
            let wf = s
                .store
                .repo::<Workflow>()
                .get(&s.org, &a.workflow_id)
                .await?;
            workflows.insert(a.workflow_id.clone(), wf.map(|v| v.value));
        }
        let still = workflows[&a.workflow_id]
            .as_ref()
            .and_then(|wf| wf.step(a.step))
            .is_some_and(|st| {
                st.status == m::StepStatus::Waiting && st.approval_id.as_deref() == Some(&a.id)
            });
        if still {
            waiting.push(a);
        }
    }
    let mut all = waiting;
    all.sort_by(|a, b| a.created_at.cmp(&b.created_at));
    Ok(Json(all))
}

#[utoipa::path(
    post,
    path = m::ops::ApproveWorkflow::PATH,
    security(("token" = [m::ops::ApproveWorkflow::ROLE_NAME, m::ops::ApproveWorkflow::ALSO_NAME])),
    tag = "workflows",
    params(("id" = String, Path, description = "The workflow's id")),
    request_body = m::api::Decision,
    responses((status = 202, description = "The approvals decided", body = Vec<m::Approval>), crate::error::Invalid, crate::error::NotFound, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn approve_workflow(
    state: Ctx,
    path: Name,
    body: Json<m::api::Decision>,
) -> Result<(StatusCode, Json<Vec<m::Approval>>), ApiError> {
    decide(state, path, body, true).await
}

#[utoipa::path(
    post,
    path = m::ops::DenyWorkflow::PATH,
    security(("token" = [m::ops::DenyWorkflow::ROLE_NAME, m::ops::DenyWorkflow::ALSO_NAME])),
    tag = "workflows",
    params(("id" = String, Path, description = "The workflow's id")),
    request_body = m::api::Decision,
    responses((status = 202, description = "The approvals decided", body = Vec<m::Approval>), crate::error::Invalid, crate::error::NotFound, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn deny_workflow(
    state: Ctx,
    path: Name,
    body: Json<m::api::Decision>,
) -> Result<(StatusCode, Json<Vec<m::Approval>>), ApiError> {
    decide(state, path, body, false).await
}

/// A person's decision on the waiting approval(s) of a workflow, handed to the approval service
/// (202). A step that does not wait for a decision is a 409 that changes nothing.
async fn decide(
    Ctx(s): Ctx,
    Name(id): Name,
    Json(d): Json<m::api::Decision>,
    approved: bool,
) -> Result<(StatusCode, Json<Vec<m::Approval>>), ApiError> {
    let wf = workflow(&s, &id).await?;
    let side = deciding_side(&s, &wf, &d).await?;
    if d.all && approved {
        approve_later_plans(&s, &wf).await?;
    }
    let steps = decision_steps(&wf, &d, approved)?;
    let mut decided = Vec::new();
    for step in steps {
        let Some(approval_id) = &step.approval_id else {
            continue;
        };
        let a = s
            .store
            .repo::<m::Approval>()
            .require(&s.org, approval_id)
            .await?
            .value;
        let named = format!("{} ({})", step.index, step.component);
        if let Some(why) = a.refuses_response(side, &named) {
            return Err(ApiError::Conflict(why));
        }
        let reason = d.reason().map_err(ApiError::BadRequest)?;
        if !approved && (d.on_deny != m::OnDeny::Fail || reason.is_some()) {
            // How the denial ends the step, and why, travel on the record the scheduler reads.
            s.store
                .repo::<m::Approval>()
                .modify(&s.org, approval_id, |a| {
                    if a.status != m::ApprovalStatus::Pending {
                        return Ok::<bool, ()>(false);
                    }
                    a.on_deny = d.on_deny;
                    a.reason = reason.clone();
                    Ok(true)
                })
                .await?
                .ok();
        }
        s.store
            .bus()
            .control(&Control::ApprovalResponse {
                org: s.org.clone(),
                approval_id: approval_id.clone(),
                approved,
                actor: s.actor.clone(),
                by_customer: side == m::Side::Customer,
            })
            .await?;
        decided.push(a);
    }
    Ok((StatusCode::ACCEPTED, Json(decided)))
}

/// The side the caller decides `wf`'s plans for, if its install lets that side decide them
/// (`approve --all` is the vendor's: approve-all never approves for the customer).
async fn deciding_side(
    s: &ApiState,
    wf: &Workflow,
    d: &m::api::Decision,
) -> Result<m::Side, ApiError> {
    let side = m::Side::of(s.role);
    let install = s
        .store
        .repo::<m::Install>()
        .require(&s.org, &wf.install)
        .await?;
    if let Some(why) = install.value.approvals_by.refuses(side) {
        return Err(ApiError::Forbidden(why));
    }
    if d.all && side == m::Side::Customer {
        return Err(ApiError::BadRequest(
            "`approve --all` approves for the vendor: approve each plan for the customer".into(),
        ));
    }
    Ok(side)
}

/// `approve --all`: the workflow's plans still to come are approved as they come (by the
/// approval service, as under approve-all); refused for a workflow that has ended.
async fn approve_later_plans(s: &ApiState, wf: &Workflow) -> Result<(), ApiError> {
    if wf.status.is_terminal() {
        return Err(ApiError::Conflict(format!(
            "workflow {} has already ended ({})",
            wf.id, wf.status
        )));
    }
    if wf.approve_all {
        return Ok(());
    }
    s.store
        .repo::<Workflow>()
        .modify(&s.org, &wf.id, |w| {
            let changed = !w.approve_all;
            w.approve_all = true;
            Ok::<bool, ()>(changed)
        })
        .await?
        .ok();
    audit(
        s,
        "workflow.approve_all",
        &wf.id,
        serde_json::json!({ "install": wf.install }),
    )
    .await
}

/// Runs an ended workflow again from a failed or cancelled step (202), if its install has not
/// moved on to another workflow: the install is reserved for it again, then the scheduler retries.
#[utoipa::path(
    post,
    path = m::ops::RetryWorkflow::PATH,
    security(("token" = [m::ops::RetryWorkflow::ROLE_NAME])),
    tag = "workflows",
    params(("id" = String, Path, description = "The workflow's id")),
    request_body = m::api::StepRef,
    responses((status = 202, description = "The step runs again", body = m::Workflow), crate::error::Invalid, crate::error::NotFound, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn retry_workflow(
    Ctx(s): Ctx,
    Name(id): Name,
    Json(r): Json<m::api::StepRef>,
) -> Result<(StatusCode, Json<Workflow>), ApiError> {
    let wf = workflow(&s, &id).await?;
    let step = wf
        .steps
        .iter()
        .filter(|st| matches!(st.status, m::StepStatus::Failed | m::StepStatus::Cancelled))
        .find(|st| st.index.to_string() == r.step || st.component == r.step)
        .ok_or_else(|| {
            ApiError::Conflict(format!(
                "workflow {id} has no failed or cancelled step `{}`",
                r.step
            ))
        })?;
    // The model refuses the same things; checked here too, so a wrong request is a 409.
    if !matches!(
        wf.status,
        m::WorkflowStatus::Failed | m::WorkflowStatus::Cancelled
    ) {
        return Err(ApiError::Conflict(format!(
            "workflow {id} is still {}: only an ended workflow can be retried",
            wf.status
        )));
    }
    reserve_again(&s, &wf).await?;
    s.store
        .bus()
        .control(&Control::RetryRequested {
            org: s.org.clone(),
            workflow_id: id.clone(),
            step: step.index,
            attempt: step.attempt,
            actor: s.actor.clone(),
        })
        .await?;
    audit(
        &s,
        "workflow.retry",
        &id,
        serde_json::json!({ "step": step.index }),
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(wf)))
}

/// Skips a step (202): one that has not run, a waiting approval, or a failed or cancelled step of
/// an ended workflow, which then runs on (its install reserved for it again). The step state
/// machine decides what may be skipped: a step it refuses is a 409 that changes nothing.
#[utoipa::path(
    post,
    path = m::ops::SkipWorkflow::PATH,
    security(("token" = [m::ops::SkipWorkflow::ROLE_NAME])),
    tag = "workflows",
    params(("id" = String, Path, description = "The workflow's id")),
    request_body = m::api::StepRef,
    responses((status = 202, description = "The step is skipped", body = m::Workflow), crate::error::Invalid, crate::error::NotFound, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn skip_workflow(
    Ctx(s): Ctx,
    Name(id): Name,
    Json(r): Json<m::api::StepRef>,
) -> Result<(StatusCode, Json<Workflow>), ApiError> {
    let wf = workflow(&s, &id).await?;
    let index = wf.step_named(&r.step).ok_or_else(|| {
        ApiError::NotFound(format!(
            "workflow {id} has no step `{}` left to skip",
            r.step
        ))
    })?;
    wf.clone()
        .skip(index, &s.actor, m::Timestamp::now())
        .map_err(|e| ApiError::Conflict(format!("step {index} cannot be skipped: {e}")))?;
    if wf.status.is_terminal() {
        reserve_again(&s, &wf).await?;
    }
    s.store
        .bus()
        .control(&Control::SkipRequested {
            org: s.org.clone(),
            workflow_id: id.clone(),
            step: index,
            actor: s.actor.clone(),
        })
        .await?;
    audit(
        &s,
        "workflow.skip",
        &id,
        serde_json::json!({ "step": index }),
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(wf)))
}

/// Reserves an ended workflow's install for it again (it runs on after a retry or a skip), unless
/// the install has moved on to another workflow; marks the workflow open for the reconcile pass.
async fn reserve_again(s: &ApiState, wf: &Workflow) -> Result<(), ApiError> {
    let id = &wf.id;
    let installs = s.store.repo::<Install>();
    let cur = installs.require(&s.org, &wf.install).await?;
    if cur.value.last_workflow.as_deref() != Some(id.as_str()) {
        return Err(ApiError::Conflict(format!(
            "install `{}` has moved on to workflow {}",
            wf.install,
            cur.value.last_workflow.as_deref().unwrap_or("(none)")
        )));
    }
    let mut install = cur.value;
    if let Some(status) = wf.kind.install_status_while_running() {
        install.status = status;
    }
    install.updated_at = m::now();
    match installs.update(&install, cur.revision).await {
        Ok(_) => {}
        Err(StoreError::Conflict { .. }) => {
            return Err(ApiError::Conflict(format!(
                "install `{}` changed meanwhile; try again",
                wf.install
            )));
        }
        Err(e) => return Err(e.into()),
    }
    s.store
        .repo::<m::OpenWorkflow>()
        .create_if_absent(&wf.open_mark())
        .await?;
    Ok(())
}

/// The approve steps a decision names: `--all` (approve only), or one step by index or component.
fn decision_steps<'a>(
    wf: &'a Workflow,
    d: &m::api::Decision,
    approved: bool,
) -> Result<Vec<&'a m::Step>, ApiError> {
    let waiting =
        |s: &&m::Step| s.kind == m::StepKind::Approve && s.status == m::StepStatus::Waiting;
    if d.all {
        if !approved {
            return Err(ApiError::BadRequest(
                "deny one step at a time: --step".into(),
            ));
        }
        // None waiting now is fine: the later ones are approved as they come.
        return Ok(wf.steps.iter().filter(waiting).collect());
    }
    let Some(name) = &d.step else {
        return Err(ApiError::BadRequest("name a step (--step) or --all".into()));
    };
    let step = wf
        .steps
        .iter()
        .find(|s| {
            s.kind == m::StepKind::Approve && (s.index.to_string() == *name || s.component == *name)
        })
        .or_else(|| wf.steps.iter().find(|s| s.index.to_string() == *name))
        .ok_or_else(|| ApiError::NotFound(format!("workflow {} has no step `{name}`", wf.id)))?;
    if !waiting(&step) {
        return Err(ApiError::Conflict(format!(
            "step {} ({} {}) does not wait for a decision: it is {}",
            step.index,
            step.kind.label(),
            step.component,
            step.status
        )));
    }
    Ok(vec![step])
}
