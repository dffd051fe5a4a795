//! One customer cannot take the control plane down for everyone: what an install sends and what
//! an API client holds are bounded, and another org's work goes on meanwhile (issue 27).
//!
//! The attacker here holds one install's certificate (a compromised runner host), or any API
//! token (a viewer is enough), against a hub secured as in production.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use async_nats::jetstream;
use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, ferry, repo_root};

/// Small caps, so a test fills them in seconds: 52 MiB reserved of the hub's 160 MB store.
const CAPS: &[&str] = &[
    "--logs-max-bytes",
    "16MiB",
    "--job-events-max-bytes",
    "8MiB",
    "--results-max-bytes",
    "8MiB",
    "--metrics-max-bytes",
    "4MiB",
    "--events-max-bytes",
    "16MiB",
];

/// A runtime for the attacker's connection in a synchronous test.
fn rt() -> tokio::runtime::Runtime {
    let _ = rustls::crypto::ring::default_provider().install_default();
    tokio::runtime::Runtime::new().unwrap()
}

/// Install `rogue`'s connection straight to the hub, with a certificate from the hub's CA.
async fn rogue(nats: &NatsServer, dir: &std::path::Path) -> async_nats::Client {
    nats.issue_install(ferry_tests::ORG, "rogue", &dir.join("rogue"))
        .connect_options()
        .connect(&nats.url)
        .await
        .expect("rogue's certificate is admitted")
}

/// The bytes a stream holds now (as the operator sees them).
async fn stream_bytes(nats: &NatsServer, name: &str) -> u64 {
    let js = jetstream::new(nats.admin().await);
    let mut s = js.get_stream(name).await.unwrap();
    s.info().await.unwrap().state.bytes
}

