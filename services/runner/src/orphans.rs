//! Process groups a dead runner process left behind.
//!
//! A plugin runs in its own process group so that a cancel or a timeout reaches every tool it
//! started. The flip side: when the runner process itself is SIGKILLed, nothing stops that group,
//! and it would run on beside the execution that replaces it. So each running group is recorded
//! in `<data>/running/` (pid and start time, which tell a live group from a reused pid), and a
//! runner process starting for the install kills every recorded group before it takes any work.
//! The leaf nats-server (`leaf.rs`) is recorded the same way, as `leaf`.

use std::path::{Path, PathBuf};

use tracing::{info, warn};

/// The record of one running group; removed when dropped (the group has been waited for).
pub struct Marker(PathBuf);

impl Drop for Marker {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn dir(data: &Path) -> PathBuf {
    data.join("running")
}

/// The start time of process `pid` in clock ticks since boot (`/proc/<pid>/stat`, field 22).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from the last `)`.
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Records the group led by `pid`, started for the work directory `work`.
pub fn record(data: &Path, work: &Path, pid: u32) -> Option<Marker> {
    let name = work.file_name()?.to_string_lossy().into_owned();
    let path = dir(data).join(name);
    let started = start_time(pid)?;
    let write = std::fs::create_dir_all(dir(data))
        .and_then(|()| std::fs::write(&path, format!("{pid} {started}\n")));
    match write {
        Ok(()) => Some(Marker(path)),
        Err(e) => {
            warn!(error = %e, "cannot record the job's process group");
            None
        }
    }
}

/// Kills every recorded group whose leader is still the process that was recorded; returns how
/// many it killed, and the name of every record (a job's work directory's, whose cgroup is left
/// too). Blocking (small files); called once at start-up, before any work is taken.
pub fn kill_left_behind(data: &Path) -> (usize, Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir(data)) else {
        return (0, vec![]);
    };
    let mut killed = 0;
    let mut names = Vec::new();
    for entry in entries.flatten() {
        names.push(entry.file_name().to_string_lossy().into_owned());
        let path = entry.path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut it = text.split_whitespace().map(|t| t.parse::<u64>().ok());
        if let (Some(Some(pid)), Some(Some(started))) = (it.next(), it.next())
            && let Ok(pid) = u32::try_from(pid)
            && start_time(pid) == Some(started)
        {
            let group = nix::unistd::Pid::from_raw(pid as i32);
            if nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL).is_ok() {
                info!(pid, what = %entry.file_name().to_string_lossy(), "killed a process group a dead runner left behind");
                killed += 1;
                // Gone before anything is started in its place (the leaf's store is locked
                // while its server lives).
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
                while start_time(pid) == Some(started) && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }
        }
        let _ = std::fs::remove_file(&path);
    }
    (killed, names)
}
