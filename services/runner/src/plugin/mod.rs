//! Plugins: what runs inside the child process of a job (`ferry-runner plugin --job J --result R`).
//!
//! The runner writes a [`PluginJob`] file, starts the plugin in its own process group with stdout and
//! stderr captured as the job's log, and reads the [`PluginResult`] file when it exits. A plugin is
//! plain synchronous code driving the component's tools (sh, terraform, ...), and talks to nothing
//! but the local machine.

mod action;
mod image;
mod kube;
mod policy;
mod script;
pub(crate) mod terraform;

use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use ferry_protocol::messages::{ActionJob, ComponentJob, ComponentKind};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Plan,
    Apply,
    Teardown,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PluginJob {
    pub phase: Phase,
    pub org: String,
    pub install: String,
    /// The job as the control plane specified it (rendered variables, settings, cluster,
    /// policies): the offer's own type, not a copy of its fields.
    pub spec: ComponentJob,
    /// Apply: the approved plan's bytes, in a file.
    pub plan_file: Option<PathBuf>,
    pub plan_digest: Option<String>,
    /// The component's files, unpacked from its artifact.
    pub src_dir: PathBuf,
    /// Survives between jobs: the component's state (Terraform state, a script's files).
    pub state_dir: PathBuf,
    /// This execution's scratch directory.
    pub work_dir: PathBuf,
    #[serde(default)]
    pub tools: Tools,
    /// Apply of a Kubernetes component: the app's secrets to sync into the cluster first, with
    /// their values (read by the runner in the install's account; masked in the log).
    #[serde(default)]
    pub secrets: Vec<SyncedSecret>,
}

/// One secret's value and where in the cluster it goes (`kube::secrets`).
#[derive(Clone, Serialize, Deserialize)]
pub struct SyncedSecret {
    pub namespace: String,
    pub name: String,
    pub key: String,
    pub value: String,
    /// The value is base64 already (the secret's `format`).
    pub base64: bool,
}

// Never printed with its value.
impl std::fmt::Debug for SyncedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SyncedSecret({}/{}[{}])",
            self.namespace, self.name, self.key
        )
    }
}

/// One step of an action, as its plugin runs it: a command or a script with its environment,
/// and nothing of a component's (no phase, artifact, plan or state).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActionStep {
    pub org: String,
    pub install: String,
    pub step: ActionJob,
    /// Where the step runs (an inline script is written here).
    pub src_dir: PathBuf,
    /// This execution's scratch directory (its outputs file).
    pub work_dir: PathBuf,
    #[serde(default)]
    pub tools: Tools,
}

/// What the plugin process is given in its job file.
// One per job, written and read once: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PluginInput {
    /// One phase of a component.
    Component(PluginJob),
    /// One step of an action.
    Action(ActionStep),
}

impl PluginInput {
    pub fn work_dir(&self) -> &Path {
        match self {
            PluginInput::Component(j) => &j.work_dir,
            PluginInput::Action(a) => &a.work_dir,
        }
    }

    pub fn src_dir(&self) -> &Path {
        match self {
            PluginInput::Component(j) => &j.src_dir,
            PluginInput::Action(a) => &a.src_dir,
        }
    }

    /// The secret values the job holds (to copy into the cluster): its log masks them.
    pub fn secret_values(&self) -> Vec<String> {
        match self {
            PluginInput::Component(j) => j.secrets.iter().map(|s| s.value.clone()).collect(),
            PluginInput::Action(_) => vec![],
        }
    }

    /// The plugin's name, as metrics label it.
    pub fn plugin_name(&self) -> &'static str {
        match self {
            PluginInput::Component(j) => j.spec.kind.name(),
            PluginInput::Action(_) => "action",
        }
    }
}

