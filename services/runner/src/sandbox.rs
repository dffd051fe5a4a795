//! Each job's sandbox: the vendor's code runs on the customer's host, and must not hold the
//! runner's powers.
//!
//! A job's plugin process (and everything it starts) runs under bubblewrap (`bwrap`, Debian's and
//! Amazon Linux's `bubblewrap`), which the runner finds at start:
//!
//! * **What it sees.** The host's file system read-only; its own work directory, its component's
//!   state directory and (for a `container_image` job) the install's layout store read-write; a
//!   private `/tmp`. The runner's data directory (identity, leaf, break-glass grants and pins, the
//!   host audit log, other components' state, other jobs' work directories, the artifact store),
//!   its identity directory, `/etc/ferry` and the bootstrap token file are hidden (an empty
//!   directory, or an empty file, in their place). Its tools are bound back read-only where they
//!   sat in a hidden directory.
//! * **Who it is.** With a runner started as root, the job's user (`--job-user`, default the
//!   `ferry-job` user if the host has one, else `nobody`): the plugin drops to it before it
//!   runs anything of the job's ([`enter`]), with `no_new_privs` (set by bwrap), no
//!   capabilities, no core dumps and a process-count limit. A runner started as another user
//!   runs jobs as itself in a user namespace: the hidden paths stay hidden, the uid is the same.
//!   A `container_image` job runs no code of the vendor's (Ferry copies the image by digest)
//!   and keeps the runner's user, in the same sandbox, to write the install's store.
//! * **What it can reach.** Its own PID and IPC namespaces: no process of the runner's (or of
//!   another job's) is visible to signal or trace. The network is the host's (jobs call cloud
//!   APIs); the instance metadata endpoint is kept from the job's user by the host's firewall
//!   (`deploy/runner/jobs-firewall.sh`), and the runner's leaf nats-server takes only the runner
//!   (a password made at each start, in the hidden data directory).
//! * **What it is given.** An allow-list of environment variables ([`JobEnv`]), never the
//!   runner's own settings or its bootstrap token.
//!
//! A cancel's SIGTERM goes to the job's processes but not to bwrap's own two (the outer one, and
//! the sandbox's init), which would end the sandbox at once ([`Sandbox::terminate`]), so the
//! grace period holds; a SIGKILL of the group ends bwrap, whose sandbox's init then dies
//! (`--die-with-parent`), which ends every process of the sandbox, including any that left the
//! process group. (bwrap is not started with SIGTERM ignored instead: that needs a `pre_exec`,
//! which makes std fork the whole runner rather than `posix_spawn` it, and cost a 1,000-install
//! release five times its time in page-table copies.)
//!
//! Without bwrap the runner refuses every job, saying why, unless the operator starts it with
//! `--unsandboxed-jobs`: then jobs run as the runner, which every job's log and the runner's
//! record say.

mod cgroup;
pub use cgroup::{JobCgroup, JobCgroups, join as join_cgroups};

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The unprivileged user a sandboxed job runs as (a runner started as root only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobUser {
    pub uid: u32,
    pub gid: u32,
}

impl std::fmt::Display for JobUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.uid, self.gid)
    }
}

impl std::str::FromStr for JobUser {
    type Err = String;

    /// `UID:GID`, as the runner passes it to the plugin.
    fn from_str(s: &str) -> Result<Self, String> {
        let (u, g) = s
            .split_once(':')
            .ok_or_else(|| format!("`{s}` is not UID:GID"))?;
        let num = |x: &str| {
            x.parse::<u32>()
                .map_err(|_| format!("`{s}` is not UID:GID"))
        };
        Ok(JobUser {
            uid: num(u)?,
            gid: num(g)?,
        })
    }
}

