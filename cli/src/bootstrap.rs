//! Getting a runner into an install: one-time bootstrap tokens and the runner bundle.
//!
//! A runner proves who it is with a certificate whose key it made itself. To get the certificate
//! it needs, once, a one-time token (`installs create` prints the first; `installs runner-token`
//! makes another). `installs runner-bundle` writes what a customer needs on the runner host: the
//! environment file with the hub's address and the token, a systemd unit, and how to start it;
//! for the install stack (`--for-stack`), no token (the stack holds it) and the `install.sh` its
//! user data runs, packed as the `.tar.gz` the stack fetches (`--archive`).

use std::path::Path;

use anyhow::{Context, Result};
use ferry_model::api::RunnerToken;
use ferry_model::ops;

use ferry_client::Client as Api;

/// A new one-time token for a runner of `install`.
pub async fn runner_token(api: &Api, install: &str) -> Result<RunnerToken> {
    Ok(api.run::<ops::RunnerTokenOp>(&[install]).await?)
}

/// `installs runner-token`: a new one-time token, printed alone on stdout (for scripts), with how
/// to use it on stderr.
pub async fn print_runner_token(api: &Api, install: &str, json: bool) -> Result<i32> {
    let t = runner_token(api, install).await?;
    if json {
        crate::commands::print_json(&t)?;
    } else {
        println!("{}", t.token);
        eprintln!(
            "one-time runner token for install {install}, valid {} minutes: ferry-runner --bootstrap TOKEN --api {}",
            t.expires_in_secs / 60,
            api.base()
        );
    }
    Ok(0)
}

/// `installs revoke`: the install's certificates revoked and its live connections closed.
pub async fn revoke(api: &Api, install: &str, json: bool) -> Result<i32> {
    let r = api.run::<ops::RevokeRunners>(&[install]).await?;
    if json {
        crate::commands::print_json(&r)?;
    } else {
        println!(
            "install {install}: {} certificate(s) revoked, {} connection(s) closed",
            r.certificates.len(),
            r.connections_closed
        );
    }
    Ok(0)
}

/// What goes into a runner bundle beyond its environment file, unit and README.
#[derive(Debug, Default)]
pub struct BundleOptions {
    /// For the install stack's host: no token in `runner.env` (the stack keeps it in Secrets
    /// Manager and the user data hands its file to `install.sh`), and `install.sh` added.
    pub for_stack: bool,
    /// Files copied in (`ferry-runner`, `nats-server`, the tools components need).
    pub binaries: Vec<std::path::PathBuf>,
    /// Also packed as this `.tar.gz`, whose sha256 is printed: what `installs stack
    /// --bundle-url/--bundle-sha256` name.
    pub archive: Option<std::path::PathBuf>,
}

/// The runner host's firewall for its jobs (`deploy/runner/ferry-jobs-firewall`): the systemd
/// unit runs it before each start of the runner.
const JOBS_FIREWALL: &str = include_str!("../../deploy/runner/ferry-jobs-firewall");

