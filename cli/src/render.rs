//! Human-readable output. `--json` bypasses all of this.

use ferry_model::api::SyncResponse;
use ferry_model::{Install, LogEntry, StepStatus, Workflow};

/// How a listing is printed (`--output`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    #[default]
    Table,
    Wide,
    Json,
}

/// A column of a listing: its header, and whether only `--output wide` shows it.
pub type Column = (&'static str, bool);
pub const WIDE: bool = true;
pub const MAIN: bool = false;

/// A listing as a table: the main columns, or every one with `Output::Wide`. Each row has a
/// cell for every column.
pub fn listing(out: Output, columns: &[Column], rows: &[Vec<String>]) -> String {
    let shown: Vec<usize> = (0..columns.len())
        .filter(|&i| out == Output::Wide || !columns[i].1)
        .collect();
    let headers: Vec<&str> = shown.iter().map(|&i| columns[i].0).collect();
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            shown
                .iter()
                .map(|&i| r.get(i).cloned().unwrap_or_default())
                .collect()
        })
        .collect();
    table(&headers, &rows)
}

pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let fmt_row = |cells: Vec<String>| -> String {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths.get(i).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = vec![fmt_row(headers.iter().map(|h| h.to_string()).collect())];
    out.extend(rows.iter().map(|r| fmt_row(r.clone())));
    if rows.is_empty() {
        out.push("(none)".into());
    }
    out.join("\n")
}

pub fn deploy_order(sandbox: bool, stages: &[Vec<String>]) -> String {
    let mut lines = vec!["deploy order:".to_string()];
    let mut n = 1;
    if sandbox {
        lines.push(format!("  {n}. sandbox"));
        n += 1;
    }
    for stage in stages {
        let note = if stage.len() > 1 {
            "   (in parallel)"
        } else {
            ""
        };
        lines.push(format!("  {n}. {}{note}", stage.join(", ")));
        n += 1;
    }
    lines.join("\n")
}

pub fn sync(r: &SyncResponse) -> String {
    let mut out = if r.changed {
        format!(
            "app {}: stored config version {} ({})",
            r.app, r.version, r.config_id
        )
    } else {
        format!(
            "app {}: unchanged, still config version {} ({})",
            r.app, r.version, r.config_id
        )
    };
    let changed: Vec<&str> = r
        .components
        .iter()
        .filter(|c| c.changed)
        .map(|c| c.name.as_str())
        .collect();
    if r.changed {
        if changed.is_empty() {
            out.push_str("\nno component changed: existing builds will be reused");
        } else {
            out.push_str(&format!("\nneeds a new build: {}", changed.join(", ")));
        }
    }
    out
}

pub fn status_word<T: std::fmt::Debug>(s: T) -> String {
    format!("{s:?}").to_lowercase()
}

fn outputs(o: &ferry_model::Outputs) -> String {
    o.iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{}={}", clean(k), clean(s)),
            other => clean(&format!("{k}={other}")).into_owned(),
        })
        .collect::<Vec<_>>()
        .join("  ")
}

/// A string a runner, a job or a person supplied (an output, a stack status, a reason, a
/// readme), made safe to print: its control characters (ESC and the rest of C0 and C1, but the
/// newline and the tab) shown as `\u{..}` escapes, so no record can clear the screen, recolour
/// the terminal or plant a link in it.
pub fn clean(s: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !s.chars().any(bad) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(
        s.chars()
            .map(|c| match bad(c) {
                true => c.escape_unicode().to_string(),
                false => c.to_string(),
            })
            .collect(),
    )
}

/// Labels as `key=value` pairs, comma-separated; `-` for none.
pub fn labels(labels: &std::collections::BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        return "-".into();
    }
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

