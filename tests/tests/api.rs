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