/// The runner host's tools for the Kubernetes plugins, from its flags (`None`: found on `PATH`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Tools {
    pub helm: Option<PathBuf>,
    pub kubectl: Option<PathBuf>,
    /// The runner's own cluster, used when the sandbox names none.
    pub kubeconfig: Option<PathBuf>,
    /// The install's registry (`--registry`), where images are copied; its credentials are in
    /// the environment the plugin inherits, or ECR's.
    #[serde(default)]
    pub registry: Option<crate::registry::InstallRegistry>,
    /// The install's layout directory, where images go when there is no registry.
    #[serde(default)]
    pub layout: Option<PathBuf>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PluginResult {
    pub outputs: serde_json::Map<String, serde_json::Value>,
    /// Names of outputs the tool marks sensitive.
    #[serde(default)]
    pub sensitive_outputs: Vec<String>,
    pub plan: Option<PluginPlan>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PluginPlan {
    pub file: PathBuf,
    pub changes: bool,
    pub summary: String,
    /// The plan as structured JSON, if the tool gives one (Terraform's `show -json`).
    #[serde(default)]
    pub diff: Option<PathBuf>,
}

/// What one kind of component does in each phase of its jobs: one impl per kind, and
/// [`plugin_of`] the one table from a kind to its plugin.
pub(crate) trait Plugin: Sync {
    /// What every phase needs first (Terraform's `init`).
    fn prepare(&self, _job: &PluginJob) -> Result<(), PluginError> {
        Ok(())
    }

    /// Works out what an apply would change and keeps the plan in the work directory.
    fn plan(&self, job: &PluginJob) -> Result<PluginResult, PluginError>;

    /// Applies the approved plan (`job.plan_file`, checked against `job.plan_digest`); its
    /// outputs are the result's.
    fn apply(&self, job: &PluginJob) -> Result<PluginResult, PluginError>;

    /// Destroys what the applies created.
    fn teardown(&self, job: &PluginJob) -> Result<PluginResult, PluginError>;

    /// Runs the job's phase.
    fn run(&self, job: &PluginJob) -> Result<PluginResult, PluginError> {
        self.prepare(job)?;
        match job.phase {
            Phase::Plan => self.plan(job),
            Phase::Apply => self.apply(job),
            Phase::Teardown => self.teardown(job),
        }
    }
}

/// The plugin of a kind of component.
pub(crate) fn plugin_of(kind: ComponentKind) -> &'static dyn Plugin {
    match kind {
        ComponentKind::Script => &script::Script,
        ComponentKind::Terraform => &terraform::Terraform,
        ComponentKind::Helm => &kube::helm::Helm,
        ComponentKind::KubernetesManifest => &kube::manifest::Manifest,
        ComponentKind::ContainerImage => &image::Image,
        ComponentKind::Job => &kube::job::Job,
    }
}

/// A plugin failure: the message is the job's error, shown to the user.
#[derive(Debug)]
pub struct PluginError(pub String);

impl<E: std::fmt::Display> From<E> for PluginError {
    fn from(e: E) -> Self {
        PluginError(e.to_string())
    }
}

/// Entry point of `ferry-runner plugin`. Returns the process exit code.
/// The plugin process's command line: `ferry-runner plugin` (and the load test's own binary's).
#[derive(clap::Args, Debug, Clone)]
pub struct PluginArgs {
    /// The job file the runner wrote.
    #[arg(long)]
    pub job: PathBuf,
    /// Where the plugin writes its result.
    #[arg(long)]
    pub result: PathBuf,
    /// In a sandbox a root runner started: the job's user (`UID:GID`), dropped to for good
    /// before anything of the job runs (`sandbox::enter`).
    #[arg(long)]
    pub drop_to: Option<crate::sandbox::JobUser>,
    /// With --drop-to: the job's user's process limit.
    #[arg(long, default_value_t = 1024)]
    pub max_procs: u64,
    /// The job's cgroup directories (its limits), joined before anything of the job runs.
    #[arg(long = "cgroup")]
    pub cgroups: Vec<PathBuf>,
}

/// The plugin process: reads its job file (the runner's: it may hold secret values to copy into
/// a cluster, and no tool of the job can read it), drops to the job's user if asked, then runs
/// the job; its exit code.
pub fn entry(a: &PluginArgs) -> i32 {
    outlive_sigterm();
    let job =
        std::fs::read(&a.job).map_err(|e| PluginError(format!("reading {}: {e}", a.job.display())));
    if let Err(e) = crate::sandbox::join_cgroups(&a.cgroups) {
        eprintln!("error: entering the job's sandbox: {e}");
        return 1;
    }
    if let Some(user) = a.drop_to
        && let Err(e) = crate::sandbox::enter(user, a.max_procs)
    {
        eprintln!("error: entering the job's sandbox: {e}");
        return 1;
    }
    main(job, &a.result)
}