pub fn install(i: &Install) -> String {
    let mut out = format!(
        "install {}  app {}  status {}\nconfig {}  last workflow {}",
        i.name,
        i.app,
        status_word(i.status),
        i.app_config_id,
        i.last_workflow.as_deref().unwrap_or("-")
    );
    if !i.inputs.is_empty() {
        let ins: Vec<String> = i
            .inputs
            .iter()
            .map(|(k, v)| format!("{k}={}", clean(v)))
            .collect();
        out.push_str(&format!("\ninputs: {}", ins.join("  ")));
    }
    if !i.labels.is_empty() {
        out.push_str(&format!("\nlabels: {}", labels(&i.labels)));
    }
    out.push_str(&install_stack(i));
    let mut rows = vec![vec![
        "sandbox".to_string(),
        status_word(i.sandbox.status),
        outputs(&i.sandbox.outputs),
    ]];
    for (name, c) in &i.components {
        rows.push(vec![
            name.clone(),
            status_word(c.status),
            outputs(&c.outputs),
        ]);
    }
    out.push('\n');
    out.push_str(&table(&["COMPONENT", "STATUS", "OUTPUTS"], &rows));
    for (name, c) in std::iter::once((&"sandbox".to_string(), &i.sandbox)).chain(&i.components) {
        if let Some(d) = &c.drift {
            let state = if d.drifted { "DRIFTED" } else { "in sync" };
            out.push_str(&format!(
                "\ndrift of {name}: {state} ({}, checked {} by workflow {})",
                clean(&d.summary),
                d.checked_at,
                d.workflow
            ));
        }
    }
    for (role, g) in &i.break_glass {
        out.push_str(&format!(
            "\nbreak-glass {role}: granted by {} until {}",
            g.by,
            ferry_model::format_ms(g.until_ms)
        ));
    }
    for (name, a) in &i.actions {
        out.push_str(&format!(
            "\naction {name}: last run {} {}",
            a.workflow, a.status
        ));
    }
    out
}

/// The install stack's lines of `installs get`: its status and secrets as the runner read
/// them, and the published template.
fn install_stack(i: &Install) -> String {
    let mut out = String::new();
    if let Some(s) = &i.install_stack {
        out.push_str(&format!(
            "\ninstall stack: {} ({} outputs, read by the runner at {})",
            clean(&s.status),
            s.outputs.len(),
            s.reported_at
        ));
        for (name, secret) in &s.secrets {
            let set = if secret.length == 0 { "empty" } else { "set" };
            out.push_str(&format!(
                "\n  secret {name}: {set}, changed {}",
                secret.timestamp
            ));
        }
    }
    if let Some(t) = &i.stack_template {
        out.push_str(&format!(
            "\ninstall stack template: {} (published {} by {})\n  launch: {}",
            t.template_url, t.published_at, t.published_by, t.quick_link_url
        ));
    }
    out
}

/// The line `ferry installs get` shows about the install's runner.
pub fn install_runner(runners: &[ferry_model::api::RunnerInfo]) -> String {
    match runners.first() {
        None => "runner: none has connected yet".to_string(),
        Some(r) => format!(
            "runner: {} {} (last seen {}, {} job(s) running; jobs {})",
            r.runner.id,
            status_word(r.health),
            r.last_seen,
            r.runner.running_jobs,
            r.runner
                .sandbox
                .map_or("unknown", ferry_model::RunnerSandbox::name)
        ),
    }
}

static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `--quiet`: results and errors only, no progress lines.
pub fn set_quiet(on: bool) {
    QUIET.store(on, std::sync::atomic::Ordering::Relaxed);
}

pub fn quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

/// A line about what a command did (not what it was asked to show): none with `--quiet`.
pub fn say(msg: impl std::fmt::Display) {
    if !quiet() {
        anstream::println!("{msg}");
    }
}

/// A step's mark and status, coloured by how it is going. The codes reach the screen only
/// through `anstream`, which drops them when the output is not a terminal or `NO_COLOR` is set.
pub fn step_status(s: StepStatus) -> String {
    use anstyle::{AnsiColor, Style};
    let color = match s {
        StepStatus::Succeeded => Some(AnsiColor::Green),
        StepStatus::Failed | StepStatus::Cancelled => Some(AnsiColor::Red),
        StepStatus::Waiting => Some(AnsiColor::Yellow),
        StepStatus::Running => Some(AnsiColor::Cyan),
        _ => None,
    };
    let style = Style::new().fg_color(color.map(Into::into));
    format!("{style}{} {s}{style:#}", step_mark(s))
}

pub fn step_mark(s: StepStatus) -> &'static str {
    match s {
        StepStatus::Pending => "·",
        StepStatus::Running => "…",
        StepStatus::Waiting => "?",
        StepStatus::Succeeded => "✓",
        StepStatus::Failed => "✗",
        StepStatus::Skipped => "-",
        StepStatus::Cancelled => "⊘",
        StepStatus::NotAttempted => "○",
    }
}

