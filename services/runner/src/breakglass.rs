//! Break-glass roles: the customer's own control over the actions that need elevated access.
//! A host grant is a file in the runner's data directory, written by `ferry-runner break-glass
//! grant ROLE --for 1h` on the host (never from the hub). A grant made through the API by a
//! customer token travels with the job, and counts unless the runner takes host grants only
//! (`--break-glass-host-only`: then nothing the control plane says can grant one). Checked when
//! an action step naming the role is about to run: without a live grant the step is refused,
//! with the reason, before anything starts.
//!
//! The host remembers which role each action ever needed (`break-glass/pins.json`): the
//! control plane is the vendor's, so a later config that drops or changes an action's role does
//! not drop the customer's control — the action still needs the role it was first seen with,
//! until the customer releases it on the host (`ferry-runner break-glass unpin ACTION`).
//!
//! Every grant, revocation, pin, unpin, use and refusal is appended to `break-glass/audit.log` on
//! the host; every use and refusal is also in the job's log and its result, which the hub's
//! audit stream records.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub role: String,
    /// When it ends, ms since the epoch.
    pub until_ms: u64,
    pub granted_at_ms: u64,
    /// Who granted it (the host user).
    pub by: String,
}

fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join("break-glass")
}

fn file(data_dir: &Path, role: &str) -> Result<PathBuf, String> {
    let plain = !role.is_empty()
        && role
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !role.starts_with('.');
    if !plain {
        return Err(format!("`{role}` is not a role name"));
    }
    Ok(dir(data_dir).join(format!("{role}.json")))
}

fn at(ms: u64) -> String {
    ferry_model::format_ms(ms)
}

fn audit(data_dir: &Path, line: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir(data_dir).join("audit.log"))?;
    writeln!(f, "{} {line}", ferry_model::now())
}

fn pins_file(data_dir: &Path) -> PathBuf {
    dir(data_dir).join("pins.json")
}

