//! `ferry releases`: create, get, list, pause, resume, cancel; `ferry apps get`, the fleet a
//! release rolls over.

use anyhow::Result;
use ferry_model::api::CreateRelease;
use ferry_model::events::EventKind;
use ferry_model::{Release, ops};

use crate::args::ReleasesCmd;
use crate::commands::print_json;
use crate::render::{self, MAIN, Output, WIDE};
use ferry_client::Client as Api;

pub async fn run(api: &Api, cmd: ReleasesCmd) -> Result<i32> {
    match cmd {
        ReleasesCmd::Create {
            app,
            config,
            installs,
            labels,
            waves,
            delay,
            soak,
            max_failures,
            health,
            concurrency,
            approve_all,
            wait,
            json,
        } => {
            let labels =
                ferry_model::parse_labels(&labels.join(",")).map_err(anyhow::Error::msg)?;
            let body = CreateRelease {
                app,
                config,
                installs,
                labels,
                waves,
                delay_secs: delay.map_or(0, |d| d.as_secs()),
                soak_secs: soak.map_or(0, |d| d.as_secs()),
                max_failures,
                health,
                concurrency,
                approve_all,
            };
            let r = api.call::<ops::CreateReleaseOp>(&[], &(), &body).await?;
            if wait {
                if !json {
                    println!("release {} started", r.id);
                }
                return follow(api, &r.id, json).await;
            }
            show(&r, json)?;
        }
        ReleasesCmd::Wait { id, json } => return follow(api, &id, json).await,
        ReleasesCmd::Get { id, json } => {
            let r = api.run::<ops::GetRelease>(&[&id]).await?;
            show(&r, json)?;
        }
        ReleasesCmd::List { out } => list(api, out).await?,
        ReleasesCmd::Pause { id } => said(&id, api.run::<ops::PauseRelease>(&[&id]).await?),
        ReleasesCmd::Resume { id } => said(&id, api.run::<ops::ResumeRelease>(&[&id]).await?),
        ReleasesCmd::Cancel { id } => said(&id, api.run::<ops::CancelRelease>(&[&id]).await?),
    }
    Ok(0)
}

/// `releases list`: a table (or JSON) of the org's releases, newest first.
async fn list(api: &Api, out: crate::args::ListOutput) -> Result<()> {
    let all = api.run::<ops::ListReleases>(&[]).await?;
    if out.format() == Output::Json {
        print_json(&all)?;
    } else {
        let rows: Vec<Vec<String>> = all
            .iter()
            .map(|r| {
                vec![
                    r.id.clone(),
                    r.app.clone(),
                    r.config_id.clone(),
                    render::status_word(r.status),
                    format!(
                        "{}/{}",
                        r.waves.iter().filter(|w| w.passed_ms.is_some()).count(),
                        r.waves.len()
                    ),
                    r.created_at.clone(),
                    r.finished_at.clone().unwrap_or_else(|| "-".into()),
                    r.reason.clone().unwrap_or_else(|| "-".into()),
                ]
            })
            .collect();
        let columns = [
            ("RELEASE", MAIN),
            ("APP", MAIN),
            ("CONFIG", MAIN),
            ("STATUS", MAIN),
            ("WAVES PASSED", MAIN),
            ("CREATED", MAIN),
            ("FINISHED", WIDE),
            ("REASON", WIDE),
        ];
        println!("{}", render::listing(out.format(), &columns, &rows));
    }
    Ok(())
}

