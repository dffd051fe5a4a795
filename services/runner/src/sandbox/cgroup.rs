//! A job's memory and process limits: a cgroup of its own, under the runner's, made before the
//! job starts and removed after it, with every process still in it killed first. The plugin
//! joins it itself (it is root then, before it drops to the job's user: `plugin::entry`), so
//! nothing of the job's runs outside it and no race with its first fork exists; the cgroup's
//! directory is the one thing of `/sys` bound writable into the sandbox, and its files stay
//! root's.
//!
//! Both cgroup versions: v1 (a `memory` and a `pids` hierarchy, each job a directory in the
//! runner's group of each) and v2 (the unified hierarchy; the runner's group must be delegated
//! to it — `Delegate=yes` in its unit — and the runner moves itself into a leaf `runner`, as v2
//! allows controllers for children only of a group without processes of its own). The tests on
//! this machine exercise v1, the only one its kernel offers the memory controller in.

use std::path::{Path, PathBuf};

/// Where jobs' cgroups are made: the runner's own groups, found at start.
#[derive(Debug, Clone)]
pub enum JobCgroups {
    V1 {
        memory: PathBuf,
        pids: Option<PathBuf>,
    },
    V2 {
        base: PathBuf,
    },
}

/// One job's cgroup: its directories (one per v1 hierarchy, one in v2).
#[derive(Debug)]
pub struct JobCgroup {
    dirs: Vec<PathBuf>,
    v1: bool,
}

impl JobCgroups {
    /// The runner's groups, from `/proc/self/cgroup`, or why jobs can have no limits here.
    /// Blocking.
    pub fn detect() -> Result<JobCgroups, String> {
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| format!("reading /proc/self/cgroup: {e}"))?;
        let root = Path::new("/sys/fs/cgroup");
        let found = match parse(&own) {
            Own::V1 { memory, pids } => JobCgroups::V1 {
                memory: root.join("memory").join(memory.trim_start_matches('/')),
                pids: pids.map(|p| root.join("pids").join(p.trim_start_matches('/'))),
            },
            Own::V2(path) => {
                let base = root.join(path.trim_start_matches('/'));
                delegate(&base)?;
                JobCgroups::V2 { base }
            }
            Own::None => return Err("no memory controller in /proc/self/cgroup".into()),
        };
        // A group made and removed: the runner may make them.
        let probe = found.create(&format!("probe-{}", std::process::id()), 64 << 20, 16)?;
        probe.remove();
        Ok(found)
    }

    /// The cgroup of the job `name` as an earlier runner process left it (its directories that
    /// still exist).
    pub fn left_behind(&self, name: &str) -> JobCgroup {
        let leaf = format!("ferry-job-{name}");
        let (dirs, v1): (Vec<PathBuf>, bool) = match self {
            JobCgroups::V1 { memory, pids } => (
                std::iter::once(memory.join(&leaf))
                    .chain(pids.as_ref().map(|p| p.join(&leaf)))
                    .collect(),
                true,
            ),
            JobCgroups::V2 { base } => (vec![base.join(&leaf)], false),
        };
        JobCgroup {
            dirs: dirs.into_iter().filter(|d| d.exists()).collect(),
            v1,
        }
    }

    /// A cgroup for the job `name` with at most `memory` bytes and `pids` processes. Blocking.
    pub fn create(&self, name: &str, memory: u64, pids: u64) -> Result<JobCgroup, String> {
        let leaf = format!("ferry-job-{name}");
        let write = |dir: &Path, file: &str, value: String| {
            std::fs::write(dir.join(file), value)
                .map_err(|e| format!("{}: {e}", dir.join(file).display()))
        };
        let made = |dir: PathBuf| -> Result<PathBuf, String> {
            match std::fs::create_dir(&dir) {
                Ok(()) => Ok(dir),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(dir),
                Err(e) => Err(format!("making {}: {e}", dir.display())),
            }
        };
        match self {
            JobCgroups::V1 { memory: m, pids: p } => {
                let mem = made(m.join(&leaf))?;
                let mut cg = JobCgroup {
                    dirs: vec![mem.clone()],
                    v1: true,
                };
                write(&mem, "memory.limit_in_bytes", memory.to_string())?;
                // Where swap is accounted, the same bound for memory and swap together.
                let _ = write(&mem, "memory.memsw.limit_in_bytes", memory.to_string());
                if let Some(p) = p {
                    let dir = made(p.join(&leaf))?;
                    cg.dirs.push(dir.clone());
                    write(&dir, "pids.max", pids.to_string())?;
                }
                Ok(cg)
            }
            JobCgroups::V2 { base } => {
                let dir = made(base.join(&leaf))?;
                write(&dir, "memory.max", memory.to_string())?;
                let _ = write(&dir, "memory.swap.max", "0".into());
                write(&dir, "pids.max", pids.to_string())?;
                Ok(JobCgroup {
                    dirs: vec![dir],
                    v1: false,
                })
            }
        }
    }
}

