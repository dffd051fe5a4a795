//! `/metrics`: OpenMetrics text with the control plane's own metrics and every runner's, as
//! the runners send them over their install's link (a real runner, leaf mode).

use std::process::Command;
use std::time::{Duration, Instant};

use ferry_tests::{NatsServer, Proc, repo_root};

fn scrape(api: &str) -> (String, String) {
    let out = Command::new("curl")
        .args(["-s", "-D", "-", &format!("{api}/metrics")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (headers, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (headers.to_lowercase(), body.to_string())
}

/// The value of the series `name{labels}` (labels as the text shows them), if present.
fn value(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// A series and what its value must be.
type Want<'a> = (&'a str, fn(f64) -> bool);

/// Scrapes until every predicate holds (60 s at most); returns the last body.
fn scrape_until(api: &str, wants: &[Want]) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, body) = scrape(api);
        let missing: Vec<&str> = wants
            .iter()
            .filter(|(s, ok)| !value(&body, s).is_some_and(ok))
            .map(|(s, _)| *s)
            .collect();
        if missing.is_empty() {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "never saw {missing:?} in\n{body}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn runners_metrics_and_the_control_planes_are_served_as_openmetrics() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let _runner = Proc::runner_with(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
        &["--metrics-interval-secs", "1"],
    );
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    ferry_tests::sync_hello(&api, &app);
    let (code, out, err) = ferry_tests::create_hello(&api, "prod", &["--wait"]);
    assert_eq!(code, 0, "{out}{err}");

    let (headers, _) = scrape(&api);
    assert!(
        headers.contains("content-type: application/openmetrics-text; version=1.0.0"),
        "{headers}"
    );
    let r = "org=\"default\",install=\"prod\",runner=\"runner-";
    let positive = |v: f64| v > 0.0;
    let one = |v: f64| v == 1.0;
    let body = scrape_until(
        &api,
        &[
            ("ferry_jobs_dispatched_total", positive),
            ("ferry_dispatch_latency_seconds_count", positive),
            (
                "ferry_callout_decisions_total{decision=\"admit\"}",
                positive,
            ),
            ("ferry_log_lines_ingested_total", positive),
            // Sampled every 15 s.
            ("ferry_runners{health=\"active\"}", one),
            ("ferry_approvals_waiting", |v| v == 0.0),
            ("ferry_jobs_in_state{state=\"in_progress\"}", |v| v == 0.0),
        ],
    );
    // The runner's own series carry its org, install and id.
    let runner_lines: Vec<&str> = body
        .lines()
        .filter(|l| l.starts_with("ferry_runner_"))
        .collect();
    assert!(
        runner_lines.iter().all(|l| l.contains(r)),
        "{runner_lines:#?}"
    );
    let series = |prefix: &str, labels: &str| {
        runner_lines
            .iter()
            .find(|l| l.starts_with(prefix) && l.contains(labels))
            .and_then(|l| l.rsplit_once(' '))
            .and_then(|(_, v)| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no {prefix} with {labels} in\n{body}"))
    };
    // The hello app: a sandbox and three script components, each planned and applied.
    assert_eq!(
        series(
            "ferry_runner_jobs_finished_total",
            "kind=\"apply\",outcome=\"succeeded\""
        ),
        4.0
    );
    let exits = series(
        "ferry_runner_plugin_exits_total",
        "plugin=\"script\",code=\"0\"",
    );
    assert!(exits >= 6.0, "{exits}: {runner_lines:#?}");
    assert_eq!(
        series("ferry_runner_job_duration_seconds_count", "kind=\"plan\""),
        4.0
    );
    assert!(series("ferry_runner_job_duration_seconds_bucket", "le=\"+Inf\"") >= 4.0);
    assert_eq!(series("ferry_runner_link_up", ""), 1.0);
    assert_eq!(series("ferry_runner_spool_depth", ""), 0.0);
    assert!(series("ferry_runner_host_memory_total_bytes", "") > 0.0);
    assert!(series("ferry_runner_host_disk_total_bytes", "") > 0.0);
    assert!(body.contains("# TYPE ferry_runner_job_duration_seconds histogram"));
    assert!(
        body.trim_end().ends_with("# EOF"),
        "OpenMetrics ends with # EOF"
    );
}
