//! Following a workflow as it runs: each step printed as it changes, and a failure reported with
//! the failed steps' reasons and the end of their logs. `ferry dev`, `workflows wait` and `--wait`
//! share it.

use std::time::{Duration, Instant};

use anyhow::Result;
use ferry_client::Client as Api;
use ferry_model::api::{EventsQuery, LogQuery};
use ferry_model::events::{EventFilter, EventKind};
use ferry_model::ops::{self, Operation};
use ferry_model::{StepStatus, Workflow};

use crate::render;
use crate::sse::{Feed, Subscription};

/// A progress line, timed from `started` (none with `--quiet`).
pub fn step(started: Instant, msg: &str) {
    if render::quiet() {
        return;
    }
    anstream::println!("[{:>6.1}s] {msg}", started.elapsed().as_secs_f64());
}

/// Follows the workflow through the API's events, printing each step as it changes, until it
/// is over. `check` runs at least every second and ends the wait with its error (a process that
/// died).
pub async fn follow(
    api: &Api,
    id: &str,
    started: Instant,
    mut check: impl FnMut() -> Result<()>,
) -> Result<Workflow> {
    // Subscribed before reading the workflow: no change can fall between the two.
    let feed = Feed::workflow(id, "workflow");
    let mut events = Subscription::open(api, feed).await?;
    let mut current = api.find::<ops::GetWorkflow>(&[id]).await?;
    // Under approve-all a plan waits only for the approval service's decision, made at once:
    // nothing for a person to do, so no hint (and the decision says who made it).
    let approve_all = match &current {
        Some(wf) if wf.approve_all => true,
        Some(wf) => api
            .find::<ops::GetInstall>(&[&wf.install])
            .await
            .ok()
            .flatten()
            .is_some_and(|i| i.approve_all),
        None => false,
    };
    let mut seen: Vec<StepStatus> = Vec::new();
    let mut latest = LatestLines::default();
    loop {
        check()?;
        if let Some(wf) = &current {
            print_changes(wf, &mut seen, started, approve_all);
            if wf.status.is_terminal() {
                return Ok(wf.clone());
            }
            latest.show(api, wf, started).await;
        }
        if let Ok(event) = tokio::time::timeout(TICK, events.next()).await
            && let Some(wf) = workflow_of(&event?)
        {
            current = Some(wf);
        }
    }
}

/// How often a follower wakes without a change: for `check`, and a long step's latest line.
const TICK: Duration = Duration::from_secs(1);

/// The workflow an event carries, if it is a workflow's new state.
fn workflow_of(event: &eventsource_stream::Event) -> Option<Workflow> {
    let e: ferry_model::events::Event = serde_json::from_str(&event.data).ok()?;
    serde_json::from_value(e.record?).ok()
}

/// Prints each step whose status changed since `seen`, and how to decide on a plan waiting
/// (under approve-all, a waiting plan is not printed: it is decided at once).
fn print_changes(wf: &Workflow, seen: &mut Vec<StepStatus>, started: Instant, approve_all: bool) {
    seen.resize(wf.steps.len(), StepStatus::Pending);
    for s in &wf.steps {
        let before = seen[s.index as usize];
        if s.status == before || s.status == StepStatus::Pending {
            continue;
        }
        if s.status == StepStatus::Waiting && approve_all {
            seen[s.index as usize] = s.status;
            continue;
        }
        let msg = match (s.message.as_deref(), s.actor.as_deref()) {
            (Some("plan approved"), Some("approve-all")) => "  approved (approve-all)".to_string(),
            (Some(m), _) => format!("  {m}"),
            (None, _) => String::new(),
        };
        step(
            started,
            &format!(
                "{:<10} {:<8} {}{msg}",
                s.subject(),
                s.kind.label(),
                render::step_status(s.status)
            ),
        );
        seen[s.index as usize] = s.status;
        if s.status == StepStatus::Waiting {
            step(started, &approve_hint(wf, s.index, &s.component));
        }
    }
}

/// A long step's latest log line, shown while it runs: a step running longer than [`LONG`]
/// gets its newest line printed (when it changed) at most every [`LONG`].
#[derive(Default)]
struct LatestLines {
    /// Per step: when its line was last looked at, and the line shown.
    shown: std::collections::HashMap<u32, (Instant, String)>,
}