#[test]
fn an_install_filling_its_log_stream_fails_no_other_write_or_deploy() {
    let nats = NatsServer::start_with_store("160MB");
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server_with(&nats.url, dir.path().join("server.log"), CAPS);

    // 240 MB of junk on subjects the install may publish on: more than the whole store.
    let rt = rt();
    rt.block_on(async {
        let js = jetstream::new(rogue(&nats, dir.path()).await);
        let junk: Vec<u8> = vec![b'x'; 512 * 1024];
        let mut acks = Vec::new();
        for i in 0..480 {
            let ack = js
                .publish(
                    format!("ferry.rx.{}.rogue.log.junk{i}", ferry_tests::ORG),
                    junk.clone().into(),
                )
                .await
                .expect("published");
            acks.push(ack);
            if acks.len() == 64 {
                for a in acks.drain(..) {
                    a.await
                        .expect("the stream takes the junk, dropping its oldest");
                }
            }
        }
        for a in acks {
            a.await.expect("stored");
        }
        let held = stream_bytes(&nats, "LOGS").await;
        assert!(held <= 16 << 20, "LOGS holds {held} bytes, over its cap");
    });

    // Another org's API writes, and a deploy of an install of the attacker's own org.
    let init = ferry_tests::ferry_server(&nats.url)
        .args(["init", "--org", "other"])
        .output()
        .unwrap();
    assert!(init.status.success(), "{init:?}");
    let other = String::from_utf8_lossy(&init.stdout).trim().to_string();
    let out = std::process::Command::new(ferry_tests::bin("ferry"))
        .args(["--api", &api, "--token", &other])
        .args(["tokens", "create", "--name", "ci", "--role", "viewer"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    let wf = ferry_tests::sync_and_create(&api, &app, "prod");
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let done = wait_until(&api, &wf, 180, "the deploy", |w| {
        name_of(&w.status) != "running" && name_of(&w.status) != "pending"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    let (code, _, err) = ferry(&api, &["installs", "label", "prod", "tier=gold"]);
    assert_eq!(code, 0, "{err}");
}

/// `ferry_protocol::messages::RunnerMetrics` with `n` job kinds, encoded as a runner sends it.
fn huge_sample(n: usize) -> Vec<u8> {
    use ferry_protocol::messages::{Histogram, HostStats, RunnerMetrics};
    let m = RunnerMetrics {
        runner_id: "r".into(),
        version: "0".into(),
        at_ms: 0,
        interval_ms: 1000,
        jobs_running: vec![],
        jobs_finished: (0..n).map(|i| (format!("k{i}"), "ok".into(), 1)).collect(),
        job_seconds: vec![("plan".into(), Histogram::new(&[1.0]))],
        plugin_exits: vec![],
        artifact_bytes_synced: 0,
        spool_depth: 0,
        link_up: true,
        link_reconnects: 0,
        host: HostStats::default(),
    };
    ferry_protocol::encode(&m)
}

/// How long `/healthz` takes to answer now.
fn healthz_takes(api: &str) -> Duration {
    let start = Instant::now();
    let out = std::process::Command::new("curl")
        .args(["-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}"])
        .arg(format!("{api}/healthz"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200");
    start.elapsed()
}

#[test]
fn a_huge_metrics_sample_leaves_the_server_answering() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let rt = rt();
    rt.block_on(async {
        let client = rogue(&nats, dir.path()).await;
        let subject = format!("ferry.rx.{}.rogue.metrics", ferry_tests::ORG);
        // 300,000 entries: refused by the stream (larger than a sample may be), whether sent
        // through JetStream or as a plain publish.
        let big = huge_sample(300_000);
        let js = jetstream::new(client.clone());
        let refused = match js.publish(subject.clone(), big.clone().into()).await {
            Ok(ack) => ack.await.is_err(),
            Err(_) => true,
        };
        assert!(refused, "METRICS took a {} byte sample", big.len());
        client.publish(subject.clone(), big.into()).await.unwrap();
        // 15,000 entries fit: the server cuts them to the install's budget in one pass.
        let fits = huge_sample(15_000);
        assert!(fits.len() < 256 * 1024, "{}", fits.len());
        for _ in 0..20 {
            js.publish(subject.clone(), fits.clone().into())
                .await
                .unwrap()
                .await
                .unwrap();
        }
    });
    for _ in 0..10 {
        let took = healthz_takes(&api);
        assert!(took < Duration::from_secs(1), "/healthz took {took:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The install's series are within its budget, and the scrape is whole.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = std::process::Command::new("curl")
            .args(["-s", "-m", "5"])
            .arg(format!("{api}/metrics"))
            .output()
            .unwrap();
        let body = String::from_utf8_lossy(&out.stdout).to_string();
        let series = body
            .lines()
            .filter(|l| l.starts_with("ferry_runner_") && l.contains("install=\"rogue\""))
            .count();
        if series > 0 {
            assert!(series <= 256 + 16, "{series} series for rogue");
            assert!(body.trim_end().ends_with("# EOF"), "{body}");
            break;
        }
        assert!(Instant::now() < deadline, "no rogue series in\n{body}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Opens `/v1/events` with `token` on a raw connection; returns the status code and the open
/// connection (the stream stays open while it lives).
fn open_stream(api: &str, token: &str) -> (u16, TcpStream) {
    let addr = api.trim_start_matches("http://");
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        conn,
        "GET /v1/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n") {
        conn.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let line = String::from_utf8_lossy(&head);
    let code = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    (code, conn)
}

#[test]
fn a_token_past_its_event_streams_is_refused_and_the_process_caps_them_all() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server_with(
        &nats.url,
        dir.path().join("server.log"),
        // One org's tokens here: its cap as high as the process's.
        &["--sse-max", "260", "--sse-per-org", "260"],
    );
    let viewer = |name: &str| {
        let v = cli::<CreatedToken>(
            &api,
            &[
                "tokens", "create", "--name", name, "--role", "viewer", "--json",
            ],
        );
        v.token.as_str().to_string()
    };
    let (a, b) = (viewer("a"), viewer("b"));
    let mut open: Vec<TcpStream> = (0..200)
        .map(|i| {
            let (code, conn) = open_stream(&api, &a);
            assert_eq!(code, 200, "stream {i}");
            conn
        })
        .collect();
    let (code, _) = open_stream(&api, &a);
    assert_eq!(code, 429, "the 201st stream of a token");
    // Another token still gets streams, up to the process's cap.
    let mut others: Vec<TcpStream> = (0..60)
        .map(|_| open_stream(&api, &b))
        .map(|(c, s)| {
            assert_eq!(c, 200);
            s
        })
        .collect();
    assert_eq!(open_stream(&api, &b).0, 429, "past the process's cap");
    // A closed stream gives its place back.
    drop(open.pop());
    others.truncate(0);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, _) = open_stream(&api, &a);
        if code == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "a closed stream's place never came back"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One org holding all the event streams it may (its admin minted tokens for them) leaves
/// another org's first stream answered: the org's cap is below the process's.
#[test]
fn one_org_cannot_hold_every_event_stream_of_the_process() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server_with(
        &nats.url,
        dir.path().join("server.log"),
        &["--sse-max", "8", "--sse-per-token", "8"],
    );
    let admin = ferry_tests::token_for(&api).unwrap();
    let held: Vec<TcpStream> = (0..6)
        .map(|i| {
            let (code, conn) = open_stream(&api, &admin);
            assert_eq!(code, 200, "stream {i}");
            conn
        })
        .collect();
    assert_eq!(
        open_stream(&api, &admin).0,
        429,
        "past the org's cap (6 of 8)"
    );
    let out = ferry_tests::ferry_server(&nats.url)
        .args(["init", "--org", "globex"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let other = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let (code, _conn) = open_stream(&api, &other);
    assert_eq!(code, 200, "another org's first stream");
    drop(held);
}

#[test]
fn a_half_sent_request_is_closed_and_a_resume_point_past_any_id_is_refused() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server_with(
        &nats.url,
        dir.path().join("server.log"),
        &["--http-header-timeout-secs", "1"],
    );
    let addr = api.trim_start_matches("http://");
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(slow, "GET /healthz HTTP/1.1\r\nHost: {addr}\r\n").unwrap();
    let start = Instant::now();
    let mut rest = Vec::new();
    // The server closes the connection (perhaps with a 408 first); a read error other than
    // a timeout is a reset, also a close.
    match slow.read_to_end(&mut rest) {
        Ok(_) => {}
        Err(e) => assert!(
            !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "the half-sent request was held: {e}"
        ),
    }
    assert!(start.elapsed() < Duration::from_secs(15));

    let token = ferry_tests::token_for(&api).unwrap();
    let out = std::process::Command::new("curl")
        .args(["-s", "-m", "10", "-w", "\n%{http_code}", "-H"])
        .arg(format!("authorization: Bearer {token}"))
        .args(["-H", "Last-Event-ID: 18446744073709551615"])
        .arg(format!("{api}/v1/events"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.ends_with("\n400"), "{text}");
    assert!(text.contains("not an event id"), "{text}");
}

/// Rogue's junk on its log subjects, 512 KiB at a time, until the hub stops taking it (`n`
/// messages at most); the bytes the hub acknowledged.
async fn flood(js: &jetstream::Context, n: usize) -> u64 {
    let mut sent = 0u64;
    for i in 0..n {
        let subject = format!("ferry.rx.{}.rogue.log.junk{i}", ferry_tests::ORG);
        let acked = match js.publish(subject, vec![b'x'; 512 * 1024].into()).await {
            Ok(ack) => tokio::time::timeout(Duration::from_secs(5), ack).await,
            Err(_) => break,
        };
        match acked {
            Ok(Ok(_)) => sent += 512 * 1024,
            _ => break,
        }
    }
    sent
}

/// Messages of each subject under `filter` that `stream` holds now.
async fn held(nats: &NatsServer, stream: &str, filter: &str) -> u64 {
    let js = jetstream::new(nats.admin().await);
    let s = js.get_stream(stream).await.unwrap();
    let mut subjects = s.info_with_subjects(filter).await.unwrap();
    let mut n = 0;
    while let Some(Ok((_, count))) = futures_util::StreamExt::next(&mut subjects).await {
        n += count as u64;
    }
    n
}

#[test]
fn an_install_over_its_quota_is_throttled_and_loses_only_its_own_junk() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server_with(
        &nats.url,
        dir.path().join("server.log"),
        &[
            "--install-quota-per-min",
            "8MiB",
            "--install-throttle-secs",
            "60",
        ],
    );
    let rt = rt();
    rt.block_on(async {
        // An honest install's log lines, before the flood.
        let good = nats
            .issue_install(ferry_tests::ORG, "good", &dir.path().join("good"))
            .connect_options()
            .connect(&nats.url)
            .await
            .unwrap();
        let good = jetstream::new(good);
        for i in 0..4 {
            good.publish(
                format!("ferry.rx.{}.good.log.job{i}", ferry_tests::ORG),
                vec![b'g'; 256 * 1024].into(),
            )
            .await
            .unwrap()
            .await
            .unwrap();
        }
        // The flood: 512 KiB at a time until the hub stops taking it (64 MiB at most).
        let rogue = rogue(&nats, dir.path()).await;
        let js = jetstream::new(rogue.clone());
        let sent = flood(&js, 128).await;
        assert!(
            sent > 8 << 20,
            "the flood stopped at {sent} bytes, before the quota"
        );
        // Its live connection is closed, and a new one refused while it is throttled.
        let deadline = Instant::now() + Duration::from_secs(30);
        while rogue.connection_state() == async_nats::connection::State::Connected {
            assert!(
                Instant::now() < deadline,
                "the throttled install stays connected"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let again = nats
            .issue_install(ferry_tests::ORG, "rogue", &dir.path().join("rogue2"))
            .connect_options()
            .max_reconnects(Some(1))
            .connect(&nats.url);
        assert!(
            !matches!(
                tokio::time::timeout(Duration::from_secs(10), again).await,
                Ok(Ok(_))
            ),
            "a throttled install was admitted"
        );
        // What it sent is gone but for less than a quota; the honest install's lines stay.
        let filter = format!("ferry.rx.{}.rogue.>", ferry_tests::ORG);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = held(&nats, "LOGS", &filter).await * 512 * 1024;
            if left <= 8 << 20 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{left} bytes of rogue's junk kept"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let good_filter = format!("ferry.rx.{}.good.>", ferry_tests::ORG);
        assert_eq!(held(&nats, "LOGS", &good_filter).await, 4);
    });
    // The operator sees which install.
    let out = std::process::Command::new("curl")
        .args(["-s", "-m", "5"])
        .arg(format!("{api}/metrics"))
        .output()
        .unwrap();
    let body = String::from_utf8_lossy(&out.stdout);
    assert!(
        body.contains("ferry_install_quota_exceeded_total{org=\"default\",install=\"rogue\"} 1"),
        "{body}"
    );
    assert!(!body.contains("install=\"good\"} 1"), "{body}");
}

/// The leaf connections the hub has now.
async fn leafs(nats: &NatsServer) -> u64 {
    let sys = nats.connect_as(ferry_pki::hub::SYS_USER).await;
    let r = sys
        .request("$SYS.REQ.SERVER.PING.LEAFZ", "{}".into())
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&r.payload).unwrap();
    v["data"]["leafnodes"].as_u64().unwrap_or(0)
}

#[test]
fn a_throttled_installs_leaf_is_closed_and_kept_out() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _api) = Proc::server_with(
        &nats.url,
        dir.path().join("server.log"),
        &[
            "--install-quota-per-min",
            "4MiB",
            "--install-throttle-secs",
            "60",
        ],
    );
    let _runner = Proc::runner(
        &nats.url,
        "rogue",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let conf = dir.path().join("runner/leaf/nats.conf");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&conf).is_ok_and(|c| c.contains("listen: ")) {
        assert!(Instant::now() < deadline, "the runner's leaf never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (url, options) = ferry_tests::leaf_access(&conf).expect("the leaf's address and user");
    let rt = rt();
    rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(60);
        while leafs(&nats).await == 0 {
            assert!(
                Instant::now() < deadline,
                "the leaf never connected to the hub"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // Root on the runner's host reaches the leaf with the password in its configuration.
        let local = options
            .custom_inbox_prefix(ferry_protocol::subjects::install_inbox(
                ferry_tests::ORG,
                "rogue",
            ))
            .connect(url)
            .await
            .unwrap();
        let js = jetstream::with_domain(local, "hub");
        // Interest in the reply crosses the leaf a moment after the subscription: the first
        // publish is retried until the hub's stream answers.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let subject = format!("ferry.rx.{}.rogue.log.first", ferry_tests::ORG);
            if let Ok(ack) = js.publish(subject, b"x".to_vec().into()).await
                && let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(2), ack).await
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the hub's stream never answered through the leaf"
            );
        }
        let sent = flood(&js, 64).await;
        assert!(
            sent > 4 << 20,
            "the flood stopped at {sent} bytes, before the quota"
        );
        // The leaf's link is closed, and stays closed while the install is throttled.
        let deadline = Instant::now() + Duration::from_secs(30);
        while leafs(&nats).await > 0 {
            assert!(
                Instant::now() < deadline,
                "the throttled install's leaf stays connected"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(500)).await;
            assert_eq!(
                leafs(&nats).await,
                0,
                "the throttled install's leaf came back"
            );
        }
    });
    let log = std::fs::read_to_string(dir.path().join("server.log")).unwrap();
    assert!(log.contains("is throttled for another"), "{log}");
}

/// `curl` with a cookie jar; returns the status code and the body.
fn curl_jar(jar: &std::path::Path, args: &[&str]) -> (String, String) {
    let out = std::process::Command::new("curl")
        .args(["-s", "-m", "10", "-w", "\n%{http_code}", "-b"])
        .arg(jar)
        .arg("-c")
        .arg(jar)
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", ""));
    (code.to_string(), body.to_string())
}

/// The value of `name="csrf"` in a page.
fn csrf_in(page: &str) -> String {
    let at = page
        .find("name=\"csrf\" value=\"")
        .expect("a form with a CSRF token");
    let rest = &page[at + "name=\"csrf\" value=\"".len()..];
    rest[..rest.find('"').unwrap()].to_string()
}

#[test]
fn signing_out_of_the_dashboard_ends_the_session_the_cookie_names() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let token = ferry_tests::token_for(&api).unwrap();
    let jar = dir.path().join("jar");
    let (_, login) = curl_jar(&jar, &[&format!("{api}/ui/login")]);
    let form = format!("token={}&csrf={}", token, csrf_in(&login));
    let (code, _) = curl_jar(&jar, &["-d", &form, &format!("{api}/ui/login")]);
    assert_eq!(code, "303", "sign-in redirects");
    let cookies = std::fs::read_to_string(&jar).unwrap();
    let session = cookies
        .lines()
        .find(|l| l.contains("ferry_session"))
        .and_then(|l| l.split('\t').nth(6))
        .expect("a session cookie")
        .to_string();
    assert!(
        !session.contains(&token) && !token.contains(&session),
        "the cookie is the token"
    );
    let copy = format!("ferry_session={session}");
    let page = |cookie: &str| {
        let out = std::process::Command::new("curl")
            .args([
                "-s",
                "-m",
                "10",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "-H",
            ])
            .arg(format!("cookie: {cookie}"))
            .arg(format!("{api}/ui/installs"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    assert_eq!(page(&copy), "200");
    let (_, installs) = curl_jar(&jar, &[&format!("{api}/ui/installs")]);
    let (code, _) = curl_jar(
        &jar,
        &[
            "-d",
            &format!("csrf={}", csrf_in(&installs)),
            &format!("{api}/ui/logout"),
        ],
    );
    assert_eq!(code, "303");
    // A copy of the cookie kept from before the sign-out no longer signs in.
    assert_eq!(page(&copy), "303", "the session outlived its sign-out");
}

#[test]
fn an_install_renewing_its_certificate_over_and_over_gets_a_few() {
    use ferry_protocol::messages::{RenewReply, RenewRequest};
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let rt = rt();
    let (issued, refused) = rt.block_on(async {
        let client = rogue(&nats, dir.path()).await;
        let id = ferry_pki::InstallIdentity::new(ferry_tests::ORG, "rogue").unwrap();
        let subject = ferry_protocol::subjects::renew(ferry_tests::ORG, "rogue");
        let (mut issued, mut refused) = (0, Vec::new());
        for n in 0..40 {
            let files = ferry_pki::InstallFiles::new(&dir.path().join(format!("renew-{n}")));
            let csr = files.new_key_and_csr(&id).unwrap();
            let reply = client
                .request(
                    subject.clone(),
                    ferry_protocol::encode(&RenewRequest { csr }).into(),
                )
                .await
                .unwrap();
            match ferry_protocol::decode::<RenewReply>(&reply.payload).unwrap() {
                RenewReply::Issued { .. } => issued += 1,
                RenewReply::Refused { reason } => refused.push(reason),
            }
        }
        (issued, refused)
    });
    assert_eq!(issued, 8, "{refused:?}");
    assert_eq!(refused.len(), 32);
    assert!(
        refused[0].contains("renewed its certificate 8 times lately"),
        "{}",
        refused[0]
    );
    // Each issued certificate is recorded and audited; the refused ones are not.
    let renewed = nats
        .audit_events()
        .into_iter()
        .filter(|e| e.action == "install.certificate_renewed")
        .count();
    assert_eq!(renewed, 8);
}

/// `GET /healthz` on a new connection: whether it is answered within `within`.
fn healthz_answers(addr: &str, within: Duration) -> bool {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(within)).unwrap();
    write!(
        conn,
        "GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut first = [0u8; 12];
    conn.read_exact(&mut first).is_ok() && first.starts_with(b"HTTP/1.1 200")
}

#[test]
fn connections_past_the_cap_wait_until_one_closes_and_the_unit_leaves_room_for_them() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server_with(
        &nats.url,
        dir.path().join("server.log"),
        &[
            "--http-max-connections",
            "4",
            "--http-header-timeout-secs",
            "60",
        ],
    );
    let addr = api.trim_start_matches("http://").to_string();
    assert!(healthz_answers(&addr, Duration::from_secs(10)));
    // Four idle connections take every place (the one above may take a moment to be let go).
    std::thread::sleep(Duration::from_millis(500));
    let mut idle: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(&addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !healthz_answers(&addr, Duration::from_secs(2)),
        "served past the cap"
    );
    idle.pop();
    assert!(
        healthz_answers(&addr, Duration::from_secs(10)),
        "a freed place was not reused"
    );

    // The systemd unit lets the process hold far more descriptors than its connection cap.
    let unit =
        std::fs::read_to_string(repo_root().join("deploy/systemd/ferry-server.service")).unwrap();
    let nofile: u64 = unit
        .lines()
        .find_map(|l| l.strip_prefix("LimitNOFILE="))
        .expect("LimitNOFILE in the unit")
        .parse()
        .unwrap();
    assert!(
        nofile >= 4 * 4096,
        "LimitNOFILE={nofile} leaves no room above 4096 connections"
    );
}
