//! What `ferry dev` runs and how: the child processes it supervises (each tied to its life by
//! `PR_SET_PDEATHSIG`, stopped in reverse start order), the tools and binaries it finds, and the
//! lock that keeps one `ferry dev` per data directory.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

/// The child processes, stopped in reverse start order (runner, server, NATS) on drop.
pub(crate) struct Children {
    /// Each child's name (`ferry-runner <install>` for a runner), process and log file.
    pub(crate) list: Vec<(String, Child, PathBuf)>,
}

impl Children {
    pub(crate) fn spawn(&mut self, name: &str, cmd: &mut Command, log: PathBuf) -> Result<()> {
        let out =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let err = out.try_clone()?;
        cmd.stdin(Stdio::null()).stdout(out).stderr(err);
        // SAFETY: the closure runs in the forked child before exec and only calls prctl(2), which is
        // async-signal-safe. PR_SET_PDEATHSIG ties the child's life to this process (the main thread,
        // which spawns every child), so a killed `ferry dev` leaves nothing behind.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {name} ({:?})", cmd.get_program()))?;
        self.list.push((name.to_string(), child, log));
        Ok(())
    }

    /// A child that has exited: its name, status and log file.
    pub(crate) fn exited(&mut self) -> Option<(String, String, PathBuf)> {
        for (name, child, log) in &mut self.list {
            if let Ok(Some(status)) = child.try_wait() {
                return Some((name.clone(), status.to_string(), log.clone()));
            }
        }
        None
    }

    pub(crate) fn stop(&mut self) {
        while let Some((_, child, _)) = self.list.pop() {
            stop_child(child);
        }
    }

    /// Stops the child named `name`, if there is one.
    pub(crate) fn stop_one(&mut self, name: &str) {
        if let Some(i) = self.list.iter().position(|(n, _, _)| n == name) {
            let (_, child, _) = self.list.remove(i);
            stop_child(child);
        }
    }
}

/// SIGTERM, then SIGKILL after 5 s.
fn stop_child(mut child: Child) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => break,
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        self.stop();
    }
}

pub(crate) fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

pub(crate) fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// `.tools/bin/<name>` in the working directory or any parent (the repository when run from a
/// checkout), then next to or above this executable, then `PATH`.
pub(crate) fn find_tool(name: &str) -> Option<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        roots.extend(cwd.ancestors().map(Path::to_path_buf));
    }
    if let Ok(exe) = std::env::current_exe() {
        roots.extend(exe.ancestors().skip(1).map(Path::to_path_buf));
    }
    for r in roots {
        let p = r.join(".tools/bin").join(name);
        if p.is_file() {
            return Some(p);
        }
    }
    which(name)
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A Ferry binary: next to this executable (a build or an install), else on `PATH`.
pub(crate) fn sibling(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe().context("locating the ferry executable")?;
    if let Some(p) = exe.parent().map(|d| d.join(name)).filter(|p| p.is_file()) {
        return Ok(p);
    }
    which(name).ok_or_else(|| {
        anyhow!(
            "{name} not found next to {} or on PATH: build the workspace (cargo build)",
            exe.display()
        )
    })
}

/// Locks `data` for this process (`<data>/dev.lock`, holding its pid): a second `ferry dev` on
/// the same directory would start a second hub on the same JetStream store and runners on the same
/// install state, and silently break the first. The lock goes with the process, however it ends.
pub(crate) fn lock_data_dir(data: &Path) -> Result<std::fs::File> {
    use std::io::Write;
    let path = data.join("dev.lock");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {
            file.set_len(0)?;
            write!(file, "{}", std::process::id())?;
            Ok(file)
        }
        Err(std::fs::TryLockError::WouldBlock) => {
            let pid = std::fs::read_to_string(&path).unwrap_or_default();
            bail!(
                "{} is in use by another `ferry dev` (pid {}): stop that one first, or give this one \
                 its own --data-dir and --http-addr",
                data.display(),
                pid.trim()
            )
        }
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("locking {}", path.display()))
        }
    }
}