/// How this runner runs its jobs.
#[derive(Debug, Clone)]
pub enum Sandbox {
    /// Under bubblewrap; as `user` when the runner is root.
    Bwrap {
        bwrap: PathBuf,
        user: Option<JobUser>,
        limits: Limits,
        /// Where each job's cgroup is made (its memory and process limits); `None`: the host
        /// gives the runner no cgroup to make them in, and the limits are the user's rlimits.
        cgroups: Option<JobCgroups>,
    },
    /// The operator's `--unsandboxed-jobs`: as the runner itself.
    Unsandboxed,
    /// No sandbox could be set up, and none was waived: every job is refused with this reason.
    Missing(String),
}

/// What one job may use of the host.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Processes (and threads) of the job's user at once: a fork bomb stops here.
    pub max_procs: u64,
    /// Bytes of memory a job's processes use together (its cgroup's limit); 0: none.
    pub memory_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_procs: 1024,
            memory_bytes: 4 << 30,
        }
    }
}

/// The operator's choices, from the runner's flags.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `--unsandboxed-jobs`.
    pub unsandboxed: bool,
    /// `--bwrap`: default `bwrap` on PATH.
    pub bwrap: Option<PathBuf>,
    /// `--job-user`: a user name, or `UID:GID`.
    pub job_user: Option<String>,
    pub limits: Limits,
}

/// Where jobs' cgroups are made: only for a runner that drops jobs to their own user (root, so
/// the plugin can join the cgroup before it drops) and a memory limit asked for; else the
/// reason, once, in the runner's log.
fn job_cgroups(user: Option<JobUser>, limits: Limits) -> Option<JobCgroups> {
    if user.is_none() || limits.memory_bytes == 0 {
        return None;
    }
    match JobCgroups::detect() {
        Ok(c) => Some(c),
        Err(why) => {
            tracing::warn!(
                "jobs run without a memory limit (their process limit is the job user's): {why}"
            );
            None
        }
    }
}

/// The user jobs run as when the operator names none and the host has it (`install.sh` makes it).
const DEFAULT_JOB_USER: &str = "ferry-job";
/// Else `nobody`.
const NOBODY: JobUser = JobUser {
    uid: 65534,
    gid: 65534,
};

