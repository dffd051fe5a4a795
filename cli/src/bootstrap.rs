//! Getting a runner into an install: one-time bootstrap tokens and the runner bundle.
//!
//! A runner proves who it is with a certificate whose key it made itself. To get the certificate
//! it needs, once, a one-time token (`installs create` prints the first; `installs runner-token`
//! makes another). `installs runner-bundle` writes what a customer needs on the runner host: the
//! environment file with the hub's address and the token, a systemd unit, and how to start it.

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

/// Writes the runner bundle for `install` into `out` (created; existing files are replaced).
/// The hub's URL is `hub_url`, else the one the control plane hands out with the token; with
/// neither the bundle is refused rather than guessed (a wrong URL only shows on the runner host).
pub async fn runner_bundle(
    api: &Api,
    install: &str,
    out: &Path,
    hub_url: Option<&str>,
    data_dir: &Path,
) -> Result<()> {
    let token = runner_token(api, install).await?;
    let Some(hub_url) = hub_url.map(str::to_string).or(token.hub_url.clone()) else {
        anyhow::bail!(
            "the control plane does not know the hub's leafnode URL (ferry-server \
             --runner-hub-url): pass --hub-url tls://HOST:7422, the address runner hosts reach"
        );
    };
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let env = format!(
        "# ferry-runner for install {install}. Keep this file private: the token is a credential\n\
         # until the runner's first start (it can be used once, within {} minutes).\n\
         FERRY_NATS_URL={hub_url}\n\
         FERRY_API={api}\n\
         FERRY_INSTALL={install}\n\
         FERRY_RUNNER_DATA_DIR={data}\n\
         FERRY_BOOTSTRAP_TOKEN={token}\n",
        token.expires_in_secs / 60,
        api = api.base(),
        token = token.token,
        data = data_dir.display(),
    );
    let unit = format!(
        "[Unit]\n\
         Description=Ferry runner for install {install}\n\
         After=network-online.target\n\
         Wants=network-online.target\n\n\
         [Service]\n\
         EnvironmentFile=/etc/ferry/runner.env\n\
         ExecStart=/usr/local/bin/ferry-runner\n\
         Restart=always\n\
         RestartSec=2\n\
         KillMode=mixed\n\
         TimeoutStopSec=90\n\
         StateDirectory=ferry-runner\n\
         NoNewPrivileges=true\n\n\
         [Install]\n\
         WantedBy=multi-user.target\n"
    );
    let data = data_dir.display();
    let readme = format!(
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
         images; and, for an install registry (FERRY_REGISTRY), its credentials.\n\n\
         Install and start (as root):\n\
           install -m 0755 ferry-runner /usr/local/bin/ferry-runner\n\
           install -d -m 0700 /etc/ferry && install -m 0600 runner.env /etc/ferry/runner.env\n\
           install -m 0644 ferry-runner.service /etc/systemd/system/ferry-runner.service\n\
           systemctl daemon-reload && systemctl enable --now ferry-runner\n\n\
         Or in the foreground:\n\
           env $(grep -v '^#' runner.env | xargs) ferry-runner\n"
    );
    write(out, "runner.env", &env, 0o600)?;
    write(out, "ferry-runner.service", &unit, 0o644)?;
    write(out, "README.txt", &readme, 0o644)?;
    Ok(())
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