/// A cancel's SIGTERM reaches the job's tools and this process alike: this process outlives it
/// (a handler that does nothing; an exec resets it, so the tools keep SIGTERM's default), waits
/// for its tool to end and reports how. So a tool that cleans up on SIGTERM (Terraform releasing
/// its state lock) has the grace period, where the end of this process would end the sandbox,
/// and every tool in it, at once. SIGKILL after the grace period ends everything.
fn outlive_sigterm() {
    extern "C" fn ignore(_: libc::c_int) {}
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
    let action = SigAction::new(
        SigHandler::Handler(ignore),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler does nothing, so it is async-signal-safe; set before any thread.
    let _ = unsafe { sigaction(Signal::SIGTERM, &action) };
}

fn main(job: Result<Vec<u8>, PluginError>, result_path: &Path) -> i32 {
    let outcome = job
        .and_then(|b| {
            serde_json::from_slice::<PluginInput>(&b)
                .map_err(|e| PluginError(format!("job file: {e}")))
        })
        .and_then(|input| match input {
            PluginInput::Action(step) => action::execute(&step),
            PluginInput::Component(job) => plugin_of(job.spec.kind)
                .run(&job)
                .map(|r| unevaluated_policies(&job, r)),
        });
    let (result, code) = match outcome {
        Ok(r) => (r, 0),
        Err(PluginError(e)) => {
            eprintln!("error: {e}");
            (
                PluginResult {
                    error: Some(e),
                    ..Default::default()
                },
                1,
            )
        }
    };
    match serde_json::to_vec(&result)
        .map_err(|e| e.to_string())
        .and_then(|b| std::fs::write(result_path, b).map_err(|e| e.to_string()))
    {
        Ok(()) => code,
        Err(e) => {
            eprintln!("error: writing the result: {e}");
            1
        }
    }
}

/// Policies reach every plan of their type; Terraform plans, Helm charts, Kubernetes manifests
/// and jobs are evaluated by their plugins. Any other plan says which policies it was not
/// checked against, rather than passing in silence.
fn unevaluated_policies(job: &PluginJob, mut result: PluginResult) -> PluginResult {
    let evaluated = job.spec.kind.facts().evaluates_policies;
    if evaluated || job.spec.policies.is_empty() {
        return result;
    }
    if let Some(plan) = result.plan.as_mut() {
        let names: Vec<&str> = job.spec.policies.iter().map(|p| p.name.as_str()).collect();
        let note = format!(
            "Policies not evaluated for this type by this version: {}.",
            names.join(", ")
        );
        println!("{note}");
        plan.summary.push(' ');
        plan.summary.push_str(&note);
    }
    result
}

pub(crate) fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Reads the approved plan and refuses it unless it hashes to the approved digest.
pub(crate) fn approved_plan(job: &PluginJob) -> Result<Vec<u8>, PluginError> {
    let (Some(file), Some(digest)) = (&job.plan_file, &job.plan_digest) else {
        return Err(PluginError("apply without an approved plan".into()));
    };
    let bytes = std::fs::read(file)?;
    let actual = sha256(&bytes);
    if &actual != digest {
        return Err(PluginError(format!(
            "refusing to apply: the plan hashes to {actual}, but {digest} was approved"
        )));
    }
    Ok(bytes)
}

/// Runs a command with stdout passed through to ours (the job log) and also captured.
pub(crate) fn run_tee(cmd: &mut Command) -> Result<(ExitStatus, String), PluginError> {
    run_tee_shown(cmd, |l| Some(l.to_string()))
}

/// [`run_tee`], writing to the job's log what `show` makes of each line (nothing for `None`) and
/// capturing the lines as they came: for tools whose machine-readable output is read back.
pub(crate) fn run_tee_shown(
    cmd: &mut Command,
    show: impl Fn(&str) -> Option<String>,
) -> Result<(ExitStatus, String), PluginError> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .stdin(Stdio::null())
        .spawn()?;
    let mut captured = String::new();
    if let Some(out) = child.stdout.take() {
        let stdout = std::io::stdout();
        let mut reader = BufReader::new(out);
        let mut raw = Vec::new();
        // Bytes, not `lines()`: output that is not UTF-8 must not stop the reading (the tool
        // would die of SIGPIPE); it is kept, lossily.
        while read_line_capped(&mut reader, &mut raw, MAX_LINE)? {
            let line = String::from_utf8_lossy(&raw);
            let line = line.trim_end_matches(['\n', '\r']);
            if let Some(shown) = show(line) {
                let mut lock = stdout.lock();
                let _ = writeln!(lock, "{shown}");
                let _ = lock.flush();
            }
            captured.push_str(line);
            captured.push('\n');
        }
    }
    Ok((child.wait()?, captured))
}

/// The longest line kept whole; a longer one is split (the log caps lines lower still).
const MAX_LINE: usize = 64 * 1024;

/// Reads one line (up to and with its `\n`, or `cap` bytes, or the rest) into `buf`; false at
/// the end of the input.
pub fn read_line_capped(
    r: &mut impl std::io::BufRead,
    buf: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<bool> {
    buf.clear();
    while buf.len() < cap {
        let available = r.fill_buf()?;
        if available.is_empty() {
            break;
        }
        let room = cap - buf.len();
        let (take, done) = match available.iter().take(room).position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len().min(room), false),
        };
        buf.extend_from_slice(&available[..take]);
        r.consume(take);
        if done {
            break;
        }
    }
    Ok(!buf.is_empty())
}

/// Runs a command with stdout and stderr going to the job log.
pub(crate) fn run(cmd: &mut Command) -> Result<ExitStatus, PluginError> {
    Ok(cmd
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()?)
}
