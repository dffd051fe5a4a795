//! Why the install's link to the hub is down, in the runner's own words.
//!
//! In leaf mode the hub connection belongs to the leaf nats-server, so its failures — a wrong hub
//! URL, a refused certificate, a TLS mismatch — show only in the leaf's log, while the runner sees
//! nothing but "no responders". This watcher reads the leaf's log as it grows, and reports each
//! change of the link's state once, with what to do about it.

use std::path::PathBuf;
use std::time::Duration;

use tracing::{info, warn};

/// The link's state, as the leaf's log shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    Connected,
    /// The hub closed the connection after the handshake: its auth callout refused the
    /// certificate.
    Refused,
    /// No connection to the hub's leafnode port (the reason as the leaf gives it).
    Unreachable(String),
    /// The TLS handshake failed.
    Tls(String),
}

/// What one line of the leaf's log says about the link, if anything.
pub fn classify(line: &str) -> Option<Link> {
    if line.contains("Leafnode Error 'Authorization Violation'") {
        return Some(Link::Refused);
    }
    if line.contains("JetStream using domains") {
        return Some(Link::Connected);
    }
    if !line.contains("[ERR]") {
        return None;
    }
    let detail = line
        .rsplit_once("): ")
        .map_or(line, |(_, d)| d)
        .trim()
        .to_string();
    let lower = line.to_lowercase();
    if lower.contains("tls") || lower.contains("x509") || lower.contains("certificate") {
        return Some(Link::Tls(detail));
    }
    if line.contains("Error trying to connect as leafnode") {
        return Some(Link::Unreachable(detail));
    }
    None
}

/// The runner's report of `link`: what is wrong and what to do.
pub fn advice(link: &Link, hub: &str, install: &str) -> String {
    match link {
        Link::Connected => format!("connected to the hub at {hub}"),
        Link::Refused => format!(
            "the hub refuses install {install}'s certificate: the install was revoked or deleted \
             (issue a new token with `ferry installs runner-token {install}` and start the runner \
             with --bootstrap), or the control plane's api, which admits runners, is not running"
        ),
        Link::Unreachable(why) => format!(
            "cannot reach the hub's leafnode port at {hub} ({why}): check --nats-url and that the \
             network lets this host connect out to it"
        ),
        Link::Tls(why) => format!(
            "the TLS handshake with the hub at {hub} failed ({why}): --nats-url must be the hub's \
             leafnode URL (tls://HOST:7422) and the identity's CA the hub's"
        ),
    }
}

/// What [`watch`] follows and reports on.
pub struct Watch {
    /// The leaf's log, and where the leaf's current start began writing in it.
    pub log: PathBuf,
    pub offset: u64,
    pub hub: String,
    pub install: String,
    /// Refused without a break this long, the watcher gives up: it says why on `gave_up`.
    pub give_up_after: Option<Duration>,
    /// Where the link's state is counted for the runner's metrics.
    pub stats: std::sync::Arc<crate::stats::Stats>,
}

/// Follows the leaf's log and reports each change of the link's state; gives up (once) when the
/// hub refuses the install's certificate longer than allowed.
pub async fn watch(w: Watch, gave_up: tokio::sync::watch::Sender<Option<String>>) {
    let Watch {
        log,
        mut offset,
        hub,
        install,
        give_up_after,
        stats,
    } = w;
    let mut last: Option<Link> = None;
    let mut refused_since: Option<tokio::time::Instant> = None;
    loop {
        if let (Some(since), Some(limit)) = (refused_since, give_up_after)
            && since.elapsed() >= limit
        {
            let why = format!(
                "{} — refused for {}s without a break",
                advice(&Link::Refused, &hub, &install),
                limit.as_secs()
            );
            tracing::error!("{why}: stopping");
            let _ = gave_up.send(Some(why));
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let Ok(text) = tokio::fs::read(&log).await else {
            continue;
        };
        let len = text.len() as u64;
        if len < offset {
            offset = 0;
        }
        let fresh = String::from_utf8_lossy(&text[offset as usize..]).into_owned();
        offset = len;
        let Some(now) = fresh.lines().rev().find_map(classify) else {
            continue;
        };
        stats.link(now == Link::Connected);
        refused_since = match (&now, refused_since) {
            (Link::Refused, Some(since)) => Some(since),
            (Link::Refused, None) => Some(tokio::time::Instant::now()),
            _ => None,
        };
        if last.as_ref() == Some(&now) {
            continue;
        }
        match (&now, &last) {
            (Link::Connected, None) => {}
            (Link::Connected, Some(_)) => info!("{}", advice(&now, &hub, &install)),
            _ => warn!("{}", advice(&now, &hub, &install)),
        }
        last = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines as nats-server 2.15 writes them in a leaf's log.
    const REFUSED: &str = "[27711] 2026/11/24 02:30:01.783637 [ERR] 127.0.0.1:37577 - lid:12 - Leafnode Error 'Authorization Violation'";
    const CONNECTED: &str = "[27711] 2026/11/24 02:29:56.725126 [INF] 127.0.0.1:37577 - lid:5 - JetStream using domains: local \"install-dev-0m5p51r7\", remote \"hub\"";
    const UNREACHABLE: &str = "[27834] 2026/11/24 02:30:06.281925 [ERR] Error trying to connect as leafnode to remote server \"127.0.0.1:1\" (attempt 1): dial tcp 127.0.0.1:1: connect: connection refused";

    #[test]
    fn the_leafs_log_lines_say_what_state_the_link_is_in() {
        assert_eq!(classify(REFUSED), Some(Link::Refused));
        assert_eq!(classify(CONNECTED), Some(Link::Connected));
        assert_eq!(
            classify(UNREACHABLE),
            Some(Link::Unreachable(
                "dial tcp 127.0.0.1:1: connect: connection refused".into()
            ))
        );
        assert_eq!(classify("[1] [INF] Server is ready"), None);
    }

    #[test]
    fn each_report_says_what_to_do() {
        let refused = advice(&Link::Refused, "tls://hub:7422", "prod");
        assert!(
            refused.contains("ferry installs runner-token prod"),
            "{refused}"
        );
        let unreachable = advice(&Link::Unreachable("x".into()), "tls://hub:7422", "prod");
        assert!(unreachable.contains("--nats-url"), "{unreachable}");
    }
}
