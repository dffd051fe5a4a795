//! The listings: apps, installs, workflows, approvals and runners, each as a table (the main
//! columns, or every one with `--output wide`) or as the API's JSON.

use anyhow::Result;
use ferry_client::Client as Api;
use ferry_model::api::{ApprovalFilter, RunnerFilter, WorkflowFilter};
use ferry_model::{InstallQuery, ops};

use crate::commands::print_json;
use crate::render::{self, MAIN, Output, WIDE};

pub async fn apps_list(api: &Api, out: Output) -> Result<i32> {
    let apps = api.run::<ops::ListApps>(&[]).await?;
    if out == Output::Json {
        print_json(&apps)?;
    } else {
        let rows: Vec<Vec<String>> = apps
            .iter()
            .map(|a| {
                vec![
                    a.name.clone(),
                    a.config_count.to_string(),
                    a.latest_config.clone().unwrap_or_default(),
                    a.updated_at.clone(),
                    a.created_at.clone(),
                ]
            })
            .collect();
        let columns = [
            ("APP", MAIN),
            ("CONFIGS", MAIN),
            ("LATEST CONFIG", MAIN),
            ("UPDATED", MAIN),
            ("CREATED", WIDE),
        ];
        println!("{}", render::listing(out, &columns, &rows));
    }
    Ok(0)
}

pub async fn runners_list(api: &Api, install: Option<&str>, out: Output) -> Result<i32> {
    let filter = RunnerFilter {
        install: install.map(String::from),
    };
    let runners = api.call::<ops::ListRunners>(&[], &filter, &()).await?;
    if out == Output::Json {
        print_json(&runners)?;
    } else {
        let rows: Vec<Vec<String>> = runners
            .iter()
            .map(|r| {
                vec![
                    r.runner.install.clone(),
                    r.runner.id.clone(),
                    render::status_word(r.health),
                    r.runner
                        .sandbox
                        .map_or("unknown", ferry_model::RunnerSandbox::name)
                        .to_string(),
                    r.runner.running_jobs.to_string(),
                    r.runner.version.clone(),
                    r.last_seen.clone(),
                    ferry_model::format_ms(r.runner.first_seen_ms),
                    format!("{}s", r.runner.interval_ms / 1000),
                ]
            })
            .collect();
        let columns = [
            ("INSTALL", MAIN),
            ("RUNNER", MAIN),
            ("HEALTH", MAIN),
            ("SANDBOX", MAIN),
            ("JOBS", MAIN),
            ("VERSION", MAIN),
            ("LAST SEEN", MAIN),
            ("FIRST SEEN", WIDE),
            ("HEARTBEAT", WIDE),
        ];
        println!("{}", render::listing(out, &columns, &rows));
    }
    Ok(0)
}

pub async fn installs_list(api: &Api, query: &InstallQuery, out: Output) -> Result<i32> {
    let list = api.call::<ops::ListInstalls>(&[], query, &()).await?;
    if out == Output::Json {
        print_json(&list)?;
    } else {
        let rows: Vec<Vec<String>> = list
            .iter()
            .map(|i| {
                let drifted = i.drifted();
                vec![
                    i.name.clone(),
                    i.app.clone(),
                    render::status_word(i.status),
                    i.app_config_id.clone(),
                    i.components.len().to_string(),
                    if drifted.is_empty() {
                        "-".into()
                    } else {
                        drifted.join(", ")
                    },
                    render::labels(&i.labels),
                    i.updated_at.clone(),
                    i.last_workflow.clone().unwrap_or_else(|| "-".into()),
                    if i.approve_all { "on" } else { "off" }.into(),
                    i.created_at.clone(),
                ]
            })
            .collect();
        let columns = [
            ("INSTALL", MAIN),
            ("APP", MAIN),
            ("STATUS", MAIN),
            ("CONFIG", MAIN),
            ("COMPONENTS", MAIN),
            ("DRIFTED", MAIN),
            ("LABELS", MAIN),
            ("UPDATED", MAIN),
            ("LAST WORKFLOW", WIDE),
            ("APPROVE-ALL", WIDE),
            ("CREATED", WIDE),
        ];
        println!("{}", render::listing(out, &columns, &rows));
    }
    Ok(0)
}

pub async fn workflows_list(api: &Api, install: Option<&str>, out: Output) -> Result<i32> {
    let filter = WorkflowFilter {
        install: install.map(String::from),
        ..Default::default()
    };
    let all = api.call::<ops::ListWorkflows>(&[], &filter, &()).await?;
    if out == Output::Json {
        print_json(&all)?;
    } else {
        let rows: Vec<Vec<String>> = all
            .iter()
            .map(|w| {
                vec![
                    w.id.clone(),
                    w.install.clone(),
                    w.kind.label().to_string(),
                    render::status_word(w.status),
                    w.created_at.clone(),
                    format!(
                        "{}/{}",
                        w.steps.iter().filter(|s| s.status.is_terminal()).count(),
                        w.steps.len()
                    ),
                    w.finished_at.clone().unwrap_or_else(|| "-".into()),
                    w.app_config_id.clone(),
                ]
            })
            .collect();
        let columns = [
            ("WORKFLOW", MAIN),
            ("INSTALL", MAIN),
            ("KIND", MAIN),
            ("STATUS", MAIN),
            ("CREATED", MAIN),
            ("STEPS DONE", WIDE),
            ("FINISHED", WIDE),
            ("CONFIG", WIDE),
        ];
        println!("{}", render::listing(out, &columns, &rows));
    }
    Ok(0)
}

pub async fn approvals_list(api: &Api, install: Option<&str>, out: Output) -> Result<i32> {
    let filter = ApprovalFilter {
        install: install.map(String::from),
    };
    let list = api.call::<ops::ListApprovals>(&[], &filter, &()).await?;
    if out == Output::Json {
        print_json(&list)?;
    } else {
        let rows: Vec<Vec<String>> = list
            .iter()
            .map(|a| {
                vec![
                    a.install.clone(),
                    a.workflow_id.clone(),
                    a.step.to_string(),
                    a.component.clone(),
                    a.plan_summary.clone(),
                    a.created_at.clone(),
                    a.plan_job.clone(),
                    a.plan_digest.chars().take(19).collect(),
                ]
            })
            .collect();
        let columns = [
            ("INSTALL", MAIN),
            ("WORKFLOW", MAIN),
            ("STEP", MAIN),
            ("COMPONENT", MAIN),
            ("PLAN", MAIN),
            ("SINCE", MAIN),
            ("PLAN JOB", WIDE),
            ("PLAN DIGEST", WIDE),
        ];
        println!("{}", render::listing(out, &columns, &rows));
        if let Some(a) = list.first() {
            println!(
                "\nsee a plan's changes: ferry workflows get {} --diff\ndecide: ferry workflows approve {} --step {} (or deny)",
                a.workflow_id, a.workflow_id, a.step
            );
        }
    }
    Ok(0)
}