impl Sandbox {
    /// The sandbox this host offers, checked by running one; `Err` for flags that cannot hold
    /// (a job user that does not exist, or one named to a runner that is not root).
    pub fn detect(s: &Settings) -> Result<Sandbox, String> {
        if s.unsandboxed {
            return Ok(Sandbox::Unsandboxed);
        }
        let user = job_user(s.job_user.as_deref())?;
        let bwrap = match s.bwrap.clone().or_else(|| on_path("bwrap")) {
            Some(b) => b,
            None => {
                return Ok(Sandbox::Missing(
                    "bubblewrap (`bwrap`) is not installed on the runner host: install it \
                     (Debian, Ubuntu, Amazon Linux: package `bubblewrap`), or start the runner \
                     with --unsandboxed-jobs to run jobs as the runner itself"
                        .into(),
                ));
            }
        };
        let probe = std::process::Command::new(&bwrap)
            .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
            .args(["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--"])
            .arg("/bin/sh")
            .args(["-c", "exit 0"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .output();
        match probe {
            Ok(o) if o.status.success() => Ok(Sandbox::Bwrap {
                bwrap,
                user,
                limits: s.limits,
                cgroups: job_cgroups(user, s.limits),
            }),
            Ok(o) => Ok(Sandbox::Missing(format!(
                "bubblewrap ({}) cannot make a sandbox on this host: {} (user namespaces may be \
                 off for this user); run the runner as root, or start it with --unsandboxed-jobs",
                bwrap.display(),
                String::from_utf8_lossy(&o.stderr).trim()
            ))),
            Err(e) => Ok(Sandbox::Missing(format!(
                "bubblewrap ({}) could not be started: {e}; install it (package `bubblewrap`), \
                 or start the runner with --unsandboxed-jobs to run jobs as the runner itself",
                bwrap.display()
            ))),
        }
    }

    /// A cgroup for the job `name` with its limits, when the host gives the runner cgroups.
    /// Blocking.
    pub fn job_cgroup(&self, name: &str) -> Option<Result<JobCgroup, String>> {
        match self {
            Sandbox::Bwrap {
                cgroups: Some(c),
                limits,
                ..
            } => Some(c.create(name, limits.memory_bytes, limits.max_procs)),
            _ => None,
        }
    }

    /// Removes the cgroup a dead runner process left for the job `name` (killing what is left in
    /// it), if there is one. Blocking.
    pub fn remove_job_cgroup(&self, name: &str) {
        if let Sandbox::Bwrap {
            cgroups: Some(c), ..
        } = self
        {
            c.left_behind(name).remove();
        }
    }

    /// The job's memory limit, for its log when its cgroup ran out of it.
    pub fn memory_limit(&self) -> u64 {
        match self {
            Sandbox::Bwrap { limits, .. } => limits.memory_bytes,
            _ => 0,
        }
    }

    /// For the job's log (its first line after the execution's).
    pub fn describe(&self) -> String {
        match self {
            Sandbox::Bwrap { user: Some(u), .. } => format!(
                "sandboxed (bubblewrap) as uid {} gid {}: the runner's data directory, identity and settings are out of its reach",
                u.uid, u.gid
            ),
            Sandbox::Bwrap { user: None, .. } => "sandboxed (bubblewrap, in a user namespace as the runner's uid): the runner's data directory, identity and settings are out of its reach".into(),
            Sandbox::Unsandboxed => "NOT SANDBOXED: the runner was started with --unsandboxed-jobs, so this job runs as the runner, with its data directory in reach".into(),
            Sandbox::Missing(why) => format!("refused: no sandbox for jobs on this host: {why}"),
        }
    }

    /// As the runner reports it to the control plane.
    pub fn state(&self) -> ferry_protocol::messages::SandboxState {
        use ferry_protocol::messages::SandboxState;
        match self {
            Sandbox::Bwrap { user: Some(_), .. } => SandboxState::BubblewrapJobUser,
            Sandbox::Bwrap { user: None, .. } => SandboxState::BubblewrapUserNamespace,
            Sandbox::Unsandboxed => SandboxState::Unsandboxed,
            Sandbox::Missing(_) => SandboxState::Unavailable,
        }
    }

    /// The job's user, when jobs run as one.
    pub fn user(&self) -> Option<JobUser> {
        match self {
            Sandbox::Bwrap { user, .. } => *user,
            _ => None,
        }
    }

    /// The command that runs `exe args` (the plugin) for one job, confined as `c` says; its
    /// environment is `env` only.
    pub fn command(
        &self,
        exe: &Path,
        args: Vec<OsString>,
        c: &Confinement,
        env: &JobEnv,
    ) -> Result<tokio::process::Command, String> {
        let mut cmd = match self {
            Sandbox::Missing(why) => {
                return Err(format!("refused: no sandbox for jobs on this host: {why}"));
            }
            Sandbox::Unsandboxed => {
                let mut cmd = tokio::process::Command::new(exe);
                cmd.args(args).current_dir(&c.cwd);
                cmd
            }
            Sandbox::Bwrap {
                bwrap,
                user,
                limits,
                ..
            } => {
                let mut cmd = tokio::process::Command::new(bwrap);
                cmd.args(bwrap_args(c)).arg("--").arg(exe).args(args);
                for d in &c.cgroups {
                    cmd.arg("--cgroup").arg(d);
                }
                if let Some(u) = user.filter(|_| !c.ferry_only) {
                    cmd.arg("--drop-to")
                        .arg(u.to_string())
                        .arg("--max-procs")
                        .arg(limits.max_procs.to_string());
                }
                cmd
            }
        };
        cmd.env_clear().envs(env.vars(self, c));
        Ok(cmd)
    }

    /// A cancel's SIGTERM to the job started as process group `pgid`: in a sandbox, to every
    /// process of the group but bubblewrap's own (found in `/proc`: a cancel is rare), else to
    /// the group.
    pub fn terminate(&self, pgid: u32) {
        use nix::sys::signal::{Signal::SIGTERM, kill, killpg};
        use nix::unistd::Pid;
        if !matches!(self, Sandbox::Bwrap { .. }) {
            let _ = killpg(Pid::from_raw(pgid as i32), SIGTERM);
            return;
        }
        for pid in group_members(pgid) {
            let _ = kill(Pid::from_raw(pid), SIGTERM);
        }
    }

    /// Gives the job's user its work directory (all but the job file, which stays the
    /// runner's: the plugin reads it before it drops to the job's user). Blocking: call it off
    /// the async runtime.
    pub fn hand_over(&self, work: &Path) -> std::io::Result<()> {
        match self.user() {
            Some(u) => chown_tree(work, u, &|p| {
                p.file_name() == Some(std::ffi::OsStr::new("job.json"))
            }),
            None => Ok(()),
        }
    }

    /// Gives the job's user its component's state directory if it is not theirs yet: an
    /// earlier runner may have written it as itself. Only that component's jobs write in it, and
    /// they run one at a time, so nothing of a job's can change the tree while it is walked.
    /// Blocking.
    pub fn hand_over_state(&self, dir: &Path) -> std::io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        match self.user() {
            Some(u) if std::fs::symlink_metadata(dir)?.uid() != u.uid => {
                chown_tree(dir, u, &|_| false)
            }
            _ => Ok(()),
        }
    }

    /// Gives the job's user the install's shared directory itself, never walking it: jobs of
    /// the install may be writing in it (a link put where a directory was) while it is given.
    /// What is in it, jobs made. Blocking.
    pub fn hand_over_shared(&self, dir: &Path) -> std::io::Result<()> {
        match self.user() {
            Some(u) => std::os::unix::fs::lchown(dir, Some(u.uid), Some(u.gid)),
            None => Ok(()),
        }
    }
}

/// The processes of group `pgid` that are not bubblewrap's own.
fn group_members(pgid: u32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // `pid (comm) state ppid pgrp ...`: comm may hold anything but ends at the last ')'.
            let Some((head, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let comm = head.split_once('(').map_or("", |(_, c)| c);
            let pgrp = rest
                .split_whitespace()
                .nth(2)
                .and_then(|g| g.parse::<u32>().ok());
            pgrp == Some(pgid) && comm != "bwrap"
        })
        .collect()
}

/// `dir` and everything under it (symbolic links themselves, never what they point at) to `u`,
/// but what `skip` names.
fn chown_tree(dir: &Path, u: JobUser, skip: &dyn Fn(&Path) -> bool) -> std::io::Result<()> {
    std::os::unix::fs::lchown(dir, Some(u.uid), Some(u.gid))?;
    if !std::fs::symlink_metadata(dir)?.is_dir() {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if !skip(&path) {
            chown_tree(&path, u, skip)?;
        }
    }
    Ok(())
}

/// The job user the flags name (a runner that is root only), else the default.
fn job_user(named: Option<&str>) -> Result<Option<JobUser>, String> {
    let root = nix::unistd::geteuid().is_root();
    match named {
        Some(n) if !root => Err(format!(
            "--job-user {n}: only a runner started as root can run jobs as another user"
        )),
        Some(n) => match n.parse::<JobUser>() {
            Ok(u) => Ok(Some(u)),
            Err(_) => match nix::unistd::User::from_name(n) {
                Ok(Some(u)) => Ok(Some(JobUser {
                    uid: u.uid.as_raw(),
                    gid: u.gid.as_raw(),
                })),
                _ => Err(format!("--job-user {n}: no such user on this host")),
            },
        },
        None if !root => Ok(None),
        None => Ok(Some(match nix::unistd::User::from_name(DEFAULT_JOB_USER) {
            Ok(Some(u)) => JobUser {
                uid: u.uid.as_raw(),
                gid: u.gid.as_raw(),
            },
            _ => NOBODY,
        })),
    }
}

fn on_path(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// What one job may touch: everything else of the runner's is hidden.
#[derive(Debug, Clone, Default)]
pub struct Confinement {
    /// Hidden: the runner's data directory, its identity directory, `/etc/ferry`, the bootstrap
    /// token file (a directory becomes an empty one, a file an empty file).
    pub hidden: Vec<PathBuf>,
    /// Read-write: the job's work directory, its component's state, the store an image job
    /// writes.
    pub writable: Vec<PathBuf>,
    /// Read-only, bound back where they sit in a hidden directory: its tools.
    pub readable: Vec<PathBuf>,
    /// The job's work directory (its home is `home` in it).
    pub work: PathBuf,
    /// Where the plugin starts.
    pub cwd: PathBuf,
    /// The job runs only Ferry's own code, no vendor's (a `container_image` job copies an
    /// image by digest): it keeps the runner's user in its sandbox, to write the install's
    /// store, which the runner writes too.
    pub ferry_only: bool,
    /// The job's cgroup directories (its limits): bound writable, for the plugin to join.
    pub cgroups: Vec<PathBuf>,
}

/// bubblewrap's arguments for `c`: the host read-only, a private `/tmp`, `/dev` and `/proc`,
/// the hidden paths covered, the job's own paths bound back, new PID and IPC namespaces.
fn bwrap_args(c: &Confinement) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    let mut push = |xs: &[&dyn AsRef<std::ffi::OsStr>]| {
        a.extend(xs.iter().map(|x| x.as_ref().to_os_string()));
    };
    push(&[
        &"--ro-bind",
        &"/",
        &"/",
        &"--dev",
        &"/dev",
        &"--proc",
        &"/proc",
    ]);
    push(&[&"--perms", &"1777", &"--tmpfs", &"/tmp"]);
    for h in &c.hidden {
        match std::fs::metadata(h) {
            Ok(m) if m.is_dir() => push(&[&"--tmpfs", h]),
            Ok(_) => push(&[&"--ro-bind", &"/dev/null", h]),
            Err(_) => {}
        }
    }
    // The directories between a hidden one and a path bound back are made anew (bwrap would
    // make them the runner's only): each may be passed through, nothing in it listed.
    let mut made = std::collections::BTreeSet::new();
    for p in c.writable.iter().chain(&c.readable) {
        for h in c.hidden.iter().filter(|h| p.starts_with(h) && p != *h) {
            let mut between: Vec<&Path> = p
                .ancestors()
                .skip(1)
                .take_while(|x| x.starts_with(h) && x != h)
                .collect();
            between.reverse();
            for d in between {
                if made.insert(d.to_path_buf()) {
                    push(&[&"--perms", &"0711", &"--dir", &d]);
                }
            }
        }
    }
    for p in c.writable.iter().filter(|p| p.exists()) {
        push(&[&"--bind", p, p]);
    }
    for p in c.readable.iter().filter(|p| p.exists()) {
        push(&[&"--ro-bind", p, p]);
    }
    for p in &c.cgroups {
        push(&[&"--bind", p, p]);
    }
    push(&[&"--unshare-pid", &"--unshare-ipc", &"--unshare-uts"]);
    push(&[&"--die-with-parent", &"--chdir", &c.cwd]);
    a
}

/// A job's environment, an allow-list: nothing of the runner's but what is named here.
#[derive(Debug, Clone, Default)]
pub struct JobEnv {
    /// Host variables the operator passes on (`--job-env`: proxies, CA bundles).
    pub pass: Vec<String>,
    /// The job's own variables (the plugin's allocator setting, registry credentials for an
    /// image job, the role's credentials).
    pub set: Vec<(String, String)>,
    /// The runner is in no install stack: the job has the host's AWS settings (`roles.rs`).
    pub host_aws: bool,
}

/// Host variables every job gets when set: where tools are, the locale, and settings of Ferry's
/// own tools (not the runner's).
const ALWAYS: &[&str] = &[
    "PATH",
    "LANG",
    "LC_ALL",
    "TZ",
    "FERRY_TERRAFORM",
    "FERRY_ECR_ENDPOINT",
    "KUBERNETES_SERVICE_HOST",
    "KUBERNETES_SERVICE_PORT",
];

impl JobEnv {
    fn vars(&self, sandbox: &Sandbox, c: &Confinement) -> Vec<(OsString, OsString)> {
        let mut out: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| {
                let k = k.to_string_lossy();
                ALWAYS.contains(&k.as_ref())
                    || self.pass.iter().any(|p| *p == k)
                    || (self.host_aws && k.starts_with("AWS_"))
            })
            .collect();
        let home = c.work.join("home");
        let tmp = match sandbox {
            Sandbox::Bwrap { .. } => PathBuf::from("/tmp"),
            _ => c.work.join("tmp"),
        };
        out.push(("HOME".into(), home.into()));
        out.push(("TMPDIR".into(), tmp.into()));
        out.extend(self.set.iter().map(|(k, v)| (k.into(), v.into())));
        out
    }
}

