//! Fetching a package's remote file references at sync (docs/app-config.md, "File references").
//!
//! Nuon fetches `http(s)://`, `git::URL//path` and `file://` references when an app is synced, and
//! a failed fetch fails the sync. Ferry does the same here, in the CLI, before the upload: the
//! fetched bytes go into the package at [`remote_path`], so the control plane validates and deploys
//! exactly what was fetched, never reaches the network for it, and never sees the URL as text.
//!
//! Each fetch has a deadline ([`Limits::timeout`], 5 s as in Nuon) and a size cap (a package file's
//! cap). `file://` references must stay inside the repository that holds the package, like links.
//! Git references are fetched with the `git` command (a shallow clone into a temporary directory):
//! it already speaks every transport and credential helper the user has set up, which no crate
//! would give us.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use ferry_appconfig::{MAX_FILE_BYTES, Package, Remote, remote_path, repository_root};
use futures_util::StreamExt;

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    pub max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(5),
            max_bytes: MAX_FILE_BYTES,
        }
    }
}

/// Fetches the remote references `remote` (found by validating `pkg`, read from `dir`) into the
/// package. The first failure is the error, naming the file that holds the reference.
pub async fn fetch_remote(
    pkg: &mut Package,
    remote: &[Remote],
    dir: &Path,
    limits: Limits,
) -> Result<()> {
    let boundary = repository_root(&std::fs::canonicalize(dir)?);
    for r in remote {
        let bytes = tokio::time::timeout(limits.timeout, fetch_one(&r.url, &boundary, limits))
            .await
            .map_err(|_| anyhow!("timed out after {:?}", limits.timeout))
            .and_then(|r| r)
            .with_context(|| describe(r))?;
        pkg.files.insert(remote_path(&r.url), bytes);
    }
    Ok(())
}

fn describe(r: &Remote) -> String {
    format!("{}: fetching `{}`", r.file, r.url)
}

async fn fetch_one(url: &str, boundary: &Path, limits: Limits) -> Result<Vec<u8>> {
    if url.starts_with("http://") || url.starts_with("https://") {
        http(url, limits).await
    } else if let Some(path) = url.strip_prefix("file://") {
        let (path, boundary) = (PathBuf::from(path), boundary.to_path_buf());
        tokio::task::spawn_blocking(move || file(&path, &boundary, limits)).await?
    } else if let Some(rest) = url.strip_prefix("git::") {
        git(&GitRef::parse(rest)?, limits).await
    } else if url.starts_with("github.com/") {
        // go-getter reads `github.com/owner/repo//path` as a git repository on GitHub.
        git(&GitRef::parse(&format!("https://{url}"))?, limits).await
    } else {
        bail!(
            "not a reference this version can fetch: use `https://`, `git::URL//path` or `file://`"
        )
    }
}

async fn http(url: &str, limits: Limits) -> Result<Vec<u8>> {
    // `ferry` installs it at start; installing again is a no-op, and keeps this usable on its own.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let resp = reqwest::Client::builder()
        .build()?
        .get(url)
        .send()
        .await?
        .error_for_status()?;
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        body.extend_from_slice(&chunk?);
        if body.len() as u64 > limits.max_bytes {
            bail!("larger than {} bytes", limits.max_bytes);
        }
    }
    Ok(body)
}

/// A local file, only inside the repository holding the package (the same boundary as links).
fn file(path: &Path, boundary: &Path, limits: Limits) -> Result<Vec<u8>> {
    if !path.is_absolute() {
        bail!("a `file://` reference needs an absolute path (`file:///...`)");
    }
    let real = std::fs::canonicalize(path).with_context(|| path.display().to_string())?;
    if !real.starts_with(boundary) {
        bail!(
            "{} is outside the repository that holds the package ({})",
            real.display(),
            boundary.display()
        );
    }
    read_regular(&real, limits)
}

fn read_regular(path: &Path, limits: Limits) -> Result<Vec<u8>> {
    let meta = std::fs::metadata(path).with_context(|| path.display().to_string())?;
    if !meta.is_file() {
        bail!("{} is not a regular file", path.display());
    }
    if meta.len() > limits.max_bytes {
        bail!(
            "{} is larger than {} bytes",
            path.display(),
            limits.max_bytes
        );
    }
    std::fs::read(path).with_context(|| path.display().to_string())
}

/// `URL//path/in/repo?ref=REF` (go-getter's git form).
#[derive(Debug, PartialEq, Eq)]
struct GitRef {
    repo: String,
    path: String,
    reference: Option<String>,
}

impl GitRef {
    fn parse(s: &str) -> Result<GitRef> {
        let (s, reference) = match s.split_once("?ref=") {
            Some((s, r)) if !r.is_empty() => (s, Some(r.to_string())),
            _ => (s, None),
        };
        // The `//` that separates repository and path is the first one after the scheme's.
        let after_scheme = s.find("://").map_or(0, |i| i + 3);
        let Some(i) = s[after_scheme..].find("//") else {
            bail!("a git reference names a file: `git::URL//path/to/file`");
        };
        let (repo, path) = (&s[..after_scheme + i], &s[after_scheme + i + 2..]);
        if path.is_empty() || path.split('/').any(|p| p == "..") {
            bail!("`{path}` is not a path inside the repository");
        }
        Ok(GitRef {
            repo: repo.to_string(),
            path: path.to_string(),
            reference: reference.filter(|r| !r.starts_with('-')),
        })
    }
}

async fn git(r: &GitRef, limits: Limits) -> Result<Vec<u8>> {
    let tmp = tempfile::tempdir()?;
    let checkout = tmp.path().join("repo");
    let mut cmd = tokio::process::Command::new("git");
    cmd.args(["clone", "--quiet", "--depth", "1"]);
    if let Some(reference) = &r.reference {
        cmd.args(["--branch", reference]);
    }
    // `--` so that a repository URL can never be read as an option.
    cmd.arg("--").arg(&r.repo).arg(&checkout);
    let out = cmd
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .context("running git (is it installed?)")?;
    if !out.status.success() {
        bail!(
            "git clone failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let path = r.path.clone();
    tokio::task::spawn_blocking(move || {
        let root = std::fs::canonicalize(&checkout)?;
        let real = std::fs::canonicalize(root.join(&path))
            .with_context(|| format!("`{path}` is not in the repository"))?;
        if !real.starts_with(&root) {
            bail!("`{path}` links outside the repository");
        }
        let bytes = read_regular(&real, limits);
        drop(tmp);
        bytes
    })
    .await?
}

#[cfg(test)]
mod tests;
