//! `ferry actions`: an install's actions, running one, and the runs with their steps' outputs;
//! `ferry runbooks run`; `ferry break-glass grant|revoke`.

use anyhow::Result;
use ferry_model::api::{
    ActionInfo, ActionRunReport, ActionStepReport, GrantBreakGlass, InstallAction, RunAction,
    WorkflowFilter,
};
use ferry_model::ops;

use crate::args::{ActionsCmd, BreakGlassCmd, RunbooksCmd};
use crate::commands::{parse_inputs, print_json, then_wait};
use crate::render::{self, MAIN, Output};
use ferry_client::Client as Api;

pub async fn run(api: &Api, cmd: ActionsCmd) -> Result<i32> {
    match cmd {
        ActionsCmd::List { install, out } => list(api, install.as_deref(), out.format()).await,
        ActionsCmd::Run {
            install,
            action,
            inputs,
            wait,
            json,
        } => {
            let body = Some(RunAction {
                inputs: parse_inputs(&inputs)?,
            });
            let started = api
                .call::<ops::RunActionOp>(&[&install, &action], &(), &body)
                .await?;
            let id = started.workflow_id.clone();
            match (json, wait) {
                (true, true) => {}
                (true, false) => print_json(&started)?,
                (false, _) => println!("action {action} started on {install}: run {id}"),
            }
            if !json && !wait {
                println!("follow it with: ferry workflows wait {id}");
            }
            then_wait(api, id, wait, json).await
        }
        ActionsCmd::Runs {
            install,
            action,
            limit,
            json,
        } => runs(api, &install, action.as_deref(), limit, json).await,
    }
}

pub async fn runbooks(api: &Api, cmd: RunbooksCmd) -> Result<i32> {
    let RunbooksCmd::Run {
        install,
        runbook,
        wait,
        json,
    } = cmd;
    let started = api.run::<ops::RunRunbook>(&[&install, &runbook]).await?;
    let id = started.workflow_id.clone();
    match (json, wait) {
        (true, true) => {}
        (true, false) => print_json(&started)?,
        (false, _) => println!("runbook {runbook} started on {install}: workflow {id}"),
    }
    then_wait(api, id, wait, json).await
}

pub async fn break_glass(api: &Api, cmd: BreakGlassCmd) -> Result<i32> {
    match cmd {
        BreakGlassCmd::Grant {
            install,
            role,
            duration,
        } => {
            let body = GrantBreakGlass {
                role: role.clone(),
                for_secs: duration.as_secs(),
            };
            let i = api
                .call::<ops::GrantBreakGlassOp>(&[&install], &(), &body)
                .await?;
            let until = i
                .break_glass
                .get(&role)
                .map(|g| ferry_model::format_ms(g.until_ms))
                .unwrap_or_default();
            println!("granted {role} on {install} until {until}");
        }
        BreakGlassCmd::Revoke { install, role } => {
            api.run::<ops::RevokeBreakGlass>(&[&install, &role]).await?;
            println!("revoked {role} on {install}");
        }
    }
    Ok(0)
}

async fn list(api: &Api, install: Option<&str>, out: Output) -> Result<i32> {
    let installs: Vec<String> = match install {
        Some(i) => vec![i.to_string()],
        None => {
            let all = api
                .call::<ops::ListInstalls>(&[], &Default::default(), &())
                .await?;
            all.into_iter().map(|i| i.name).collect()
        }
    };
    let mut all: Vec<(String, ActionInfo)> = Vec::new();
    for i in installs {
        let actions = api.run::<ops::ListActions>(&[&i]).await?;
        all.extend(actions.into_iter().map(|a| (i.clone(), a)));
    }
    if out == Output::Json {
        let v: Vec<InstallAction> = all
            .iter()
            .map(|(i, a)| InstallAction {
                install: i.clone(),
                action: a.clone(),
            })
            .collect();
        print_json(&v)?;
        return Ok(0);
    }
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|(i, a)| {
            let last = a.last_run.as_ref().map_or("-".to_string(), |r| {
                format!("{} ({})", r.status, r.workflow)
            });
            vec![
                i.clone(),
                a.name.clone(),
                a.triggers.join(", "),
                a.steps.join(", "),
                a.next_run.clone().unwrap_or_else(|| "-".into()),
                last,
            ]
        })
        .collect();
    let columns = [
        ("INSTALL", MAIN),
        ("ACTION", MAIN),
        ("TRIGGERS", MAIN),
        ("STEPS", MAIN),
        ("NEXT RUN", MAIN),
        ("LAST RUN", MAIN),
    ];
    println!("{}", render::listing(out, &columns, &rows));
    Ok(0)
}

async fn runs(
    api: &Api,
    install: &str,
    action: Option<&str>,
    limit: usize,
    json_out: bool,
) -> Result<i32> {
    let filter = WorkflowFilter {
        install: Some(install.to_string()),
        kind: Some("action".into()),
        action: action.map(String::from),
    };
    let mut all = api.call::<ops::ListWorkflows>(&[], &filter, &()).await?;
    all.truncate(limit);
    let mut out = Vec::new();
    for wf in &all {
        let mut steps = Vec::new();
        for s in &wf.steps {
            let outputs = match &s.job_id {
                Some(j) => api
                    .find::<ops::GetJob>(&[j])
                    .await?
                    .map(|j| j.outputs)
                    .unwrap_or_default(),
                None => Default::default(),
            };
            steps.push((s, outputs));
        }
        out.push((wf, steps));
    }
    if json_out {
        let v: Vec<ActionRunReport> = out.iter().map(|(wf, steps)| report(wf, steps)).collect();
        print_json(&v)?;
        return Ok(0);
    }
    if out.is_empty() {
        println!("no runs");
    }
    for (wf, steps) in out {
        let (name, trigger) = wf
            .run
            .as_ref()
            .map_or(("?", "?"), |r| (r.action.as_str(), r.trigger.as_str()));
        println!(
            "{}  {name}  {trigger}  {}  {}",
            wf.id,
            render::status_word(wf.status),
            wf.created_at
        );
        for (s, outputs) in steps {
            let shown = if outputs.is_empty() {
                String::new()
            } else {
                format!("  outputs: {}", serde_json::Value::Object(outputs))
            };
            println!(
                "  {} {} {}{shown}",
                render::step_mark(s.status),
                s.subject(),
                s.status
            );
        }
    }
    Ok(0)
}

/// A run as `actions runs --json` prints it.
fn report(
    wf: &ferry_model::Workflow,
    steps: &[(&ferry_model::Step, ferry_model::Outputs)],
) -> ActionRunReport {
    ActionRunReport {
        run: wf.id.clone(),
        action: wf.run.as_ref().map(|r| r.action.clone()),
        trigger: wf.run.as_ref().map(|r| r.trigger.clone()),
        status: wf.status,
        created_at: wf.created_at.clone(),
        steps: steps
            .iter()
            .map(|(s, o)| ActionStepReport {
                step: s.action.as_ref().map(|a| a.step.clone()),
                status: s.status,
                job: s.job_id.clone(),
                message: s.message.clone(),
                outputs: o.clone(),
            })
            .collect(),
    }
}