/// The role each action was first seen needing, by action name.
pub fn pins(data_dir: &Path) -> std::collections::BTreeMap<String, String> {
    std::fs::read(pins_file(data_dir))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn write_pins(
    data_dir: &Path,
    pins: &std::collections::BTreeMap<String, String>,
) -> Result<(), String> {
    std::fs::create_dir_all(dir(data_dir))
        .map_err(|e| format!("{}: {e}", dir(data_dir).display()))?;
    let path = pins_file(data_dir);
    let tmp = path.with_extension("json.tmp");
    let bytes = serde_json::to_vec_pretty(pins).map_err(|e| e.to_string())?;
    std::fs::write(&tmp, bytes).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The role `action` needs on this host: the one it was first seen with, whatever the job
/// says now (`asked`, from the config it was rendered from), or `asked` if it was never seen
/// with one (then it is remembered). Changes are audited on the host; the second value says
/// what the job's log should tell when the host's role overrides the config's.
pub fn role_for(
    data_dir: &Path,
    action: &str,
    asked: Option<&str>,
) -> Result<(Option<String>, Option<String>), String> {
    let mut pins = pins(data_dir);
    let log = |line: String| {
        audit(data_dir, &line).map_err(|e| format!("the host's break-glass audit log: {e}"))
    };
    match (pins.get(action).cloned(), asked) {
        (None, None) => Ok((None, None)),
        (None, Some(role)) => {
            file(data_dir, role)?;
            pins.insert(action.to_string(), role.to_string());
            write_pins(data_dir, &pins)?;
            log(format!("pinned action {action} to role {role}"))?;
            Ok((Some(role.to_string()), None))
        }
        (Some(pinned), Some(role)) if pinned == role => Ok((Some(pinned), None)),
        (Some(pinned), asked) => {
            let said = match asked {
                Some(r) => format!("names role `{r}`"),
                None => "names no break-glass role".to_string(),
            };
            let note = format!(
                "the config {said} for action `{action}`, but this host pinned it to role `{pinned}`: it needs that role until the customer runs `ferry-runner break-glass unpin {action}`"
            );
            log(format!("action {action}: {note}"))?;
            Ok((Some(pinned), Some(note)))
        }
    }
}

/// Forgets the role `action` was pinned to: the customer accepts what the config says now.
pub fn unpin(data_dir: &Path, action: &str, by: &str) -> Result<Option<String>, String> {
    let mut pins = pins(data_dir);
    let Some(role) = pins.remove(action) else {
        return Ok(None);
    };
    write_pins(data_dir, &pins)?;
    audit(
        data_dir,
        &format!("unpinned action {action} from role {role} by {by}"),
    )
    .map_err(|e| format!("the host's break-glass audit log: {e}"))?;
    Ok(Some(role))
}

/// Records a use of, or a refusal to use, a role on the host.
pub fn record(data_dir: &Path, line: &str) -> Result<(), String> {
    std::fs::create_dir_all(dir(data_dir))
        .map_err(|e| format!("{}: {e}", dir(data_dir).display()))?;
    audit(data_dir, line).map_err(|e| format!("the host's break-glass audit log: {e}"))
}

/// Grants `role` on this host for `duration`.
pub fn grant(
    data_dir: &Path,
    role: &str,
    duration: std::time::Duration,
    by: &str,
) -> Result<Grant, String> {
    let path = file(data_dir, role)?;
    std::fs::create_dir_all(dir(data_dir))
        .map_err(|e| format!("{}: {e}", dir(data_dir).display()))?;
    let now = ferry_model::now_ms();
    let g = Grant {
        role: role.to_string(),
        until_ms: now + duration.as_millis() as u64,
        granted_at_ms: now,
        by: by.to_string(),
    };
    let bytes = serde_json::to_vec_pretty(&g).map_err(|e| e.to_string())?;
    std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    audit(
        data_dir,
        &format!("granted {role} until {} by {by}", at(g.until_ms)),
    )
    .map_err(|e| format!("the host's break-glass audit log: {e}"))?;
    Ok(g)
}

/// Ends a grant before its time.
pub fn revoke(data_dir: &Path, role: &str, by: &str) -> Result<bool, String> {
    let path = file(data_dir, role)?;
    match std::fs::remove_file(&path) {
        Ok(()) => {
            audit(data_dir, &format!("revoked {role} by {by}"))
                .map_err(|e| format!("the host's break-glass audit log: {e}"))?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// The grants on this host, live or expired.
pub fn list(data_dir: &Path) -> Vec<Grant> {
    let Ok(entries) = std::fs::read_dir(dir(data_dir)) else {
        return vec![];
    };
    let mut out: Vec<Grant> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|b| serde_json::from_slice(&b).ok())
        .collect();
    out.sort_by(|a, b| a.role.cmp(&b.role));
    out
}

/// Whether `action` may run with `role` now: `Ok` with the grant's description, or the reason
/// it is refused. A live grant on this host counts first; then `api`, a grant made through the
/// control plane's API (`None` when the runner takes host grants only), judged by this host's
/// clock.
pub fn check(
    data_dir: &Path,
    role: &str,
    action: &str,
    api: Option<&ferry_protocol::messages::ApiGrant>,
) -> Result<String, String> {
    // The command as it works on this host: this runner's own data directory, wherever it is
    // (`ferry dev` keeps each install's runner under its own).
    let dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    let how = format!(
        "grant it on the runner host: ferry-runner break-glass grant {role} --for 1h --data-dir {}",
        shell_word(&dir.to_string_lossy())
    );
    let path = file(data_dir, role)?;
    let host: Option<Grant> = match std::fs::read(&path) {
        Ok(b) => Some(
            serde_json::from_slice(&b)
                .map_err(|e| format!("break-glass grant {}: {e}", path.display()))?,
        ),
        Err(_) => None,
    };
    let now = ferry_model::now_ms();
    if let Some(g) = host.as_ref().filter(|g| g.until_ms > now) {
        return Ok(format!(
            "break-glass role `{role}` granted by {} until {}",
            g.by,
            at(g.until_ms)
        ));
    }
    if let Some(g) = api.filter(|g| g.until_ms > now) {
        return Ok(format!(
            "break-glass role `{role}` granted through the API by {} until {}",
            g.by,
            at(g.until_ms)
        ));
    }
    Err(match host {
        Some(g) => format!(
            "refused: action `{action}` needs break-glass role `{role}`, whose grant expired at {} ({how})",
            at(g.until_ms)
        ),
        None => format!(
            "refused: action `{action}` needs break-glass role `{role}`, which is not granted on this runner host ({how})"
        ),
    })
}

/// `s` as one word of a POSIX shell command: as it is when it is plain, else single-quoted.
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,=@".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_is_refused_then_granted_then_refused_after_expiry() {
        let d = tempfile::tempdir().unwrap();
        let e = check(d.path(), "admin", "fix", None).unwrap_err();
        assert!(e.contains("not granted"), "{e}");
        assert!(
            e.contains(&format!("--data-dir {}", d.path().display())),
            "the command names this host's data directory: {e}"
        );
        assert_eq!(shell_word("/a b/it's"), "'/a b/it'\\''s'");
        grant(
            d.path(),
            "admin",
            std::time::Duration::from_millis(300),
            "alice",
        )
        .unwrap();
        let ok = check(d.path(), "admin", "fix", None).unwrap();
        assert!(ok.contains("granted by alice"), "{ok}");
        std::thread::sleep(std::time::Duration::from_millis(400));
        let e = check(d.path(), "admin", "fix", None).unwrap_err();
        assert!(e.contains("expired"), "{e}");
        // A live grant made through the API counts; an ended one does not.
        let api = |until_ms| ferry_protocol::messages::ApiGrant {
            by: "token:sec".into(),
            until_ms,
        };
        let ok = check(
            d.path(),
            "admin",
            "fix",
            Some(&api(ferry_model::now_ms() + 60_000)),
        )
        .unwrap();
        assert!(ok.contains("through the API by token:sec"), "{ok}");
        assert!(
            check(
                d.path(),
                "admin",
                "fix",
                Some(&api(ferry_model::now_ms() - 1))
            )
            .is_err()
        );
        assert!(revoke(d.path(), "admin", "alice").unwrap());
        let log = std::fs::read_to_string(d.path().join("break-glass/audit.log")).unwrap();
        assert!(
            log.contains("granted admin") && log.contains("revoked admin"),
            "{log}"
        );
        assert!(file(d.path(), "../x").is_err());
    }

    #[test]
    fn an_action_keeps_the_role_it_was_first_seen_with_until_the_host_unpins_it() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(role_for(d.path(), "fix", None).unwrap(), (None, None));
        assert_eq!(
            role_for(d.path(), "fix", Some("admin")).unwrap(),
            (Some("admin".into()), None)
        );
        // A config that drops the role, or names another, still needs the first.
        for asked in [None, Some("viewer")] {
            let (role, note) = role_for(d.path(), "fix", asked).unwrap();
            assert_eq!(role.as_deref(), Some("admin"));
            assert!(note.unwrap().contains("pinned it to role `admin`"));
        }
        assert_eq!(
            unpin(d.path(), "fix", "alice").unwrap().as_deref(),
            Some("admin")
        );
        assert_eq!(role_for(d.path(), "fix", None).unwrap(), (None, None));
        let log = std::fs::read_to_string(d.path().join("break-glass/audit.log")).unwrap();
        assert!(
            log.contains("pinned action fix to role admin")
                && log.contains("names no break-glass role")
                && log.contains("unpinned action fix from role admin by alice"),
            "{log}"
        );
    }
}
