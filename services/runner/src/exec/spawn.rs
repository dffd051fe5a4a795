//! How a job's plugin process is made: what it may touch (its `Confinement`), its environment
//! (the allow-list), and the sandbox it starts in (`crate::sandbox`); and the one way the runner
//! reads what a job wrote.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::Executor;
use crate::plugin::PluginInput;

/// The plugin process's allocator setting: no transparent huge pages (`plugin_command`).
const PLUGIN_ALLOCATOR: (&str, &str) = ("MIMALLOC_ALLOW_THP", "0");

/// How a job's plugin process is started: as whom in the account, and confined to what.
pub(super) struct Spawn<'a> {
    pub(super) identity: &'a crate::roles::Identity,
    pub(super) confinement: &'a crate::sandbox::Confinement,
}

impl Executor {
    /// What `job` may touch (`sandbox.rs`): its work directory, its component's state, the
    /// layout store for an image job, its tools; the runner's data directory and secrets hidden.
    /// The job's user is given what it writes.
    pub(super) async fn confine(
        &self,
        job: &PluginInput,
        work: &Path,
    ) -> Result<crate::sandbox::Confinement, String> {
        let mut writable = vec![work.to_path_buf()];
        let ferry_only = matches!(job, PluginInput::Component(j)
            if j.spec.kind == ferry_protocol::messages::ComponentKind::ContainerImage);
        let state = match job {
            PluginInput::Component(j) => Some(j.state_dir.clone()),
            PluginInput::Action(_) => None,
        };
        writable.extend(state.clone());
        writable.push(self.install_dir());
        if ferry_only && self.registry.is_none() {
            writable.extend(self.tools.layout.clone());
        }
        let tools = &self.tools;
        let readable = [&tools.helm, &tools.kubectl, &tools.kubeconfig]
            .into_iter()
            .flatten()
            .cloned()
            .chain(std::env::current_exe().ok())
            .collect();
        let mut hidden = vec![self.data_dir.clone()];
        hidden.extend(self.hidden.iter().cloned());
        let (sandbox, w, shared) = (self.sandbox.clone(), work.to_path_buf(), self.install_dir());
        tokio::task::spawn_blocking(move || {
            for d in [w.join("home"), w.join("tmp"), shared.clone()] {
                std::fs::create_dir_all(d)?;
            }
            sandbox.hand_over(&w)?;
            if let Some(state) = &state {
                sandbox.hand_over_state(state)?;
            }
            sandbox.hand_over_shared(&shared)
        })
        .await
        .map_err(|e| format!("preparing the job's sandbox: {e}"))?
        .map_err(|e| format!("preparing the job's sandbox: {e}"))?;
        Ok(crate::sandbox::Confinement {
            hidden,
            writable,
            readable,
            work: work.to_path_buf(),
            cwd: job.src_dir().to_path_buf(),
            ferry_only,
            cgroups: vec![],
        })
    }

    /// The job's own cgroup (its memory and process limits), made for the work directory
    /// `work`, when the host gives the runner cgroups.
    pub(super) async fn job_cgroup(
        &self,
        work: &Path,
    ) -> Result<Option<crate::sandbox::JobCgroup>, String> {
        let name = work
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let sandbox = self.sandbox.clone();
        tokio::task::spawn_blocking(move || sandbox.job_cgroup(&name).transpose())
            .await
            .map_err(|e| format!("making the job's cgroup: {e}"))?
            .map_err(|e| format!("making the job's cgroup: {e}"))
    }

    /// Ends the job's cgroup (whatever is left in it killed) and says whether the kernel killed
    /// a process of it for want of memory.
    pub(super) async fn end_cgroup(cgroup: Option<crate::sandbox::JobCgroup>) -> bool {
        let Some(c) = cgroup else { return false };
        tokio::task::spawn_blocking(move || {
            let oom = c.oom_killed();
            c.remove();
            oom
        })
        .await
        .unwrap_or(false)
    }

    /// The install's own environment on this host, shared by its jobs (`FERRY_INSTALL_DIR`):
    /// what a local sandbox provisions and its components write into, as a cloud install's
    /// jobs share its account. Nothing of the runner's is in it.
    fn install_dir(&self) -> PathBuf {
        self.install_dir.clone()
    }

    /// `ferry-runner plugin` for `job`, in its sandbox and its own process group (so a timeout
    /// or a cancel reaches every tool it starts), its output piped to the log, its environment
    /// the allow-list (`sandbox::JobEnv`).
    pub(super) fn plugin_command(
        &self,
        job: &PluginInput,
        how: &Spawn<'_>,
    ) -> Result<tokio::process::Command, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find the runner executable to start the plugin: {e}"))?;
        let args = vec![
            "plugin".into(),
            "--job".into(),
            job.work_dir().join("job.json").into(),
            "--result".into(),
            job.work_dir().join("result.json").into(),
        ];
        // A plugin process lives for one job: mimalloc's transparent huge pages (an madvise of
        // its first arena) cost it two 2 MiB pages zeroed at start, a fifth of its start's CPU
        // (`perf`: `clear_page_erms` under `do_huge_pmd_anonymous_page`), for nothing a short
        // life gains from them. The runner keeps them. Read by the plugin's allocator only: its
        // tools (sh, terraform, helm) do not link mimalloc.
        let mut set = vec![
            (PLUGIN_ALLOCATOR.0.into(), PLUGIN_ALLOCATOR.1.into()),
            (
                "FERRY_INSTALL_DIR".into(),
                self.install_dir().to_string_lossy().into_owned(),
            ),
        ];
        // An image job writes the install's registry: its credentials, and to it only.
        if let PluginInput::Component(j) = job
            && j.spec.kind == ferry_protocol::messages::ComponentKind::ContainerImage
        {
            set.extend(crate::registry::env_credentials());
        }
        let env = crate::sandbox::JobEnv {
            pass: self.job_env.clone(),
            set,
            host_aws: matches!(how.identity, crate::roles::Identity::Host),
        };
        let mut cmd = self.sandbox.command(&exe, args, how.confinement, &env)?;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so a timeout or a cancel reaches every tool it started.
            .process_group(0)
            .kill_on_drop(true);
        Ok(cmd)
    }
}

/// A file the job wrote, read by the runner: only from inside the job's work directory, so a
/// job cannot make the runner read (and send to the hub) a file of the runner's through a path
/// or a symbolic link in its result. Every process of the job has ended by now.
pub(super) async fn read_from_job(work: &Path, file: &Path) -> std::io::Result<Vec<u8>> {
    let (work, file) = (work.to_path_buf(), file.to_path_buf());
    tokio::task::spawn_blocking(move || {
        let real = std::fs::canonicalize(&file)?;
        if !real.starts_with(std::fs::canonicalize(&work)?) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "{} is outside the job's work directory: not read",
                    file.display()
                ),
            ));
        }
        std::fs::read(real)
    })
    .await
    .map_err(std::io::Error::other)?
}
