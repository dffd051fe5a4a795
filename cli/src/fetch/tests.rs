//! Real fetches: an HTTP server on a loopback port, a git repository made with `git`, files on disk.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use super::*;

/// Serves each connection the response `answer` gives for its request line; `None` holds the
/// connection open without answering.
fn serve(answer: fn(&str) -> Option<(u16, &'static str)>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut buf = [0u8; 4096];
            let n = conn.read(&mut buf).unwrap_or(0);
            let req = String::from_utf8_lossy(&buf[..n]).into_owned();
            let line = req.lines().next().unwrap_or_default().to_string();
            match answer(&line) {
                Some((status, body)) => {
                    let _ = write!(
                        conn,
                        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                }
                None => std::thread::sleep(Duration::from_secs(30)),
            }
        }
    });
    format!("http://{addr}")
}

fn answer(line: &str) -> Option<(u16, &'static str)> {
    if line.contains("/slow") {
        None
    } else if line.contains("/net.yaml") {
        Some((200, "kind: ConfigMap # from http\n"))
    } else {
        Some((404, "no"))
    }
}

fn write(dir: &Path, path: &str, text: &str) {
    let p = dir.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A repository (`.git` at its root) with the app in `app/` and a shared file in `shared/`.
fn repo_with_app(refs: &[(&str, &str)]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join(".git")).unwrap();
    write(
        root.path(),
        "shared/cm.yaml",
        "kind: ConfigMap # from file\n",
    );
    write(root.path(), "app/metadata.toml", "version = \"v2\"\n");
    for (name, url) in refs {
        write(
            root.path(),
            &format!("app/components/{name}.toml"),
            &format!(
                "name = \"{name}\"\ntype = \"kubernetes_manifest\"\nnamespace = \"x\"\nmanifest = \"{url}\"\n"
            ),
        );
    }
    root
}

fn git_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "k8s/cm.yaml", "kind: ConfigMap # from git\n");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@x",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "--quiet"]);
    git(&["add", "."]);
    git(&["commit", "--quiet", "-m", "cm"]);
    git(&["tag", "v1"]);
    dir
}

async fn sync(refs: &[(&str, &str)], limits: Limits) -> (Result<()>, Package) {
    let repo = repo_with_app(refs);
    let app = repo.path().join("app");
    let mut pkg = Package::from_dir(&app).unwrap();
    let remote = ferry_appconfig::validate(&pkg).remote;
    let r = fetch_remote(&mut pkg, &remote, &app, limits).await;
    (r, pkg)
}

fn quick() -> Limits {
    Limits {
        timeout: Duration::from_millis(500),
        ..Limits::default()
    }
}

#[tokio::test]
async fn http_git_and_file_references_are_fetched_into_the_package() {
    let http = format!("{}/net.yaml", serve(answer));
    let git = git_repo();
    let git_url = format!("git::file://{}//k8s/cm.yaml?ref=v1", git.path().display());
    // The file reference names the shared file by its real path inside the same repository.
    let repo = repo_with_app(&[("a", &http), ("b", &git_url)]);
    let shared = std::fs::canonicalize(repo.path().join("shared/cm.yaml")).unwrap();
    let file_url = format!("file://{}", shared.display());
    write(
        repo.path(),
        "app/components/c.toml",
        &format!(
            "name = \"c\"\ntype = \"kubernetes_manifest\"\nnamespace = \"x\"\nmanifest = \"{file_url}\"\n"
        ),
    );
    let app = repo.path().join("app");
    let mut pkg = Package::from_dir(&app).unwrap();
    let before = ferry_appconfig::validate(&pkg);
    assert_eq!(before.remote.len(), 3);

    fetch_remote(&mut pkg, &before.remote, &app, quick())
        .await
        .unwrap();
    for (url, text) in [
        (&http, "from http"),
        (&git_url, "from git"),
        (&file_url, "from file"),
    ] {
        let got = pkg.text(&remote_path(url)).unwrap_or_default();
        assert!(got.contains(text), "{url}: {got:?}");
    }
    let after = ferry_appconfig::validate(&pkg);
    assert!(after.remote.is_empty());
    assert!(after.config.is_some());
    assert!(
        !after
            .diagnostics
            .warnings()
            .any(|w| w.to_string().contains("remote reference")),
        "{}",
        after.diagnostics
    );
    // Validated once more, nothing is left to fetch.
    assert_eq!(ferry_appconfig::validate(&pkg).remote.len(), 0);
}

#[tokio::test]
async fn a_failed_fetch_fails_the_sync_naming_the_file_and_the_reason() {
    let base = serve(answer);
    let outside = tempfile::NamedTempFile::new().unwrap();
    let outside_url = format!("file://{}", outside.path().display());
    let cases: Vec<(String, &str)> = vec![
        (format!("{base}/missing.yaml"), "404"),
        (format!("{base}/slow"), "timed out after 500ms"),
        (outside_url, "outside the repository that holds the package"),
        (
            "git::file:///nonexistent/repo.git//a.yaml".into(),
            "git clone failed",
        ),
        (
            "git::https://example.invalid/repo.git".into(),
            "`git::URL//path/to/file`",
        ),
        (
            "git::file:///x//../etc/passwd".into(),
            "not a path inside the repository",
        ),
        (
            "gitlab.com/a/b".into(),
            "not a reference this version can fetch",
        ),
    ];
    for (url, want) in cases {
        let (r, _) = sync(&[("m", &url)], quick()).await;
        let err = format!("{:#}", r.expect_err(&url));
        assert!(
            err.starts_with(&format!("components/m.toml: fetching `{url}`")),
            "{url}: {err}"
        );
        assert!(err.contains(want), "{url}: want {want:?} in {err}");
    }
}

#[tokio::test]
async fn a_fetched_file_over_the_cap_is_refused() {
    let url = format!("{}/net.yaml", serve(answer));
    let limits = Limits {
        max_bytes: 8,
        ..quick()
    };
    let (r, _) = sync(&[("m", &url)], limits).await;
    assert!(format!("{:#}", r.unwrap_err()).contains("larger than 8 bytes"));
}

#[test]
fn git_references_split_repository_path_and_ref() {
    assert_eq!(
        GitRef::parse("https://github.com/acme/app.git//charts/values.yaml?ref=v1.2").unwrap(),
        GitRef {
            repo: "https://github.com/acme/app.git".into(),
            path: "charts/values.yaml".into(),
            reference: Some("v1.2".into()),
        }
    );
    assert_eq!(
        GitRef::parse("git@github.com:acme/app.git//a.yaml")
            .unwrap()
            .repo,
        "git@github.com:acme/app.git"
    );
    // A ref that git would read as an option is dropped.
    assert_eq!(
        GitRef::parse("https://h/r//a?ref=--upload-pack=x")
            .unwrap()
            .reference,
        None
    );
}
