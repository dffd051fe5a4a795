//! The listings: apps, installs, workflows, approvals and runners, each as a table (the main
//! columns, or every one with `--output wide`) or as the API's JSON.

use anyhow::Result;
use ferry_model::api::RunnerInfo;
use ferry_model::{App, Install, Workflow};

use crate::client::Api;
use crate::commands::print_json;
use crate::render::{self, MAIN, Output, WIDE};

pub async fn apps_list(api: &Api, out: Output) -> Result<i32> {
    let apps: Vec<App> = api.get("/v1/apps").await?;
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
    let path = match install {
        Some(i) => format!("/v1/runners?install={i}"),
        None => "/v1/runners".to_string(),
    };
    let runners: Vec<RunnerInfo> = api.get(&path).await?;
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

pub async fn installs_list(api: &Api, query: &[(&str, String)], out: Output) -> Result<i32> {
    let q: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let path = if q.is_empty() {
        "/v1/installs".to_string()
    } else {
        format!("/v1/installs?{}", q.join("&"))
    };
    let list: Vec<Install> = api.get(&path).await?;
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
    let path = match install {
        Some(i) => format!("/v1/workflows?install={i}"),
        None => "/v1/workflows".to_string(),
    };
    let all: Vec<Workflow> = api.get(&path).await?;
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
    let path = match install {
        Some(i) => format!("/v1/approvals?install={i}"),
        None => "/v1/approvals".to_string(),
    };
    let list: Vec<ferry_model::Approval> = api.get(&path).await?;
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