impl JobCgroup {
    /// Its directories: bound writable into the sandbox, joined by the plugin.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Whether the kernel killed a process of it for want of memory.
    pub fn oom_killed(&self) -> bool {
        let Some(mem) = self.dirs.first() else {
            return false;
        };
        let count = |file: &str, key: &str| {
            std::fs::read_to_string(mem.join(file))
                .ok()?
                .lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok())
        };
        match self.v1 {
            // Kernels before 4.13 have no `oom_kill` count: hitting the limit is the sign.
            true => count("memory.oom_control", "oom_kill ")
                .or_else(|| count("memory.failcnt", ""))
                .is_some_and(|n| n > 0),
            false => count("memory.events", "oom_kill ").is_some_and(|n| n > 0),
        }
    }

    /// Kills what is left in it and removes it. Blocking.
    pub fn remove(self) {
        for _ in 0..50 {
            let mut left = false;
            for d in &self.dirs {
                for pid in procs(d) {
                    left = true;
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
            if !left
                && self
                    .dirs
                    .iter()
                    .all(|d| std::fs::remove_dir(d).is_ok() || !d.exists())
            {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        tracing::warn!(dirs = ?self.dirs, "a job's cgroup could not be removed");
    }
}

/// The processes in the cgroup `dir`.
fn procs(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Joins the calling process to each cgroup directory in `dirs`: what the plugin does before
/// anything of the job runs.
pub fn join(dirs: &[PathBuf]) -> Result<(), String> {
    for d in dirs {
        std::fs::write(d.join("cgroup.procs"), "0")
            .map_err(|e| format!("joining the job's cgroup {}: {e}", d.display()))?;
    }
    Ok(())
}

/// Makes the v2 group `base` give its children the memory and pids controllers: its own
/// processes (the runner, and what it started so far) move to a leaf `runner` first.
fn delegate(base: &Path) -> Result<(), String> {
    let controllers = std::fs::read_to_string(base.join("cgroup.controllers"))
        .map_err(|e| format!("{}: {e}", base.join("cgroup.controllers").display()))?;
    let has = |c: &str| controllers.split_whitespace().any(|x| x == c);
    if !has("memory") || !has("pids") {
        return Err(format!(
            "the runner's cgroup {} offers no memory and pids controllers (delegate it: \
             Delegate=yes in the runner's unit)",
            base.display()
        ));
    }
    // Only a group that is the runner's alone (its unit's, delegated): processes of anything
    // else in it (a shell, a test harness, the whole container at `/`) are never moved.
    let me = i32::try_from(std::process::id()).unwrap_or(-1);
    let others = procs(base).into_iter().filter(|p| *p != me).count();
    if base == Path::new("/sys/fs/cgroup") || others > 0 {
        return Err(format!(
            "the runner's cgroup {} is not its own ({others} other processes in it): run the \
             runner as a unit with Delegate=yes",
            base.display()
        ));
    }
    let leaf = base.join("runner");
    if !procs(base).is_empty() {
        std::fs::create_dir_all(&leaf).map_err(|e| format!("{}: {e}", leaf.display()))?;
        for pid in procs(base) {
            std::fs::write(leaf.join("cgroup.procs"), pid.to_string())
                .map_err(|e| format!("moving the runner to {}: {e}", leaf.display()))?;
        }
    }
    std::fs::write(base.join("cgroup.subtree_control"), "+memory +pids")
        .map_err(|e| format!("{}: {e}", base.join("cgroup.subtree_control").display()))
}

/// The runner's own group, as `/proc/self/cgroup` says.
#[derive(Debug, PartialEq, Eq)]
enum Own<'a> {
    V1 {
        memory: &'a str,
        pids: Option<&'a str>,
    },
    V2(&'a str),
    None,
}

fn parse(text: &str) -> Own<'_> {
    let mut memory = None;
    let mut pids = None;
    let mut unified = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        for c in controllers.split(',') {
            match c {
                "memory" => memory = Some(path),
                "pids" => pids = Some(path),
                "" => unified = Some(path),
                _ => {}
            }
        }
    }
    match (memory, unified) {
        (Some(memory), _) => Own::V1 { memory, pids },
        (None, Some(path)) => Own::V2(path),
        (None, None) => Own::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runners_own_group_is_read_for_either_version() {
        let v1 = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/51d2\n0::/\n";
        assert_eq!(
            parse(v1),
            Own::V1 {
                memory: "/process_api/51d2",
                pids: Some("/")
            }
        );
        assert_eq!(
            parse("0::/system.slice/ferry-runner.service\n"),
            Own::V2("/system.slice/ferry-runner.service")
        );
        assert_eq!(parse("1:name=systemd:/\n"), Own::None);
    }
}
