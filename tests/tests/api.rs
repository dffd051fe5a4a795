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
