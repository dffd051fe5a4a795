//! The customer's pause: `ferry-runner pause` on the host stops the runner taking new jobs (the
//! ones running finish), `ferry-runner resume` lets it take them again. The mark is a file in the
//! runner's data directory, which no job can reach (`sandbox.rs`); each change is appended to the
//! host's audit log, and the runner says it in its heartbeat at once, so the control plane shows
//! the install as paused by its customer, not as unhealthy, and grants it nothing meanwhile.
//! The install stack's `RunnerPaused` parameter pauses it too (the stack also scales the runner
//! hosts to zero): read with the stack (`stack.rs`), and once more as the runner is stopped, so
//! its last heartbeat says why it went.

use std::path::{Path, PathBuf};
use std::time::Duration;

fn mark(data_dir: &Path) -> PathBuf {
    data_dir.join("paused")
}

/// Whether the customer paused this runner host.
pub fn is_paused(data_dir: &Path) -> bool {
    mark(data_dir).exists()
}

/// Pauses the runner host; false if it was paused already.
pub fn pause(data_dir: &Path, by: &str) -> Result<bool, String> {
    if is_paused(data_dir) {
        return Ok(false);
    }
    std::fs::create_dir_all(data_dir).map_err(|e| format!("{}: {e}", data_dir.display()))?;
    let line = format!("paused by {by} at {}\n", ferry_model::now());
    std::fs::write(mark(data_dir), &line)
        .map_err(|e| format!("{}: {e}", mark(data_dir).display()))?;
    crate::breakglass::record(data_dir, &format!("runner paused by {by}"))?;
    Ok(true)
}

/// Lets the runner host take work again; false if it was not paused.
pub fn resume(data_dir: &Path, by: &str) -> Result<bool, String> {
    match std::fs::remove_file(mark(data_dir)) {
        Ok(()) => {
            crate::breakglass::record(data_dir, &format!("runner resumed by {by}"))?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("{}: {e}", mark(data_dir).display())),
    }
}

/// How soon a pause or a resume on the host takes effect.
const EVERY: Duration = Duration::from_secs(1);

/// Watches the mark and the stack's parameter; `tx` says whether the runner is paused. Runs
/// until the runner stops.
pub async fn watch(
    data_dir: PathBuf,
    account: std::sync::Arc<crate::stack::Account>,
    tx: tokio::sync::watch::Sender<bool>,
) {
    loop {
        let dir = data_dir.clone();
        let on_host = tokio::task::spawn_blocking(move || is_paused(&dir))
            .await
            .unwrap_or(false);
        let paused = on_host || account.paused_by_stack();
        tx.send_if_modified(|now| {
            let changed = *now != paused;
            if changed {
                tracing::info!(
                    paused,
                    "the customer {} this runner host",
                    if paused { "paused" } else { "resumed" }
                );
            }
            *now = paused;
            changed
        });
        tokio::time::sleep(EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_pause_and_a_resume_are_marked_and_audited() {
        let d = tempfile::tempdir().unwrap();
        assert!(!super::is_paused(d.path()));
        assert!(super::pause(d.path(), "alice").unwrap());
        assert!(!super::pause(d.path(), "alice").unwrap());
        assert!(super::is_paused(d.path()));
        assert!(super::resume(d.path(), "bob").unwrap());
        assert!(!super::resume(d.path(), "bob").unwrap());
        let log = std::fs::read_to_string(d.path().join("break-glass/audit.log")).unwrap();
        assert!(
            log.contains("runner paused by alice") && log.contains("runner resumed by bob"),
            "{log}"
        );
    }
}
