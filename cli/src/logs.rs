//! `ferry logs`: a job's log, or a workflow's (`--workflow`, `--install`: every job of it in step
//! order, each with a header), printed or followed, with timestamps on a terminal.

use std::collections::BTreeSet;
use std::io::IsTerminal;

use anyhow::{Context, Result, bail};
use ferry_client::Client as Api;
use ferry_model::api::LogEventsQuery;
use ferry_model::{LogEntry, ops};

use crate::render;
use crate::sse::{Feed, Subscription};

/// Whose log to show.
pub enum Target {
    Job(String),
    Workflow(String),
    /// The install's latest workflow.
    Install(String),
}

/// How to show it.
pub struct Show {
    pub follow: bool,
    pub json: bool,
    /// `None`: on a terminal only.
    pub timestamps: Option<bool>,
    /// With a workflow: only this component's jobs.
    pub component: Option<String>,
}

impl Show {
    fn timestamps(&self) -> bool {
        self.timestamps
            .unwrap_or_else(|| std::io::stdout().is_terminal())
    }
}

pub async fn run(api: &Api, target: Target, show: Show) -> Result<i32> {
    let workflow = match target {
        Target::Job(job) => return job_log(api, &job, &show).await,
        Target::Workflow(id) => id,
        Target::Install(name) => {
            let i = api.run::<ops::GetInstall>(&[&name]).await?;
            match i.last_workflow {
                Some(id) => id,
                None => bail!("install {name} has run no workflow yet"),
            }
        }
    };
    workflow_log(api, &workflow, &show).await
}

/// Every job of the workflow in step order (the deploy order), each after a header naming its
/// component, kind and job; a job's retries (its lost executions) are in its log. Following, it
/// waits for each job in turn and ends with the workflow.
async fn workflow_log(api: &Api, id: &str, show: &Show) -> Result<i32> {
    let mut shown: BTreeSet<String> = BTreeSet::new();
    // Following, each change of the workflow or its jobs is a reason to look again.
    let mut changes = match show.follow {
        true => {
            let feed = Feed::workflow(id, "workflow,job");
            Some(Subscription::open(api, feed).await?)
        }
        false => None,
    };
    loop {
        let wf = api.run::<ops::GetWorkflow>(&[id]).await?;
        let mut waiting = false;
        for step in &wf.steps {
            let Some(job_id) = &step.job_id else { continue };
            if shown.contains(job_id)
                || show
                    .component
                    .as_ref()
                    .is_some_and(|c| *c != step.component)
            {
                continue;
            }
            let job = api.run::<ops::GetJob>(&[job_id]).await?;
            let ended = job.status.is_terminal();
            if show.follow && !ended && job.executions.is_empty() {
                // Not started yet: later steps' logs wait for it, in step order.
                waiting = true;
                break;
            }
            if !show.json {
                println!(
                    "── {} {} (job {job_id}, {}) ──",
                    step.component,
                    step.kind.label(),
                    job.status.name()
                );
            }
            print_job(api, job_id, show.follow && !ended, show).await?;
            shown.insert(job_id.clone());
        }
        let Some(changes) = changes.as_mut() else {
            return Ok(0);
        };
        if wf.status.is_terminal() && !waiting {
            return Ok(0);
        }
        changes.next().await?;
    }
}

async fn job_log(api: &Api, job: &str, show: &Show) -> Result<i32> {
    print_job(api, job, show.follow, show).await?;
    Ok(0)
}

/// Prints a job's log as it comes (following it to its end with `follow`), from the API's
/// Server-Sent Events: a dropped connection resumes after the last line printed.
async fn print_job(api: &Api, job: &str, follow: bool, show: &Show) -> Result<()> {
    let query = LogEventsQuery {
        follow,
        last_event_id: None,
    };
    let mut log = Subscription::open(api, Feed::JobLog(job.to_string(), query)).await?;
    loop {
        let event = log.next().await?;
        match event.event.as_str() {
            "line" => print_line(event.data.as_bytes(), show)?,
            "end" => return Ok(()),
            _ => {}
        }
    }
}

fn print_line(line: &[u8], show: &Show) -> Result<()> {
    if show.json {
        println!("{}", String::from_utf8_lossy(line));
        return Ok(());
    }
    let e: LogEntry = serde_json::from_slice(line).context("decoding a log line")?;
    if show.timestamps() {
        println!(
            "{}  {}",
            ferry_model::format_ms(e.at_ms),
            render::log_line(&e)
        );
    } else {
        println!("{}", render::log_line(&e));
    }
    Ok(())
}