pub fn workflow(w: &Workflow) -> String {
    let mut out = format!(
        "workflow {}  {}  install {}  status {}",
        w.id,
        w.kind.label(),
        w.install,
        status_word(w.status)
    );
    if w.scope != Default::default() {
        out.push_str(&format!("\n  scope: {}", w.scope.describe()));
    }
    if let Some(e) = &w.error {
        out.push_str(&format!("\n  error: {}", clean(e)));
    }
    let rows: Vec<Vec<String>> = w
        .steps
        .iter()
        .map(|s| {
            vec![
                s.index.to_string(),
                s.group.to_string(),
                s.subject(),
                s.kind.label().to_string(),
                format!("{} {}", step_mark(s.status), status_word(s.status)),
                s.job_id.clone().unwrap_or_default(),
                clean(s.actor.as_deref().unwrap_or_default()).into_owned(),
                clean(s.message.as_deref().unwrap_or_default()).into_owned(),
            ]
        })
        .collect();
    out.push('\n');
    out.push_str(&table(
        &[
            "#",
            "STAGE",
            "COMPONENT",
            "STEP",
            "STATUS",
            "JOB",
            "BY",
            "MESSAGE",
        ],
        &rows,
    ));
    out
}

pub fn job(j: &ferry_model::Job) -> String {
    let mut out = format!(
        "job {}  {} {}  install {}  status {}\nworkflow {} step {}",
        j.id,
        status_word(j.kind),
        j.component,
        j.install,
        status_word(j.status),
        j.workflow_id,
        j.step
    );
    if let Some(d) = &j.plan_digest {
        out.push_str(&format!(
            "\nplan {d}  {}",
            j.plan_summary.as_deref().unwrap_or("")
        ));
    }
    if let Some(e) = &j.error {
        out.push_str(&format!("\nerror: {e}"));
    }
    let t = &j.timeouts;
    let d = |s: u64| humantime::format_duration(std::time::Duration::from_secs(s)).to_string();
    out.push_str(&format!(
        "\nlimits: queue {}, available {}, execution {}, overall {}, {} executions",
        d(t.queue_secs),
        d(t.available_secs),
        d(t.execution_secs),
        d(t.overall_secs),
        j.max_executions
    ));
    if !j.outputs.is_empty() {
        out.push_str(&format!("\noutputs: {}", outputs(&j.outputs)));
    }
    let rows: Vec<Vec<String>> = j
        .executions
        .iter()
        .map(|e| {
            vec![
                e.attempt.to_string(),
                e.id.clone(),
                e.runner.clone(),
                status_word(e.status),
                e.started_at.clone(),
                e.finished_at.clone().unwrap_or_default(),
            ]
        })
        .collect();
    out.push('\n');
    out.push_str(&table(
        &[
            "ATTEMPT",
            "EXECUTION",
            "RUNNER",
            "STATUS",
            "STARTED",
            "FINISHED",
        ],
        &rows,
    ));
    out
}

/// Where each execution's time went (`jobs get --timing`): `ferry_model::Timing`'s spans.
pub fn job_timing(j: &ferry_model::Job) -> String {
    let ms = |us: u64| format!("{:.2} ms", us as f64 / 1000.0);
    let mut out = String::new();
    for e in &j.executions {
        let rows: Vec<Vec<String>> = e
            .timing
            .spans()
            .into_iter()
            .map(|s| {
                vec![
                    s.name.to_string(),
                    ms(s.micros),
                    s.clock.to_string(),
                    s.what.to_string(),
                ]
            })
            .collect();
        out.push_str(&format!("\ntiming of execution {}", e.id));
        if rows.is_empty() {
            out.push_str(": not recorded (an execution from before timing was kept, or one that never ran)\n");
            continue;
        }
        out.push('\n');
        out.push_str(&table(&["SPAN", "TOOK", "CLOCK", "WHAT"], &rows));
        out.push('\n');
        if e.timing.granted_at_offer() {
            out.push_str(
                "granted at its offer: no claim (the install had one runner, with a free slot)\n",
            );
        }
        if let Some(us) = e.timing.offer_to_spawn_us() {
            out.push_str(&format!(
                "offer to plugin start: {} (joins the two clocks: exact when they are one host's)\n",
                ms(us)
            ));
        }
    }
    out
}

pub fn log_line(e: &LogEntry) -> String {
    match e.stream.as_str() {
        "system" => format!("[ferry] {}", e.text),
        _ => e.text.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn a_records_terminal_escapes_are_shown_not_run() {
        assert_eq!(clean("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(clean("\u{1b}[2Jcleared"), "\\u{1b}[2Jcleared");
        assert_eq!(clean("link\u{9d}8;;x\u{7}"), "link\\u{9d}8;;x\\u{7}");
    }
}