/// What `install.sh` does (the install stack's user data runs it as root, from the unpacked
/// bundle): install the binaries and the environment, then start the runner under systemd;
/// with `FERRY_ROOT` (a scratch directory) everything goes under it and the runner is started
/// in the background instead, which is how it is tested.
const INSTALL_SH: &str = r#"#!/bin/sh
# Installs and starts this install's Ferry runner. Run as root by the install stack's user data:
#   FERRY_BOOTSTRAP_TOKEN_FILE  the one-time token (read from Secrets Manager)
#   FERRY_STACK_NAME, FERRY_STACK_REGION  the install stack: the runner reports it, reads the
#       install's secrets' status and runs each job as the role of its operation
#   FERRY_ROOT  install under this directory instead of / (no systemd: started in the background)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root="${FERRY_ROOT:-}"
install -d -m 0755 "$root/usr/local/bin"
install -d -m 0700 "$root/etc/ferry" "$root/var/lib/ferry-runner"
for f in "$here"/bin/*; do
  [ -f "$f" ] && install -m 0755 "$f" "$root/usr/local/bin/$(basename "$f")"
done
install -m 0755 "$here/ferry-jobs-firewall" "$root/usr/local/bin/ferry-jobs-firewall"
if [ -z "$root" ]; then
  # Each job runs in a bubblewrap sandbox as the ferry-job user, which may not reach the
  # instance metadata service (ferry-jobs-firewall, run before each start of the runner).
  if ! command -v bwrap >/dev/null 2>&1 || ! command -v nft >/dev/null 2>&1; then
    if command -v dnf >/dev/null 2>&1; then dnf install -y bubblewrap nftables
    elif command -v apt-get >/dev/null 2>&1; then apt-get update -qq && apt-get install -y -qq bubblewrap nftables
    fi
  fi
  id -u ferry-job >/dev/null 2>&1 ||
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin ferry-job
fi
env="$root/etc/ferry/runner.env"
umask 077
cp "$here/runner.env" "$env"
for v in FERRY_BOOTSTRAP_TOKEN_FILE FERRY_STACK_NAME FERRY_STACK_REGION FERRY_STACK_ENDPOINT; do
  eval "val=\${$v:-}"
  [ -n "$val" ] && echo "$v=$val" >> "$env"
done
if [ -n "$root" ]; then
  echo "FERRY_RUNNER_DATA_DIR=$root/var/lib/ferry-runner" >> "$env"
fi
if [ -z "$root" ] && command -v systemctl >/dev/null 2>&1; then
  install -m 0644 "$here/ferry-runner.service" /etc/systemd/system/ferry-runner.service
  systemctl daemon-reload
  systemctl enable --now ferry-runner
else
  set -a
  . "$env"
  set +a
  PATH="$root/usr/local/bin:$PATH" nohup "$root/usr/local/bin/ferry-runner" \
    > "$root/var/lib/ferry-runner/runner.log" 2>&1 &
  echo $! > "$root/var/lib/ferry-runner/runner.pid"
fi
echo "ferry-runner installed for install $FERRY_INSTALL"
"#;

/// Writes the runner bundle for `install` into `out` (created; existing files are replaced).
/// The hub's URL is `hub_url`, else the one the control plane hands out with the token; with
/// neither the bundle is refused rather than guessed (a wrong URL only shows on the runner host).
pub async fn runner_bundle(
    api: &Api,
    install: &str,
    out: &Path,
    hub_url: Option<&str>,
    data_dir: &Path,
    opts: &BundleOptions,
) -> Result<()> {
    let token = runner_token(api, install).await?;
    let Some(hub_url) = hub_url.map(str::to_string).or(token.hub_url.clone()) else {
        anyhow::bail!(
            "the control plane does not know the hub's leafnode URL (ferry-server \
             --runner-hub-url): pass --hub-url tls://HOST:7422, the address runner hosts reach"
        );
    };
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let credential = if opts.for_stack {
        "# The one-time token is not here: the install stack keeps it in Secrets Manager and its\n\
         # user data gives install.sh its file (FERRY_BOOTSTRAP_TOKEN_FILE).\n"
            .to_string()
    } else {
        format!(
            "# Keep this file private: the token is a credential until the runner's first start\n\
             # (it can be used once, within {} minutes).\n\
             FERRY_BOOTSTRAP_TOKEN={}\n",
            token.expires_in_secs / 60,
            token.token
        )
    };
    let env = format!(
        "# ferry-runner for install {install}.\n\
         {credential}\
         FERRY_NATS_URL={hub_url}\n\
         FERRY_API={api}\n\
         FERRY_INSTALL={install}\n\
         FERRY_RUNNER_DATA_DIR={data}\n",
        api = api.base(),
        data = data_dir.display(),
    );
    write(out, "runner.env", &env, 0o600)?;
    write(out, "ferry-runner.service", &unit(install), 0o644)?;
    write(out, "ferry-jobs-firewall", JOBS_FIREWALL, 0o755)?;
    write(
        out,
        "README.txt",
        &readme(install, &hub_url, data_dir),
        0o644,
    )?;
    if opts.for_stack {
        write(out, "install.sh", INSTALL_SH, 0o755)?;
        // The token this made is the one the stack needs (a token is made per bundle).
        eprintln!(
            "the install stack's BootstrapToken (usable once, within {} minutes): {}",
            token.expires_in_secs / 60,
            token.token
        );
    }
    copy_binaries(out, &opts.binaries)?;
    if let Some(archive) = &opts.archive {
        let sha = pack(out, archive)?;
        println!("{sha}  {}", archive.display());
        eprintln!(
            "publish it where runner hosts can fetch it, then: ferry installs stack {install} \
             --bundle-url URL --bundle-sha256 {sha}"
        );
    }
    Ok(())
}

fn unit(install: &str) -> String {
    format!(
        "[Unit]\n\
         Description=Ferry runner for install {install}\n\
         After=network-online.target\n\
         Wants=network-online.target\n\n\
         [Service]\n\
         EnvironmentFile=/etc/ferry/runner.env\n\
         ExecStartPre=+/usr/local/bin/ferry-jobs-firewall\n\
         ExecStart=/usr/local/bin/ferry-runner\n\
         Restart=always\n\
         RestartSec=2\n\
         KillMode=mixed\n\
         TimeoutStopSec=90\n\
         Delegate=yes\n\
         StateDirectory=ferry-runner\n\
         NoNewPrivileges=true\n\n\
         [Install]\n\
         WantedBy=multi-user.target\n"
    )
}

fn readme(install: &str, hub_url: &str, data_dir: &Path) -> String {
    let data = data_dir.display();
    format!(
        "Ferry runner for install {install}\n\n\
         The runner opens no port. It starts a nats-server beside it (put the nats-server binary\n\
         next to ferry-runner, or on PATH), which makes the one outbound connection, to\n\
         {hub_url}, and keeps the runner's events on disk while the hub is out of reach.\n\
         (FERRY_DIRECT=true connects the runner itself instead, to the hub's client port.)\n\
         On its first start it makes its private key in {data}/identity (the key\n\
         never leaves this host), trades the one-time token in runner.env for its certificate,\n\
         and from then on uses only the certificate.\n\n\
         The host needs: ferry-runner and nats-server (2.10 or newer), outbound access to\n\
         {hub_url}, and the tools the app's components run: sh for scripts, terraform for\n\
         terraform_module components, helm for helm_chart and kubectl for kubernetes_manifest and\n\
         job components (on PATH, or FERRY_HELM / FERRY_KUBECTL), with the cluster's credentials\n\
         from the sandbox or FERRY_KUBECONFIG; outbound HTTPS to the registries of the app's\n\
         images; for an install registry (FERRY_REGISTRY), its credentials; bubblewrap, in\n\
         which each job runs as the unprivileged ferry-job user; and nftables or iptables, with\n\
         which ferry-jobs-firewall keeps that user from the instance metadata service.\n\n\
         Install and start (as root):\n\
           useradd --system --no-create-home --shell /usr/sbin/nologin ferry-job\n\
           install -m 0755 ferry-runner /usr/local/bin/ferry-runner\n\
           install -d -m 0700 /etc/ferry && install -m 0600 runner.env /etc/ferry/runner.env\n\
           install -m 0755 ferry-jobs-firewall /usr/local/bin/ferry-jobs-firewall\n\
           install -m 0644 ferry-runner.service /etc/systemd/system/ferry-runner.service\n\
           systemctl daemon-reload && systemctl enable --now ferry-runner\n\n\
         Or in the foreground:\n\
           env $(grep -v '^#' runner.env | xargs) ferry-runner\n\n\
         A bundle made with --for-stack is installed by the install stack's user data, which\n\
         runs install.sh (binaries from bin/, the environment, the systemd unit).\n"
    )
}

/// Copies each binary into `out/bin`.
fn copy_binaries(out: &Path, binaries: &[std::path::PathBuf]) -> Result<()> {
    if binaries.is_empty() {
        return Ok(());
    }
    let bin = out.join("bin");
    std::fs::create_dir_all(&bin).with_context(|| format!("creating {}", bin.display()))?;
    for b in binaries {
        let name = b
            .file_name()
            .with_context(|| format!("{} names no file", b.display()))?;
        std::fs::copy(b, bin.join(name)).with_context(|| format!("copying {}", b.display()))?;
    }
    Ok(())
}

/// Packs `dir`'s files as the `.tar.gz` `archive` (paths relative to `dir`, modes kept) and
/// returns its sha256 in hex.
fn pack(dir: &Path, archive: &Path) -> Result<String> {
    use sha2::Digest;
    let file = std::fs::File::create(archive)
        .with_context(|| format!("creating {}", archive.display()))?;
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    tar.follow_symlinks(false);
    tar.append_dir_all(".", dir)
        .with_context(|| format!("packing {}", dir.display()))?;
    tar.into_inner()
        .and_then(|gz| gz.finish())
        .with_context(|| format!("writing {}", archive.display()))?;
    let bytes = std::fs::read(archive).with_context(|| format!("reading {}", archive.display()))?;
    Ok(format!("{:x}", sha2::Sha256::digest(&bytes)))
}

fn write(dir: &Path, name: &str, text: &str, mode: u32) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}