const LONG: Duration = Duration::from_secs(3);

impl LatestLines {
    async fn show(&mut self, api: &Api, wf: &Workflow, started: Instant) {
        for s in wf.steps.iter().filter(|s| s.status == StepStatus::Running) {
            let Some(job) = &s.job_id else { continue };
            let running_for = s
                .started_at
                .as_deref()
                .and_then(ferry_model::ms_of)
                .map(|t| ferry_model::now_ms().saturating_sub(t));
            if running_for.is_none_or(|ms| ms < LONG.as_millis() as u64) {
                continue;
            }
            if self
                .shown
                .get(&s.index)
                .is_some_and(|(at, _)| at.elapsed() < LONG)
            {
                continue;
            }
            let last = LogQuery {
                follow: false,
                tail: Some(1),
            };
            let Ok(resp) = api.open::<ops::JobLogs>(&[job], &last).await else {
                continue;
            };
            let text = resp.text().await.unwrap_or_default();
            let line = text
                .lines()
                .filter_map(|l| serde_json::from_str::<ferry_model::LogEntry>(l).ok())
                .next_back()
                .map(|e| render::log_line(&e))
                .unwrap_or_default();
            let before = self.shown.insert(s.index, (Instant::now(), line.clone()));
            if !line.is_empty() && before.is_none_or(|(_, l)| l != line) {
                step(
                    started,
                    &format!("{:<10} {:<8} │ {line}", s.subject(), s.kind.label()),
                );
            }
        }
    }
}

/// What to run about a plan waiting for a decision: see its changes, approve or deny it.
pub fn approve_hint(wf: &Workflow, index: u32, component: &str) -> String {
    format!(
        "           {component}'s plan waits for a decision: `ferry workflows get {id} --diff` shows \
         it; `ferry workflows approve {id} --step {index}` or `ferry workflows deny {id} --step {index}`",
        id = wf.id
    )
}

pub async fn report_failure(api: &Api, wf: &Workflow) {
    if let Some(e) = &wf.error {
        eprintln!("\nworkflow {} failed: {e}", wf.id);
    }
    for s in wf.steps.iter().filter(|s| s.status == StepStatus::Failed) {
        eprintln!(
            "\nstep {} ({} {}) failed: {}",
            s.index,
            s.subject(),
            s.kind.label(),
            s.message.as_deref().unwrap_or("no message")
        );
        let Some(job) = &s.job_id else { continue };
        match api.open::<ops::JobLogs>(&[job], &LogQuery::default()).await {
            Ok(resp) => {
                let text = resp.text().await.unwrap_or_default();
                let lines: Vec<String> = text
                    .lines()
                    .filter_map(|l| serde_json::from_str::<ferry_model::LogEntry>(l).ok())
                    .map(|e| render::log_line(&e))
                    .collect();
                eprintln!("last lines of job {job}:");
                for l in &lines[lines.len().saturating_sub(20)..] {
                    eprintln!("  {l}");
                }
            }
            Err(e) => eprintln!("(cannot read the log of job {job}: {e})"),
        }
    }
}

/// Waits through the API's events until the record operation `O` reads (an event kind's record
/// with id `id`) is `done`, and returns it. Subscribed before the first read, so no change is
/// missed between the two.
pub async fn until<O>(
    api: &Api,
    kind: EventKind,
    id: &str,
    done: impl Fn(&O::Reply) -> bool,
) -> Result<O::Reply>
where
    O: Operation<Query = (), Body = ()>,
    O::Reply: serde::de::DeserializeOwned,
{
    let feed = Feed::Events(EventsQuery {
        filter: EventFilter {
            kinds: Some(kind.name().into()),
            ..Default::default()
        },
        last_event_id: None,
    });
    let mut events = Subscription::open(api, feed).await?;
    let mut current = api.run::<O>(&[id]).await?;
    while !done(&current) {
        let event = events.next().await?;
        let Ok(e) = serde_json::from_str::<ferry_model::events::Event>(&event.data) else {
            continue;
        };
        if e.id == id
            && let Some(record) = e.record
            && let Ok(value) = serde_json::from_value(record)
        {
            current = value;
        }
    }
    Ok(current)
}
