//! Job logs archived in S3 (a real S3-compatible store: SeaweedFS), and served from there once
//! the LOGS stream no longer has them.

use std::io::Read;
use std::time::{Duration, Instant};

use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, S3Store, ferry, repo_root};

/// A control plane archiving job logs in `s3` (bucket `ferry-logs`, under `archive/logs/`), a
/// runner, and install `prod` deployed; the greeter's apply job.
struct Deployed {
    nats: NatsServer,
    dir: tempfile::TempDir,
    api: String,
    job: String,
    _server: Proc,
    _runner: Proc,
}

fn deployed(s3: &S3Store) -> Deployed {
    s3.create_bucket("ferry-logs");
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let archive = [
        "--log-archive-s3-bucket",
        "ferry-logs",
        "--log-archive-s3-prefix",
        "archive/logs",
        "--log-archive-s3-endpoint",
        &s3.endpoint,
    ];
    let (server, api) = Proc::server_env(
        &nats.url,
        dir.path().join("server.log"),
        &archive,
        &s3.env(),
    );
    let runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    ferry_tests::sync_hello(&api, &app);
    let (code, out, err) = ferry_tests::create_hello(&api, "prod", &["--wait", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let wf: Workflow = serde_json::from_str(&out).unwrap();
    let job = the_step(&wf, "greeter", "apply")
        .job_id
        .as_deref()
        .unwrap()
        .to_string();
    Deployed {
        nats,
        dir,
        api,
        job,
        _server: server,
        _runner: runner,
    }
}

#[test]
fn finished_jobs_logs_go_to_s3_compressed_and_are_served_from_there() {
    let s3 = S3Store::start();
    let Deployed { nats, api, job, .. } = &deployed(&s3);
    let job = job.as_str();

    // One gzip-compressed JSON-lines object per job, under the prefix.
    let key = format!("archive/logs/default/{job}.jsonl.gz");
    let deadline = Instant::now() + Duration::from_secs(60);
    let compressed = loop {
        if let Some(bytes) = s3.get("ferry-logs", &key) {
            break bytes;
        }
        assert!(Instant::now() < deadline, "{key} never appeared");
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut text = String::new();
    flate2::read::GzDecoder::new(compressed.as_slice())
        .read_to_string(&mut text)
        .expect("a gzip object");
    let lines: Vec<ferry_model::LogEntry> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l.text == "greeter wrote: hello, prod!"),
        "{text}"
    );
    // Nothing of it in the hub's own archive.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let in_hub = rt.block_on(async {
        let js = async_nats::jetstream::new(nats.admin().await);
        let os = js.get_object_store("job_logs").await.unwrap();
        os.get(format!("default.{job}")).await.is_ok()
    });
    assert!(!in_hub, "the log was archived in the hub too");

    // The stream's retention drops the lines (here: all at once); the API serves the archive.
    rt.block_on(async {
        let js = async_nats::jetstream::new(nats.admin().await);
        js.get_stream("LOGS").await.unwrap().purge().await.unwrap();
    });
    let (code, log, err) = ferry(api, &["logs", "--job", job]);
    assert_eq!(code, 0, "{err}");
    assert!(log.contains("greeter wrote: hello, prod!"), "{log}");
    assert_eq!(log.lines().count(), lines.len(), "{log}");
}

#[test]
fn a_log_archive_the_server_cannot_reach_stops_it_at_start_with_the_reason() {
    let s3 = S3Store::start();
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let hub = ferry_tests::hub_dir(&nats.url);
    let port = ferry_tests::free_port().to_string();
    let out = std::process::Command::new(ferry_tests::bin("ferry-server"))
        .args(["--nats-url", &nats.url, "--hub-dir"])
        .arg(&hub)
        .args(["--http-addr", &format!("127.0.0.1:{port}")])
        .args(["--log-archive-s3-bucket", "no-such-bucket"])
        .args(["--log-archive-s3-endpoint", &s3.endpoint])
        .envs(s3.env())
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the job log archive s3://no-such-bucket/ferry/job-logs/")
            && err.contains("HeadBucket"),
        "{err}"
    );
}

#[test]
fn an_archive_that_hangs_leaves_log_reads_answered_from_the_stream() {
    let s3 = S3Store::start();
    let Deployed { dir, api, job, .. } = &deployed(&s3);
    let (api, job) = (api.as_str(), job.as_str());
    let key = format!("archive/logs/default/{job}.jsonl.gz");
    let deadline = Instant::now() + Duration::from_secs(60);
    while s3.get("ferry-logs", &key).is_none() {
        assert!(Instant::now() < deadline, "{key} never appeared");
        std::thread::sleep(Duration::from_millis(200));
    }

    // S3 stops answering; the log is read from the stream, promptly.
    s3.freeze();
    let t = Instant::now();
    let (code, log, err) = ferry(api, &["logs", "--job", job]);
    let took = t.elapsed();
    s3.thaw();
    assert_eq!(code, 0, "{err}");
    assert!(log.contains("greeter wrote: hello, prod!"), "{log}");
    assert!(
        took < Duration::from_secs(30),
        "the read waited {took:?} for S3"
    );
    let server_log = std::fs::read_to_string(dir.path().join("server.log")).unwrap();
    assert!(
        server_log.contains("the job log archive did not answer"),
        "{server_log}"
    );
}
