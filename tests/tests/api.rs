//! The API under hostile input, against a real `ferry-server` and nats-server.

use std::process::Command;
use std::time::{Duration, Instant};

use ferry_tests::{NatsServer, Proc};

/// postcard's unsigned varint.
fn varint(mut n: usize, out: &mut Vec<u8>) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// A package bundle as `ferry apps sync` uploads it (postcard: a map of path to bytes), written
/// by hand as an attacker would.
fn bundle(files: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(files.len(), &mut out);
    for (path, bytes) in files {
        varint(path.len(), &mut out);
        out.extend_from_slice(path.as_bytes());
        varint(bytes.len(), &mut out);
        out.extend_from_slice(bytes);
    }
    out
}

/// Just under the 8 MiB file cap: 170k templated values naming inputs that do not exist, each one
/// a template to parse and a path to check (and the component lacks its `directory`, an error).
fn expensive_component() -> Vec<u8> {
    let mut text = String::from("name = \"wide\"\ntype = \"script\"\n[vars]\n");
    for i in 0..170_000 {
        text.push_str(&format!("k{i} = \"{{{{.nuon.inputs.inputs.x{i}}}}}\"\n"));
    }
    text.into_bytes()
}

#[test]
fn expensive_packages_are_validated_while_healthz_keeps_answering() {
    let nats = NatsServer::start();
    let (_server, api) = Proc::server(&nats.url, nats.dir.path().join("server.log"));
    let bearer = format!(
        "authorization: Bearer {}",
        ferry_tests::token_for(&api).unwrap()
    );
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("bundle");
    std::fs::write(
        &body,
        bundle(&[
            ("metadata.toml", b"version = \"v2\"\n".to_vec()),
            ("components/wide.toml", expensive_component()),
        ]),
    )
    .unwrap();

    // Two uploads at once: as many as this machine (and CI) has cores.
    let uploads: Vec<_> = (0..2)
        .map(|i| {
            Command::new("curl")
                .args(["-s", "-o"])
                .arg(dir.path().join(format!("response-{i}")))
                .args(["-w", "%{http_code}", "--data-binary"])
                .arg(format!("@{}", body.display()))
                .args(["-H", "content-type: application/octet-stream"])
                .args(["-H", &bearer])
                .arg(format!("{api}/v1/apps/wide/configs"))
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();

    // While they are validated, /healthz answers every time, each within curl's 2 s limit.
    let mut uploads: Vec<_> = uploads.into_iter().map(|c| (c, None)).collect();
    let mut answered_meanwhile = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while uploads.iter().any(|(_, done)| done.is_none()) {
        assert!(Instant::now() < deadline, "the uploads did not end");
        let health = Command::new("curl")
            .args(["-sf", "-m", "2", &format!("{api}/healthz")])
            .output()
            .unwrap();
        assert!(
            health.status.success(),
            "/healthz did not answer while packages were validated: {health:?}"
        );
        for (child, done) in uploads.iter_mut().filter(|(_, d)| d.is_none()) {
            *done = child.try_wait().unwrap();
        }
        if uploads.iter().any(|(_, done)| done.is_none()) {
            answered_meanwhile += 1;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        answered_meanwhile >= 3,
        "only {answered_meanwhile} health checks while uploads were in flight: the test proves nothing"
    );

    for (i, (upload, _)) in uploads.into_iter().enumerate() {
        let out = upload.wait_with_output().unwrap();
        let code = String::from_utf8_lossy(&out.stdout).into_owned();
        let response =
            std::fs::read_to_string(dir.path().join(format!("response-{i}"))).unwrap_or_default();
        // Refused with located diagnostics, or (on a slow machine) at the validation deadline.
        assert!(
            (code == "422" && response.contains("missing required key `directory`"))
                || (code == "400" && response.contains("longer than")),
            "upload {i}: {code} {response:.300}"
        );
    }
}

/// The small packages that once froze or crashed the server: each is refused with a located error,
/// and the server answers `/healthz` after each. (The component's `directory` is missing, an error,
/// so that the response lists every diagnostic: template problems alone are warnings, as in Nuon.)
#[test]
fn hostile_uploads_are_refused_with_located_errors() {
    let nats = NatsServer::start();
    let (_server, api) = Proc::server(&nats.url, nats.dir.path().join("server.log"));
    let bearer = format!(
        "authorization: Bearer {}",
        ferry_tests::token_for(&api).unwrap()
    );
    let dir = tempfile::tempdir().unwrap();
    let component = |value: &str| {
        format!(
            "name = \"c\"\ntype = \"script\"\ndirectory = \"missing\"\n[vars]\nv = \"{value}\"\n"
        )
        .into_bytes()
    };
    let loops = "{{range 100000}}{{range 100000}}{{range 100000}}{{$.nuon.install.id}}{{end}}{{end}}{{end}}";
    let nested = format!("{}x{}", "{{if .nuon}}".repeat(300), "{{end}}".repeat(300));
    let doubling = "{{$x := .nuon.install.id}}{{range 40}}{{$x = print $x $x $x $x}}{{end}}{{$x}}";
    type Files = Vec<(&'static str, Vec<u8>)>;
    let cases: Vec<(&str, Files, &str, &str)> = vec![
        (
            "three nested ranges",
            vec![("components/c.toml", component(loops))],
            "422",
            "evaluation takes more than 200000 steps",
        ),
        (
            "300 nested ifs",
            vec![("components/c.toml", component(&nested))],
            "422",
            "nested more than 100 deep",
        ),
        (
            "output doubling",
            vec![("components/c.toml", component(doubling))],
            "422",
            "larger than 1048576 bytes",
        ),
        (
            "a file over the cap",
            vec![("components/c.toml", vec![b'#'; 9 << 20])],
            "400",
            "components/c.toml: the file is larger than 8388608 bytes",
        ),
        (
            "a path out of the package",
            vec![("../../etc/passwd", b"x".to_vec())],
            "400",
            "file paths must be relative and inside the package",
        ),
    ];
    for (what, files, want_code, want) in cases {
        let mut files = files;
        files.push(("metadata.toml", b"version = \"v2\"\n".to_vec()));
        files.sort_by(|a, b| a.0.cmp(b.0));
        let body = dir.path().join("bundle");
        std::fs::write(&body, bundle(&files)).unwrap();
        let out = Command::new("curl")
            .args(["-s", "-w", "\n%{http_code}", "--data-binary"])
            .arg(format!("@{}", body.display()))
            .args(["-H", "content-type: application/octet-stream"])
            .args(["-H", &bearer])
            .arg(format!("{api}/v1/apps/hostile/configs"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (response, code) = text.rsplit_once('\n').unwrap_or_default();
        assert_eq!(code, want_code, "{what}: {response:.500}");
        assert!(
            response.contains(want),
            "{what}: want {want:?} in {response:.1000}"
        );
        if code == "422" {
            // Located: the diagnostic names the file and the value's line.
            let located = "\"file\":\"components/c.toml\",\"line\":5";
            assert!(response.contains(located), "{what}: {response:.1000}");
        }
        let health = Command::new("curl")
            .args(["-sf", "-m", "2", &format!("{api}/healthz")])
            .output()
            .unwrap();
        assert!(
            health.status.success(),
            "{what}: /healthz stopped answering"
        );
    }
}

/// Every route that takes a name or id in its path or a filter, with the method it answers.
const ROUTES: &[(&str, &str)] = &[
    ("GET", "/v1/apps/{}"),
    ("POST", "/v1/apps/{}/configs"),
    ("GET", "/v1/installs/{}"),
    ("DELETE", "/v1/installs/{}"),
    ("POST", "/v1/installs/{}/deploy"),
    ("POST", "/v1/installs/{}/reprovision"),
    ("POST", "/v1/installs/{}/teardown"),
    ("POST", "/v1/installs/{}/inputs"),
    ("POST", "/v1/installs/{}/runner-token"),
    ("POST", "/v1/installs/{}/revoke"),
    ("POST", "/v1/installs/{}/approve-all"),
    ("GET", "/v1/workflows/{}"),
    ("POST", "/v1/workflows/{}/cancel"),
    ("POST", "/v1/workflows/{}/approve"),
    ("POST", "/v1/workflows/{}/deny"),
    ("POST", "/v1/workflows/{}/retry"),
    ("POST", "/v1/workflows/{}/skip"),
    ("GET", "/v1/jobs/{}"),
    ("POST", "/v1/jobs/{}/cancel"),
    ("GET", "/v1/jobs/{}/plan"),
    ("GET", "/v1/jobs/{}/logs"),
    ("DELETE", "/v1/tokens/{}"),
    ("GET", "/v1/workflows?install={}"),
    ("GET", "/v1/approvals?install={}"),
    ("GET", "/v1/runners?install={}"),
];

/// `curl` as the hub's admin: the status and the body.
fn call(api: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let token = ferry_tests::token_for(api).expect("the admin token");
    let mut curl = Command::new("curl")
        .args(["-s", "--path-as-is", "-w", "\n%{http_code}", "-X", method])
        .args(["-H", &format!("Authorization: Bearer {token}")])
        .args([
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            "@-",
        ])
        .arg(format!("{api}{path}"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("curl");
    if let Some(mut stdin) = curl.stdin.take() {
        use std::io::Write;
        stdin.write_all(body.as_bytes()).expect("the request body");
    }
    let out = curl.wait_with_output().expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or_default();
    (status.parse().unwrap_or(0), body.to_string())
}

/// Ids that could never name a record are client errors on every route, answered before the store
/// is asked (the log route used to answer 503 for `*`).
#[test]
fn every_route_refuses_ids_that_name_nothing_as_a_client_error() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    ferry_tests::ferry(&api, &["tokens", "list"]);
    let long = "a".repeat(10_000);
    for (method, route) in ROUTES {
        for bad in ["*", "%3E", "..", &long] {
            let path = route.replace("{}", bad);
            let (status, body) = call(&api, method, &path, "{}");
            assert_eq!(status, 400, "{method} {path:.80}: {body:.300}");
            let error: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert!(
                error["error"].as_str().unwrap().contains("invalid"),
                "{body:.300}"
            );
            assert!(body.len() < 1_000, "the id is not echoed whole");
        }
        if route.contains("?") {
            continue;
        }
        let (status, body) = call(&api, method, &route.replace("{}", ""), "{}");
        assert!(
            (400..500).contains(&status),
            "{method} {route} with an empty id: {status} {body}"
        );
    }
}

/// Inputs too large for an install record are a 413 that says the limit, not a 503 a client
/// would retry for ever.
#[test]
fn inputs_too_large_for_the_store_are_413_with_the_limit() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    ferry_tests::sync_hello(&api, &ferry_tests::repo_root().join("examples/hello"));
    let body = serde_json::json!({
        "app": "hello",
        "name": "big",
        "inputs": { "greeting": "x".repeat(2 << 20) },
    });
    let (status, reply) = call(&api, "POST", "/v1/installs", &body.to_string());
    assert_eq!(status, 413, "{reply}");
    assert!(
        reply.contains(&ferry_model::MAX_INPUTS_BYTES.to_string()),
        "{reply}"
    );
}

/// axum's own rejections (not JSON: 415; JSON of the wrong shape: 422; a wrong method: 405)
/// come back as the same `{"error": ...}` JSON as every other error.
#[test]
fn framework_rejections_are_json_errors_too() {
    let nats = NatsServer::start();
    let (_server, api) = Proc::server(&nats.url, nats.dir.path().join("server.log"));
    let bearer = format!(
        "authorization: Bearer {}",
        ferry_tests::token_for(&api).unwrap()
    );
    let call = |method: &str, content_type: &str, body: &str| {
        let out = Command::new("curl")
            .args(["-s", "-w", "\n%{http_code}", "-X", method])
            .args([
                "-H",
                &bearer,
                "-H",
                &format!("content-type: {content_type}"),
            ])
            .args(["--data-binary", body])
            .arg(format!("{api}/v1/installs"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let (body, code) = text.rsplit_once('\n').unwrap();
        (code.to_string(), body.to_string())
    };
    for (method, content_type, body, want) in [
        ("POST", "text/plain", "name=x", "415"),
        ("POST", "application/json", "{\"name\": 3}", "422"),
        ("POST", "application/json", "{not json", "400"),
        ("PUT", "application/json", "{}", "405"),
    ] {
        let (code, text) = call(method, content_type, body);
        assert_eq!(code, want, "{method} {content_type} {body}: {text}");
        let json: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{want} is not JSON ({e}): {text}"));
        let error = json["error"].as_str().unwrap_or_default();
        assert!(!error.is_empty(), "{want}: {text}");
    }
}