/// In the plugin process, first thing (as the sandbox's root): drop to the job's user for
/// good, with no core dumps and at most `max_procs` processes.
pub fn enter(user: JobUser, max_procs: u64) -> Result<(), String> {
    use nix::sys::resource::{Resource, setrlimit};
    use nix::unistd::{Gid, Uid, setgroups, setresgid, setresuid};
    let (uid, gid) = (Uid::from_raw(user.uid), Gid::from_raw(user.gid));
    setgroups(&[gid]).map_err(|e| format!("setgroups: {e}"))?;
    setresgid(gid, gid, gid).map_err(|e| format!("setresgid: {e}"))?;
    setresuid(uid, uid, uid).map_err(|e| format!("setresuid: {e}"))?;
    if nix::unistd::geteuid() != uid || nix::unistd::setuid(Uid::from_raw(0)).is_ok() {
        return Err("could not drop to the job's user".into());
    }
    setrlimit(Resource::RLIMIT_CORE, 0, 0).map_err(|e| format!("RLIMIT_CORE: {e}"))?;
    setrlimit(Resource::RLIMIT_NPROC, max_procs, max_procs)
        .map_err(|e| format!("RLIMIT_NPROC: {e}"))?;
    // bwrap sets it; set here too, so no path to the job is without it.
    // SAFETY: prctl with constant arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!("no_new_privs: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_path_in_a_hidden_directory_gets_its_parents_made_passable() {
        let c = Confinement {
            hidden: vec!["/d".into(), "/etc/ferry".into()],
            writable: vec!["/d/work/e1".into(), "/d/state/web".into()],
            readable: vec![],
            work: "/d/work/e1".into(),
            cwd: "/d/work/e1/src".into(),
            ferry_only: false,
            cgroups: vec![],
        };
        let args: Vec<String> = bwrap_args(&c)
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let s = args.join(" ");
        assert!(s.contains("--perms 0711 --dir /d/work "), "{s}");
        assert!(s.contains("--perms 0711 --dir /d/state "), "{s}");
        assert!(
            !s.contains("--dir /d "),
            "the hidden directory itself is a tmpfs: {s}"
        );
        assert!(s.contains("--perms 1777 --tmpfs /tmp"), "{s}");
        assert!(s.contains("--unshare-pid"), "{s}");
    }

    #[test]
    fn a_job_user_is_uid_colon_gid() {
        assert_eq!(
            "1000:1001".parse::<JobUser>(),
            Ok(JobUser {
                uid: 1000,
                gid: 1001
            })
        );
        assert!("ferry".parse::<JobUser>().is_err());
    }
}
