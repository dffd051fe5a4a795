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
    /// HMAC-SHA256 of the fields above under the host's key (`break-glass/host.key`, made by
    /// the first grant, readable by the runner's user only): only `ferry-runner break-glass
    /// grant` makes a grant the runner honours. A file written any other way (by a job, by
    /// hand) is refused and audited.
    #[serde(default)]
    pub seal: String,
}

/// The longest a grant may last.
pub const MAX_GRANT_MS: u64 = 24 * 3600 * 1000;

fn key_file(data_dir: &Path) -> PathBuf {
    dir(data_dir).join("host.key")
}

/// The host's sealing key: made on first use (32 random bytes, mode 0600).
fn host_key(data_dir: &Path, make: bool) -> Result<ring::hmac::Key, String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = key_file(data_dir);
    let bytes = match std::fs::read(&path) {
        Ok(b) if b.len() == 32 => b,
        Ok(_) => return Err(format!("{}: not a break-glass key", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && make => {
            let mut b = vec![0u8; 32];
            getrandom::fill(&mut b).map_err(|e| format!("making the host's key: {e}"))?;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .and_then(|mut f| f.write_all(&b))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            b
        }
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    Ok(ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &bytes))
}

impl Grant {
    fn sealed_text(&self) -> String {
        format!(
            "ferry break-glass grant v1\n{}\n{}\n{}\n{}",
            self.role, self.until_ms, self.granted_at_ms, self.by
        )
    }

    fn sealed(mut self, key: &ring::hmac::Key) -> Grant {
        self.seal = hex::encode(ring::hmac::sign(key, self.sealed_text().as_bytes()));
        self
    }

    /// Why the runner must not honour this grant file, if it must not: not sealed by this
    /// host's key, for another role than its name, or longer than a grant may last.
    fn forged(&self, key: Option<&ring::hmac::Key>, role: &str) -> Option<String> {
        let seal = hex::decode(&self.seal).unwrap_or_default();
        let sealed = key
            .is_some_and(|k| ring::hmac::verify(k, self.sealed_text().as_bytes(), &seal).is_ok());
        if !sealed {
            Some("it was not made by `ferry-runner break-glass grant` on this host".into())
        } else if self.role != role {
            Some(format!("it is a grant of role `{}`", self.role))
        } else if self.until_ms.saturating_sub(self.granted_at_ms) > MAX_GRANT_MS {
            Some("it lasts longer than 24h".into())
        } else {
            None
        }
    }
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
    if duration.as_millis() > u128::from(MAX_GRANT_MS) {
        return Err(format!(
            "a grant lasts at most 24h, not {}",
            humantime::format_duration(duration)
        ));
    }
    let now = ferry_model::now_ms();
    let g = Grant {
        role: role.to_string(),
        until_ms: now + duration.as_millis() as u64,
        granted_at_ms: now,
        by: by.to_string(),
        seal: String::new(),
    }
    .sealed(&host_key(data_dir, true)?);
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

/// The grants on this host, live or expired; a grant file the runner would refuse is listed as
/// such (`Err`: its file's name and why).
pub fn list(data_dir: &Path) -> Vec<Result<Grant, (String, String)>> {
    let Ok(entries) = std::fs::read_dir(dir(data_dir)) else {
        return vec![];
    };
    let key = host_key(data_dir, false).ok();
    let mut out: Vec<Result<Grant, (String, String)>> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && !p.ends_with("pins.json"))
        .map(|p| {
            let name = p
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let read: Result<Grant, String> = std::fs::read(&p)
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice(&b).map_err(|e| format!("malformed: {e}")));
            match read {
                Ok(g) => match g.forged(key.as_ref(), &name) {
                    None => Ok(g),
                    Some(why) => Err((name, why)),
                },
                Err(why) => Err((name, why)),
            }
        })
        .collect();
    out.sort_by(|a, b| role_of(a).cmp(role_of(b)));
    out
}

fn role_of(g: &Result<Grant, (String, String)>) -> &str {
    match g {
        Ok(g) => &g.role,
        Err((name, _)) => name,
    }
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
    let mut refused = None;
    let host: Option<Grant> = match std::fs::read(&path) {
        Ok(b) => {
            let why = match serde_json::from_slice::<Grant>(&b) {
                Ok(g) => g
                    .forged(host_key(data_dir, false).ok().as_ref(), role)
                    .map_or(Ok(g), Err),
                Err(e) => Err(format!("it is malformed ({e})")),
            };
            match why {
                Ok(g) => Some(g),
                Err(why) => {
                    let line = format!(
                        "refused the grant file {} for action {action}: {why}",
                        path.display()
                    );
                    audit(data_dir, &line)
                        .map_err(|e| format!("the host's break-glass audit log: {e}"))?;
                    refused = Some(why);
                    None
                }
            }
        }
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
        None if refused.is_some() => format!(
            "refused: action `{action}` needs break-glass role `{role}`, and the grant file for it on this runner host is not honoured: {} ({how})",
            refused.unwrap_or_default()
        ),
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
    fn a_grant_file_not_made_by_the_grant_command_is_refused_and_audited() {
        let d = tempfile::tempdir().unwrap();
        let forge = |g: &Grant| {
            std::fs::create_dir_all(d.path().join("break-glass")).unwrap();
            std::fs::write(
                d.path().join(format!("break-glass/{}.json", g.role)),
                serde_json::to_vec(g).unwrap(),
            )
            .unwrap();
        };
        let now = ferry_model::now_ms();
        let g = Grant {
            role: "admin".into(),
            until_ms: now + 60_000,
            granted_at_ms: now,
            by: "job".into(),
            seal: String::new(),
        };
        forge(&g);
        let e = check(d.path(), "admin", "fix", None).unwrap_err();
        assert!(
            e.contains("not made by `ferry-runner break-glass grant`"),
            "{e}"
        );
        // Sealed by this host, but for past the longest a grant lasts, or another role.
        let key = host_key(d.path(), true).unwrap();
        forge(
            &Grant {
                until_ms: now + MAX_GRANT_MS + 60_000,
                ..g.clone()
            }
            .sealed(&key),
        );
        let e = check(d.path(), "admin", "fix", None).unwrap_err();
        assert!(e.contains("longer than 24h"), "{e}");
        let other = Grant {
            role: "viewer".into(),
            ..g.clone()
        }
        .sealed(&key);
        std::fs::write(
            d.path().join("break-glass/admin.json"),
            serde_json::to_vec(&other).unwrap(),
        )
        .unwrap();
        let e = check(d.path(), "admin", "fix", None).unwrap_err();
        assert!(e.contains("grant of role `viewer`"), "{e}");
        std::fs::write(d.path().join("break-glass/admin.json"), b"{").unwrap();
        let e = check(d.path(), "admin", "fix", None).unwrap_err();
        assert!(e.contains("malformed"), "{e}");
        let log = std::fs::read_to_string(d.path().join("break-glass/audit.log")).unwrap();
        assert_eq!(log.matches("refused the grant file").count(), 4, "{log}");
        assert!(list(d.path()).iter().all(|g| g.is_err()));
        // The command's own grant counts.
        grant(
            d.path(),
            "admin",
            std::time::Duration::from_secs(60),
            "alice",
        )
        .unwrap();
        assert!(check(d.path(), "admin", "fix", None).is_ok());
        assert!(
            grant(
                d.path(),
                "admin",
                std::time::Duration::from_secs(25 * 3600),
                "alice"
            )
            .is_err()
        );
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
