//! `ferry installs history` and `ferry installs rollback`: what an install ran, and going back
//! to the config version before (a deploy like any other: planned, approved, applied).

use anyhow::{Result, bail};
use ferry_client::Client as Api;
use ferry_model::api::HistoryEntry;
use ferry_model::ops;

use crate::commands::print_json;
use crate::render::{self, MAIN, Output, WIDE};

pub async fn show(api: &Api, install: &str, out: Output) -> Result<i32> {
    let history = api.run::<ops::InstallHistory>(&[install]).await?;
    if out == Output::Json {
        print_json(&history)?;
        return Ok(0);
    }
    let rows: Vec<Vec<String>> = history
        .iter()
        .map(|h| {
            vec![
                h.created_at.clone(),
                h.kind.label().to_string(),
                h.app_config_id.clone(),
                render::status_word(h.status),
                h.by.clone(),
                h.finished_at.clone().unwrap_or_else(|| "—".into()),
                h.workflow_id.clone(),
            ]
        })
        .collect();
    let columns = [
        ("STARTED", MAIN),
        ("KIND", MAIN),
        ("CONFIG", MAIN),
        ("RESULT", MAIN),
        ("BY", MAIN),
        ("ENDED", WIDE),
        ("WORKFLOW", WIDE),
    ];
    println!("{}", render::listing(out, &columns, &rows));
    Ok(0)
}

/// `installs deploy --plan-first`: a plan-only deploy of the config, followed to its end; the
/// deploy of that same config (pinned, so a sync meanwhile changes nothing) only if every plan
/// was made and passed the app's policies.
pub async fn plan_first(
    api: &Api,
    install: &str,
    mut scope: ferry_model::DeployScope,
    json: bool,
) -> Result<i32> {
    let config = match scope.config.clone() {
        Some(c) => c,
        None => {
            let app = api.run::<ops::GetInstall>(&[install]).await?.app;
            api.run::<ops::GetApp>(&[&app])
                .await?
                .latest_config
                .ok_or_else(|| anyhow::anyhow!("app {app} has no config"))?
        }
    };
    scope.config = Some(config.clone());
    let plans = ferry_model::DeployScope {
        plan_only: true,
        ..scope.clone()
    };
    if !json {
        eprintln!("planning every component of config {config} first; nothing is applied yet");
    }
    let id = crate::commands::installs_deploy(api, install, "deploy", &plans, json, true).await?;
    if crate::commands::then_wait(api, id.clone(), true, false).await? != 0 {
        eprintln!("the plans of workflow {id} did not all pass: nothing was applied");
        return Ok(1);
    }
    let id = crate::commands::installs_deploy(api, install, "deploy", &scope, json, true).await?;
    crate::commands::then_wait(api, id, true, json).await
}

/// The config a rollback deploys: `--to`, or the newest one the install ran successfully
/// before what it runs now.
pub async fn rollback_config(api: &Api, install: &str, to: Option<&str>) -> Result<String> {
    if let Some(to) = to {
        return Ok(to.to_string());
    }
    let current = api.run::<ops::GetInstall>(&[install]).await?.app_config_id;
    let history = api.run::<ops::InstallHistory>(&[install]).await?;
    match HistoryEntry::rollback_target(&history, &current) {
        Some(c) => {
            eprintln!("rolling {install} back from config {current} to {c}");
            Ok(c.to_string())
        }
        None => bail!(
            "install {install} has run no other config successfully: nothing to roll back to \
             (name one with --to)"
        ),
    }
}
