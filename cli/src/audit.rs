//! `ferry audit`: the org's audit record (admin), oldest first, filtered by install, actor,
//! action and time; `-f` keeps printing records as they are written; `--json` prints JSON lines
//! (one record a line: an export that `jq` and log stores read).

use std::time::Duration;

use anyhow::{Result, bail};
use ferry_client::Client as Api;
use ferry_model::api::{AuditEntry, AuditQuery};
use ferry_model::ops;

/// What `ferry audit` was asked for.
#[derive(clap::Args, Debug)]
pub struct Ask {
    /// Records about this install (its workflows', jobs' and approvals' too).
    #[arg(long)]
    pub install: Option<String>,
    /// Records of this actor (`token:ci`, `scheduler`, `approve-all`).
    #[arg(long)]
    pub actor: Option<String>,
    /// This action (`install.deploy`), or a family of them (`install`, `approval`, `job`).
    #[arg(long)]
    pub action: Option<String>,
    /// From this time: RFC 3339 (`2026-11-27T10:00:00Z`) or how long ago (`2h`, `7d`).
    #[arg(long)]
    pub since: Option<String>,
    /// Keep printing records as they are written.
    #[arg(short, long)]
    pub follow: bool,
    /// JSON lines, one record a line (an export).
    #[arg(long)]
    pub json: bool,
}

/// How often a follower asks for records written since.
const FOLLOW_EVERY: Duration = Duration::from_secs(1);

pub async fn run(api: &Api, ask: Ask) -> Result<i32> {
    let mut q = AuditQuery {
        install: ask.install,
        actor: ask.actor,
        action: ask.action,
        since: ask.since.as_deref().map(since).transpose()?,
        after: None,
        limit: None,
    };
    let mut printed = 0usize;
    loop {
        let page = api.call::<ops::ListAudit>(&[], &q, &()).await?;
        for e in &page.entries {
            print(e, ask.json)?;
        }
        printed += page.entries.len();
        q.after = Some(page.next);
        // Once a page reads from a position, the time no longer matters (and costs a lookup).
        q.since = None;
        if page.more {
            continue;
        }
        if !ask.follow {
            break;
        }
        tokio::time::sleep(FOLLOW_EVERY).await;
    }
    if printed == 0 && !ask.json {
        eprintln!("no audit records match");
    }
    Ok(0)
}

/// `--since`: an RFC 3339 time, or how long ago (`90m`, `2h`, `7d`).
fn since(s: &str) -> Result<String> {
    if ferry_model::ms_of(s).is_some() {
        return Ok(s.to_string());
    }
    match humantime::parse_duration(s) {
        Ok(d) => {
            let ms = ferry_model::now_ms().saturating_sub(d.as_millis() as u64);
            Ok(ferry_model::format_ms(ms))
        }
        Err(_) => bail!(
            "--since {s:?}: an RFC 3339 time (2026-11-27T10:00:00Z) or a duration (90m, 2h, 7d)"
        ),
    }
}

fn print(e: &AuditEntry, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string(e)?);
        return Ok(());
    }
    let ev = &e.event;
    let detail = match &ev.detail {
        serde_json::Value::Null => String::new(),
        serde_json::Value::Object(m) if m.is_empty() => String::new(),
        d => format!("  {d}"),
    };
    println!(
        "{}  {:<16} {:<28} {}{detail}",
        ev.at, ev.actor, ev.action, ev.target
    );
    Ok(())
}