/// Follows a release through its events until it ends or halts, printing each wave as it starts
/// and passes; the exit code says how it ended (0: succeeded).
async fn follow(api: &Api, id: &str, json: bool) -> Result<i32> {
    let started = std::time::Instant::now();
    let shown = std::cell::RefCell::new(Vec::<(bool, bool)>::new());
    let stops = |r: &Release| {
        if !json {
            progress(r, &mut shown.borrow_mut(), started);
        }
        r.status.is_terminal() || r.status == ferry_model::ReleaseStatus::Halted
    };
    let r = crate::watch::until::<ops::GetRelease>(api, EventKind::Release, id, stops).await?;
    if json {
        print_json(&r)?;
    } else {
        let how = render::status_word(r.status);
        crate::watch::step(started, &format!("release {id} {how}"));
        match (&r.reason, r.status) {
            (Some(why), ferry_model::ReleaseStatus::Halted) => eprintln!(
                "halted: {why}\nfix the failed installs, then `ferry releases resume {id}` goes on"
            ),
            (Some(why), _) => eprintln!("{why}"),
            _ => {}
        }
    }
    Ok(if r.status == ferry_model::ReleaseStatus::Succeeded {
        0
    } else {
        1
    })
}

/// Prints each wave whose state changed since `shown` (started, passed).
fn progress(r: &Release, shown: &mut Vec<(bool, bool)>, started: std::time::Instant) {
    shown.resize(r.waves.len(), (false, false));
    let total = r.waves.len();
    for (i, w) in r.waves.iter().enumerate() {
        let now = (w.started_ms.is_some(), w.passed_ms.is_some());
        if now == shown[i] {
            continue;
        }
        let what = match now {
            (_, true) => "passed".to_string(),
            _ => format!("started ({} install(s))", w.targets.len()),
        };
        crate::watch::step(started, &format!("wave {}/{total} {what}", i + 1));
        shown[i] = now;
    }
}

/// What a pause, resume or cancel left the release at.
fn said(id: &str, r: Release) {
    println!("release {id}: {}", render::status_word(r.status));
}

fn show(r: &Release, json: bool) -> Result<()> {
    if json {
        return print_json(r);
    }
    println!(
        "release {}  app {}  config {}  {}",
        r.id,
        r.app,
        r.config_id,
        render::status_word(r.status)
    );
    if let Some(why) = &r.reason {
        println!("halted: {why}");
    }
    for (i, w) in r.waves.iter().enumerate() {
        let state = match (w.started_ms, w.passed_ms) {
            (_, Some(_)) => "passed",
            (Some(_), None) => "in progress",
            _ => "waiting",
        };
        println!("wave {} ({state})", i + 1);
        for t in &w.targets {
            let mut line = format!("  {:<20} {}", t.install, render::status_word(t.status));
            if let Some(d) = &t.deploy {
                line.push_str(&format!("  deploy {d}"));
            }
            if let Some(h) = &t.health {
                line.push_str(&format!("  health {h}"));
            }
            if let Some(m) = &t.message {
                line.push_str(&format!("  ({m})"));
            }
            println!("{line}");
        }
    }
    Ok(())
}

/// `ferry apps get A`: the app's fleet.
pub async fn fleet(api: &Api, app: &str, json: bool) -> Result<i32> {
    let f = api.run::<ops::AppFleet>(&[app]).await?;
    if json {
        print_json(&f)?;
        return Ok(0);
    }
    println!(
        "app {}  latest config {}  {} install(s)",
        f.app,
        f.latest_config.as_deref().unwrap_or("-"),
        f.installs
    );
    let list = |v: &[String]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.join(", ")
        }
    };
    let rows: Vec<Vec<String>> = f
        .by_config
        .iter()
        .map(|(c, n)| {
            let latest = if Some(c) == f.latest_config.as_ref() {
                " (latest)"
            } else {
                ""
            };
            vec![format!("{c}{latest}"), n.to_string()]
        })
        .collect();
    println!("{}", render::table(&["CONFIG", "INSTALLS"], &rows));
    let by_status: Vec<String> = f
        .by_status
        .iter()
        .map(|(s, n)| format!("{s} {n}"))
        .collect();
    println!("status: {}", by_status.join(", "));
    println!("drifted: {}", list(&f.drifted));
    println!("failing: {}", list(&f.failing));
    println!("waiting for approval: {}", list(&f.waiting_for_approval));
    Ok(0)
}
