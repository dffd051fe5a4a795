//! `dispatch --leaf`: simulated installs behind real leaf nats-servers — each started by the
//! runner's own code (`ferry_runner::leaf`), with the install's certificate from Ferry's CA,
//! admitted by the real auth callout — so the dispatch figures cover the path every install
//! uses: doorbells into the leaf, claims out of it.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures_util::StreamExt;

use crate::{Install, ORG};

/// What must live while the leaf installs are used: the leaves and their directories.
pub struct Kept {
    _leaves: Vec<ferry_runner::leaf::Leaf>,
    dir: tempfile::TempDir,
}

impl Kept {
    /// Where the leaves' configurations and stores are.
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }
}

/// Serves the hub's auth callout in this process (as the api service does), and waits until the
/// server can reach it.
pub async fn serve_callout(
    hub: &ferry_tests::NatsServer,
    store: &ferry_store::Store,
) -> Result<()> {
    let services = hub
        .hub
        .credentials(ferry_pki::hub::SERVICES_USER)?
        .connect_options()
        .connect(&hub.url)
        .await?;
    let key = hub.hub.callout_key()?;
    tokio::spawn(ferry_api::callout::serve(
        services,
        key,
        store.clone(),
        ferry_api::callout::Admitted::default(),
        ferry_store::Tasks::default(),
    ));
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(())
}

/// `n` installs, each with its certificate and its leaf, and its runner's connection to it.
pub async fn installs(
    hub: &ferry_tests::NatsServer,
    store: &ferry_store::Store,
    n: usize,
) -> Result<(Vec<Install>, Kept)> {
    serve_callout(hub, store).await?;
    let dir = tempfile::tempdir()?;
    let run = ferry_model::new_id();
    let started = Instant::now();
    let mut leaves = Vec::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let name = format!("leaf{i}-{}", &run[20..]);
        let (leaf, install) = leaf_install(hub, ORG, &name, &dir.path().join(&name)).await?;
        leaves.push(leaf);
        out.push(install);
    }
    // Each leaf's link to the hub is up once a request through it is answered.
    let hub_client = hub
        .hub
        .credentials(ferry_pki::hub::SERVICES_USER)?
        .connect_options()
        .connect(&hub.url)
        .await?;
    for i in &out {
        request_reply(&hub_client, i, 1).await?;
    }
    println!(
        "{n} installs, each behind its own leaf nats-server, linked to the hub in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok((
        out,
        Kept {
            _leaves: leaves,
            dir,
        },
    ))
}

/// Install `name` of `org`: its certificate issued into `home`, its leaf started (the runner's
/// own code) and its runner's connection to the leaf, with the install's inbox prefix.
pub async fn leaf_install(
    hub: &ferry_tests::NatsServer,
    org: &str,
    name: &str,
    home: &std::path::Path,
) -> Result<(ferry_runner::leaf::Leaf, Install)> {
    let creds = ferry_tests::issue_install(&hub.hub.dir, org, name, &home.join("identity"));
    let leaf = ferry_runner::leaf::start(ferry_runner::leaf::LeafConfig {
        binary: ferry_runner::leaf::find_binary(Some(&ferry_tests::nats_server_bin()))?,
        hub: hub.leaf_url.clone(),
        install: name.to_string(),
        dir: home.join("leaf"),
        identity: ferry_pki::InstallFiles::new(&home.join("identity")),
    })
    .await
    .with_context(|| format!("starting {name}'s leaf"))?;
    let client = leaf
        .connect_options()
        .custom_inbox_prefix(creds.inbox_prefix.clone().unwrap_or_default())
        .connect(&leaf.url)
        .await?;
    let install = Install {
        name: name.to_string(),
        client,
    };
    Ok((leaf, install))
}

/// p99 of `count` request-reply round trips from `install`'s runner, through its leaf, to a
/// responder on the hub: the subject is one of the install's own (`ferry.rx.<org>.<install>.…`),
/// the reply comes back to its own inbox.
pub async fn request_reply(
    hub: &async_nats::Client,
    install: &Install,
    count: usize,
) -> Result<Duration> {
    request_reply_in(hub, ORG, install, count).await
}

/// [`request_reply`] for an install of `org`.
pub async fn request_reply_in(
    hub: &async_nats::Client,
    org: &str,
    install: &Install,
    count: usize,
) -> Result<Duration> {
    let subject = format!("ferry.rx.{org}.{}.bench", install.name);
    let mut sub = hub.subscribe(subject.clone()).await?;
    hub.flush().await?;
    let responder_client = hub.clone();
    let responder = tokio::spawn(async move {
        while let Some(msg) = sub.next().await {
            if let Some(reply) = msg.reply {
                let _ = responder_client.publish(reply, msg.payload).await;
            }
        }
    });
    // Interest crosses the leaf link asynchronously: ask until it answers.
    let deadline = Instant::now() + Duration::from_secs(30);
    while install
        .client
        .request(subject.clone(), "ping".into())
        .await
        .is_err()
    {
        if Instant::now() > deadline {
            bail!("{}'s leaf never answered through the hub", install.name);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut times = Vec::with_capacity(count);
    for _ in 0..count {
        let t = Instant::now();
        install
            .client
            .request(subject.clone(), "ping".into())
            .await?;
        times.push(t.elapsed());
    }
    responder.abort();
    times.sort();
    Ok(times[(times.len() * 99 / 100).min(times.len() - 1)])
}

/// Answers every install's `bench` requests (`ferry.rx.<org>.*.bench`) on the hub, until aborted.
pub async fn answer_all(hub: &async_nats::Client) -> Result<tokio::task::JoinHandle<()>> {
    let mut sub = hub.subscribe(format!("ferry.rx.{ORG}.*.bench")).await?;
    hub.flush().await?;
    let client = hub.clone();
    Ok(tokio::spawn(async move {
        while let Some(msg) = sub.next().await {
            if let Some(reply) = msg.reply {
                let _ = client.publish(reply, msg.payload).await;
            }
        }
    }))
}

/// Asks through `install`'s leaf until the hub answers (its link is up and admitted again);
/// how long that took.
pub async fn until_answered(install: &Install, within: Duration) -> Result<Duration> {
    let t = Instant::now();
    let subject = format!("ferry.rx.{ORG}.{}.bench", install.name);
    loop {
        let ask = install.client.request(subject.clone(), "ping".into());
        if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(1), ask).await {
            return Ok(t.elapsed());
        }
        if t.elapsed() > within {
            bail!(
                "{}'s leaf was not admitted again within {within:?}",
                install.name
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
