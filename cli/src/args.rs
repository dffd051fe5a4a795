//! The command line, as clap reads it: every command, its flags and their `--help` text.
//!
//! Long because it is the whole command surface in one place: its help reads together, and one
//! test walks every command and argument for help text.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::dev;

/// Ferry: run your software in your customers' cloud accounts.
///
/// Package an app as a directory of TOML files, sync it, create installs, and watch them deploy.
/// `ferry dev` runs the whole platform on this machine and deploys the example app.
#[derive(Parser, Debug)]
#[command(name = "ferry", version, propagate_version = true)]
pub(crate) struct Cli {
    /// Base URL of the Ferry API [default: the one `ferry login` saved, else
    /// http://127.0.0.1:4600, what `ferry dev` serves]. Without a scheme, http:// is meant.
    #[arg(long, global = true, env = "FERRY_API")]
    pub(crate) api: Option<String>,
    /// API token (default: the one `ferry login` saved).
    #[arg(long, global = true, env = "FERRY_TOKEN", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// Results and errors only: no progress lines (for scripts; the exit code says how it
    /// went). Colour is used on a terminal only, and never with NO_COLOR set.
    #[arg(short, long, global = true)]
    pub(crate) quiet: bool,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// App packages: validate, sync, list.
    #[command(subcommand)]
    Apps(AppsCmd),
    /// Installs of an app: create, get, list, deploy.
    #[command(subcommand)]
    Installs(InstallsCmd),
    /// Workflows: the step-by-step record of a deploy.
    #[command(subcommand)]
    Workflows(WorkflowsCmd),
    /// Actions: operations run inside an install (by hand, on a schedule, or around deploys),
    /// and their runs.
    #[command(subcommand)]
    Actions(ActionsCmd),
    /// Runbooks: the app's ordered procedures (deploys, actions, sandbox and teardown steps).
    #[command(subcommand)]
    Runbooks(RunbooksCmd),
    /// Releases: a config version rolled out over an app's installs in waves, each gated on its
    /// installs' deploys and health before the next.
    #[command(subcommand)]
    Releases(ReleasesCmd),
    /// Break-glass roles on an install, granted by the customer (a `customer` token) for a while:
    /// the actions that need one run only then. The runner host can grant them too
    /// (`ferry-runner break-glass grant`), and can refuse those granted here
    /// (`--break-glass-host-only`).
    #[command(name = "break-glass", subcommand)]
    BreakGlass(BreakGlassCmd),
    /// Jobs: one unit of work for one install (sync, plan, apply) and its executions.
    #[command(subcommand)]
    Jobs(JobsCmd),
    /// Runners: the processes in each install's account that run its jobs, and their health.
    #[command(subcommand)]
    Runners(RunnersCmd),
    /// Approvals: plans waiting for a decision (`ferry workflows approve` / `deny` decide them).
    #[command(subcommand)]
    Approvals(ApprovalsCmd),
    /// Print (or follow) a job's log.
    #[command(group(clap::ArgGroup::new("whose").required(true).args(["job", "workflow", "install"])))]
    Logs {
        /// A job's log (its id, as `ferry workflows get` shows it).
        #[arg(long)]
        job: Option<String>,
        /// A workflow's log: every job of it in step order, each after a header.
        #[arg(long)]
        workflow: Option<String>,
        /// The log of the install's latest workflow.
        #[arg(long)]
        install: Option<String>,
        /// With --workflow or --install: only this component's jobs.
        #[arg(long)]
        component: Option<String>,
        /// Keep printing new lines until the job (or the workflow) ends.
        #[arg(short, long)]
        follow: bool,
        /// Each line's time in front of it (the default on a terminal).
        #[arg(long, overrides_with = "no_timestamps")]
        timestamps: bool,
        /// No times in front of the lines (the default when the output is not a terminal).
        #[arg(long)]
        no_timestamps: bool,
        /// JSON lines: one object per log line.
        #[arg(long)]
        json: bool,
    },
    /// The org's audit record (an admin token): who did what to which install, and when, oldest
    /// first. Every decision, deploy, grant and token change is in it; it cannot be changed.
    Audit(crate::audit::Ask),
    /// Run the whole platform on this machine (NATS, all services, a runner) and deploy an app.
    Dev(dev::DevArgs),
    /// Check a token against the API and save it for later commands.
    Login {
        /// The API token to check and save (`ferry_...`).
        #[arg(long)]
        token: String,
    },
    /// API tokens of your org (admin): create, list, revoke.
    #[command(subcommand)]
    Tokens(TokensCmd),
    /// Print a shell completion script: `ferry completion bash > /etc/bash_completion.d/ferry`,
    /// `ferry completion zsh > "${fpath[1]}/_ferry"`, `ferry completion fish >
    /// ~/.config/fish/completions/ferry.fish`.
    Completion {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// How a listing is printed: `--output` (or `--json`, its short form for JSON).
#[derive(clap::Args, Debug, Clone, Copy)]
pub(crate) struct ListOutput {
    /// Print JSON instead of text (the same as `--output json`).
    #[arg(long, conflicts_with = "output")]
    pub(crate) json: bool,
    /// table: the main columns (the default); wide: every column; json: the records as the API
    /// gives them.
    #[arg(short, long, value_enum, value_name = "FORMAT")]
    pub(crate) output: Option<crate::render::Output>,
}

impl ListOutput {
    pub(crate) fn format(self) -> crate::render::Output {
        match (self.json, self.output) {
            (true, _) => crate::render::Output::Json,
            (_, Some(o)) => o,
            _ => crate::render::Output::Table,
        }
    }
}

#[derive(Subcommand, Debug)]
pub(crate) enum TokensCmd {
    /// Create a token; its text is printed once. Viewers read; operators also deploy and respond
    /// to workflows; admins also manage apps, installs and tokens. A customer token (for the
    /// customer's security team) reads and grants break-glass roles, which no other role may;
    /// it is bound to the customer's installs (`--install`, `--label`) and sees nothing else.
    /// Viewer and operator tokens may be bound the same way (a team per customer); an admin
    /// token reaches every install.
    #[command(
        after_help = "Examples:\n  ferry tokens create --name acme-sec --role customer --install acme-prod\n  ferry tokens create --name acme-team --role operator --label customer=acme"
    )]
    Create {
        /// Who or what the token is for (`alice`, `ci`): audit records name it.
        #[arg(long)]
        name: String,
        /// What the token may do: viewer, operator, admin, or customer.
        #[arg(long, value_parser = ["viewer", "operator", "admin", "customer"])]
        role: String,
        /// An install the token reaches (repeat for more). With none and no --label, a viewer
        /// or operator token reaches every install of the org.
        #[arg(long = "install", value_name = "NAME")]
        installs: Vec<String>,
        /// Also every install carrying all of these labels (`KEY=VALUE`, comma-separated or
        /// repeated).
        #[arg(long = "label", value_name = "KEY=VALUE")]
        labels: Vec<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List tokens (never their secrets).
    List {
        #[command(flatten)]
        out: ListOutput,
    },
    /// Revoke a token: refused from its next request on.
    Revoke {
        /// The token's id or its name (as `tokens list` shows them).
        #[arg(value_name = "ID_OR_NAME")]
        which: String,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum AppsCmd {
    /// Check an app directory without uploading it: every error and warning as
    /// `file:line:col: severity: message`, then the deploy order. Exit 0 when valid, 1 when not.
    ///
    /// Ferry accepts every package Nuon accepts: what Nuon accepts but Ferry doubts (unknown keys,
    /// templates that would fail at deploy, ...) is a warning, and a package with only warnings is
    /// valid.
    Validate {
        /// The app package's directory.
        dir: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Treat every warning as an error (exit 1 when there is any).
        #[arg(long)]
        strict: bool,
    },
    /// Check a package against Nuon's config lint rules (labels, admin permissions, pinned
    /// sandbox, policy tests, ...), configured by the package's `lint.toml` as Nuon's linter reads
    /// it. Each finding as `file:line:col: severity: message [rule]`; exit 1 when any is an error.
    /// `apps validate` checks the rest (syntax, templates, references).
    Lint {
        /// The app package's directory.
        dir: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// List the rules and what each checks, instead of linting.
        #[arg(long)]
        rules: bool,
    },
    /// An app and its fleet: how many installs run each config version, which are drifted,
    /// failing, or waiting for an approval.
    Get {
        /// The app's name.
        name: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Upload an app directory as a new config version (only if something changed).
    Sync {
        /// The app package's directory.
        dir: PathBuf,
        /// App name (default: the directory's name).
        #[arg(long)]
        name: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List apps.
    List {
        #[command(flatten)]
        out: ListOutput,
    },
    /// Print the JSON Schema of the package format (for editors), or its Markdown reference.
    Schema {
        /// The Markdown reference (docs/app-config.md's generated part) instead of JSON Schema.
        #[arg(long)]
        markdown: bool,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum InstallsCmd {
    /// Create an install of an app and start provisioning it.
    Create {
        /// The app, as `apps sync` named it.
        #[arg(long)]
        app: String,
        /// The install's name.
        #[arg(long)]
        name: String,
        /// An input value, `name=value` (repeatable).
        #[arg(long = "input", value_name = "NAME=VALUE")]
        inputs: Vec<String>,
        /// Approve every plan of this install without review.
        #[arg(long)]
        approve_all: bool,
        /// Who approves the install's plans: `vendor` (your operators; approve-all counts),
        /// `customer` (the install's customer, with a customer token; approve-all does not), or
        /// `both` (each once).
        #[arg(long, value_name = "WHO", default_value = "vendor", value_parser = ["vendor", "customer", "both"])]
        approvals: String,
        /// A label, `key=value` (repeatable): `installs list --label` finds installs by them.
        #[arg(long = "label", value_name = "KEY=VALUE")]
        labels: Vec<String>,
        /// Follow the provisioning workflow until it ends; exit 1 unless it succeeded.
        #[arg(long)]
        wait: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The install stack: the CloudFormation template the customer launches in their AWS
    /// account. It creates the runner host (an auto-scaling group of one, outbound only), one IAM
    /// role per role of the app's `permissions/` (assumable only by the runner), the break-glass
    /// roles while the customer turns them on, and a Secrets Manager secret per app secret. The
    /// customer gives the install's one-time runner token (`installs runner-token`) at launch.
    Stack {
        /// The install's name.
        name: String,
        /// Write the template to this file instead of standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<std::path::PathBuf>,
        /// Where the runner host downloads the runner bundle (the template's default).
        #[arg(long, value_name = "URL")]
        bundle_url: Option<String>,
        /// The bundle's sha256 (64 hex digits): the host refuses any other.
        #[arg(long, value_name = "HEX")]
        bundle_sha256: Option<String>,
        /// Publish the template to the control plane's bucket (`ferry-server --stack-bucket`)
        /// and print the AWS console's quick-create link that launches it; `installs get` shows
        /// the link afterwards.
        #[arg(long, conflicts_with = "out")]
        upload: bool,
        /// With --upload: the region whose console the link opens (default: the bucket's).
        #[arg(long, requires = "upload")]
        region: Option<String>,
        /// With --upload: print the published template's record as JSON.
        #[arg(long, requires = "upload")]
        json: bool,
    },
    /// The workflows that changed what this install runs (provisions, deploys, runbooks,
    /// teardowns), newest first: the config version each deployed, who asked, how it ended.
    History {
        /// The install's name.
        name: String,
        #[command(flatten)]
        out: ListOutput,
    },
    /// Deploy the config version the install ran before its current one (or `--to` a given
    /// one): a deploy like any other, with its plans and approvals.
    Rollback {
        /// The install's name.
        name: String,
        /// The config version to go back to (its number, `2` or `v2`, or its id).
        #[arg(long, value_name = "VERSION")]
        to: Option<String>,
        /// Follow the workflow until it ends; exit 1 unless it succeeded.
        #[arg(long)]
        wait: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The app's readme (metadata `readme`) rendered for this install, as Nuon renders it: its
    /// templates read the install's inputs and outputs (`{{ .nuon.components.db.outputs.host }}`),
    /// every printed value HTML-escaped. A readme that reads something the install does not
    /// have yet prints as written, with a warning on standard error.
    Readme {
        /// The install's name.
        name: String,
        /// Print JSON instead of the markdown.
        #[arg(long)]
        json: bool,
    },
    /// A new one-time token for a runner of this install (`ferry-runner --bootstrap`); printed
    /// once, usable once, for an hour.
    RunnerToken {
        /// The install's name.
        name: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write what a runner host needs into a directory: runner.env (hub address, one-time
    /// token), a systemd unit, and how to install and start it.
    RunnerBundle {
        /// The install's name.
        name: String,
        /// Where to write the bundle.
        #[arg(long, default_value = "ferry-runner-bundle")]
        out: std::path::PathBuf,
        /// The hub's leafnode URL as the runner host reaches it (default: the one the control
        /// plane was given, `ferry-server --runner-hub-url`; required when it has none).
        #[arg(long)]
        hub_url: Option<String>,
        /// The runner's data directory on its host: its identity, the install's state.
        #[arg(long, default_value = "/var/lib/ferry-runner")]
        data_dir: std::path::PathBuf,
        /// For the install stack's runner host: no token in runner.env (the stack keeps the
        /// one-time token in Secrets Manager) and an install.sh, which the stack's user data runs.
        #[arg(long)]
        for_stack: bool,
        /// A file to put in the bundle's bin/ (ferry-runner, nats-server, tools); repeatable.
        #[arg(long = "binary", value_name = "PATH")]
        binaries: Vec<std::path::PathBuf>,
        /// Also pack the bundle as this .tar.gz and print its sha256 (for `installs stack
        /// --bundle-url URL --bundle-sha256 SHA`).
        #[arg(long, value_name = "FILE")]
        archive: Option<std::path::PathBuf>,
    },
    /// Revoke the install: its runners are disconnected within seconds, and every certificate,
    /// renewal and earlier token of it is refused until a new token (`installs runner-token`).
    Revoke {
        /// The install's name.
        name: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show an install: its components, their status and outputs.
    Get {
        /// The install's name.
        name: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List installs: each with its status, config version and drifted components; filters
    /// combine.
    List {
        /// Only installs of this app.
        #[arg(long)]
        app: Option<String>,
        /// Only installs running this app config version (its id).
        #[arg(long)]
        config: Option<String>,
        /// Only installs with this status.
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(ferry_model::InstallStatus::labels()))]
        status: Option<String>,
        /// Only installs with a drifted component.
        #[arg(long)]
        drifted: bool,
        /// Only installs whose runner is in this health (`none`: no runner ever connected).
        #[arg(long, value_parser = ferry_model::RUNNER_HEALTH_FILTERS)]
        runner_health: Option<String>,
        /// Only installs carrying this label, `key=value` (repeatable: all of them).
        #[arg(long = "label", value_name = "KEY=VALUE")]
        labels: Vec<String>,
        #[command(flatten)]
        out: ListOutput,
    },
    /// Set or remove an install's labels: `ferry installs label I team=payments tier=gold
    /// --remove old`.
    Label {
        /// The install's name.
        name: String,
        /// Labels to set, `key=value`.
        #[arg(value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// A label to remove, by key (repeatable).
        #[arg(long = "remove", value_name = "KEY")]
        remove: Vec<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Check the install for drift: plan its components (all, or those named) with the config
    /// it runs, applying nothing; a plan with changes marks its component drifted (`installs
    /// get`), until a deploy of it. A deploy started meanwhile cancels the check.
    DriftCheck {
        /// The install's name.
        name: String,
        /// Only this component (repeatable; `sandbox` is the sandbox).
        #[arg(long = "component", value_name = "C")]
        components: Vec<String>,
        /// Follow the check until it ends; exit 1 unless it succeeded.
        #[arg(long)]
        wait: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Who approves the install's plans: `vendor`, `customer` or `both`. A side's say is taken
    /// away only by that side (a vendor token cannot drop the customer's approvals); audited.
    Approvals {
        /// The install's name.
        name: String,
        /// `vendor`, `customer` or `both`.
        #[arg(value_parser = ["vendor", "customer", "both"])]
        who: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Switch approve-all on or off; switched on, plans waiting for a decision are released at once.
    ApproveAll {
        /// The install's name.
        name: String,
        /// `on` or `off`.
        #[arg(value_parser = ["on", "off"])]
        state: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Change input values (checked against their types) and deploy: only what the change
    /// affects applies.
    UpdateInputs {
        /// The install's name.
        name: String,
        /// An input value, `name=value` (repeatable).
        #[arg(long = "input", value_name = "NAME=VALUE", required = true)]
        inputs: Vec<String>,
        /// Follow the workflow until it ends; exit 1 unless it succeeded.
        #[arg(long)]
        wait: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Forget an install. Refused while anything of it is deployed (tear it down first), unless
    /// --force, which leaves those resources with nobody to manage them.
    Delete {
        /// The install's name.
        name: String,
        /// Forget it even while something is deployed (what it deployed stays where it is).
        #[arg(long)]
        force: bool,
    },
    /// Destroy what an install has deployed: components in reverse deploy order, then the sandbox.
    Teardown {
        /// The install's name.
        name: String,
        /// Follow the workflow until it ends; exit 1 unless it succeeded.
        #[arg(long)]
        wait: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Deploy the app's latest config to an install: every component (and the sandbox), or only
    /// those named with --component.
    Deploy {
        /// The install's name.
        name: String,
        /// Only this component (repeat for more; `sandbox` is the sandbox). Components it depends
        /// on keep what they have deployed.
        #[arg(long = "component", value_name = "NAME")]
        components: Vec<String>,
        /// With --component: also everything that depends on those components, directly or not.
        #[arg(long, requires = "components")]
        with_dependents: bool,
        /// Build, sync and plan, then stop: nothing is approved or applied. Review the plans with
        /// `ferry workflows get W`.
        #[arg(long)]
        plan_only: bool,
        /// Deploy this config version of the app (its number, `2` or `v2`, as `apps sync`
        /// prints it, or its id) instead of the latest: an earlier one rolls back.
        #[arg(long, value_name = "VERSION")]
        config: Option<String>,
        /// Plan every component first (a plan-only deploy: each plan made and judged by the
        /// app's policies against what is deployed now), and deploy only if all passed: a deny
        /// on a later component then leaves nothing applied. Without it (the default) components
        /// deploy in order, each planned, judged and applied before the next, and a deny leaves
        /// the earlier ones applied. Implies --wait.
        #[arg(long, conflicts_with = "plan_only")]
        plan_first: bool,
        /// Follow the workflow until it ends; exit 1 unless it succeeded.
        #[arg(long)]
        wait: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Plan and apply the install's sandbox again (after its approval); components stay as they
    /// are.
    Reprovision {
        /// The install's name.
        name: String,
        /// Follow the workflow until it ends; exit 1 unless it succeeded.
        #[arg(long)]
        wait: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum BreakGlassCmd {
    /// Grant ROLE on an install (`--for 30m`, `--for 1h`; at most 24h).
    Grant {
        /// The install's name.
        install: String,
        /// The role, as the app's actions name it in `break_glass_role`.
        role: String,
        /// How long the grant lasts (`30m`, `1h`; at most `24h`).
        #[arg(long = "for", value_parser = humantime::parse_duration)]
        duration: std::time::Duration,
    },
    /// End a grant now.
    Revoke {
        /// The install's name.
        install: String,
        /// The role granted.
        role: String,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum ReleasesCmd {
    /// Start a release: waves of installs deployed in turn; a wave with more failed installs
    /// than --max-failures halts it (the later waves untouched) until `resume`.
    Create {
        /// The app.
        #[arg(long)]
        app: String,
        /// The config version (its number, `2` or `v2`, or its id; default: the app's latest).
        #[arg(long, value_name = "VERSION")]
        config: Option<String>,
        /// The installs, comma-separated, in order (default: every install of the app).
        #[arg(long, value_delimiter = ',')]
        installs: Vec<String>,
        /// Instead of --installs: the app's installs carrying this label, `key=value`
        /// (repeatable: all of them), by name.
        #[arg(long = "label", value_name = "KEY=VALUE", conflicts_with = "installs")]
        labels: Vec<String>,
        /// Cumulative wave sizes: counts or percentages (`1,10%,50%,100%`).
        #[arg(long, default_value = "1,10%,50%,100%")]
        waves: String,
        /// Least time from one wave's start to the next's (`10m`).
        #[arg(long, value_parser = humantime::parse_duration)]
        delay: Option<std::time::Duration>,
        /// How long a wave that passed is watched before the next (`5m`).
        #[arg(long, value_parser = humantime::parse_duration)]
        soak: Option<std::time::Duration>,
        /// Failed installs a wave may have and the release go on.
        #[arg(long, default_value_t = 0)]
        max_failures: u32,
        /// An action run on each deployed install as its wave's health gate.
        #[arg(long)]
        health: Option<String>,
        /// At most this many deploys of a wave at once (default: all).
        #[arg(long, default_value_t = 0)]
        concurrency: u32,
        /// Approve the release's plans without review (otherwise installs that prompt wait for a
        /// person's decision, and the release with them).
        #[arg(long)]
        approve_all: bool,
        /// Follow the release until it ends or halts (as `releases wait`); exit 1 unless it
        /// succeeded.
        #[arg(long)]
        wait: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Follow a release, printing each wave as it starts and passes, until it ends (exit 0 when
    /// it succeeded) or halts or is cancelled (exit 1, with why and what to do).
    Wait {
        /// The release's id.
        id: String,
        /// Print the release as JSON at the end.
        #[arg(long)]
        json: bool,
    },
    /// A release: each wave, and each install's deploy and health check.
    Get {
        /// The release's id.
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Releases, newest first.
    List {
        #[command(flatten)]
        out: ListOutput,
    },
    /// Start nothing new until `resume`.
    Pause {
        /// The release's id.
        id: String,
    },
    /// Go on with a paused or halted release (failed installs of its wave are tried again).
    Resume {
        /// The release's id.
        id: String,
    },
    /// End a release: nothing more starts (what runs finishes).
    Cancel {
        /// The release's id.
        id: String,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum RunbooksCmd {
    /// Run a runbook on an install: its steps, in order, as one workflow (approvals where the
    /// install asks for them).
    Run {
        /// The install's name.
        install: String,
        /// The runbook's name.
        runbook: String,
        /// Follow the workflow until it ends; exit 1 unless it succeeded.
        #[arg(long)]
        wait: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum ActionsCmd {
    /// The actions of installs (of the app config each runs): triggers, steps, inputs, the next
    /// scheduled run and the latest run.
    List {
        /// Only this install's (default: every install's).
        #[arg(long)]
        install: Option<String>,
        #[command(flatten)]
        out: ListOutput,
    },
    /// Run an action on an install now.
    Run {
        /// The install's name.
        install: String,
        /// The action's name.
        action: String,
        /// An input of the action, `name=value` (repeatable; checked against its type).
        #[arg(long = "input", value_name = "NAME=VALUE")]
        inputs: Vec<String>,
        /// Follow the run until it ends; exit 1 unless it succeeded.
        #[arg(long)]
        wait: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// An install's action runs, newest first: each run's status, its steps and their outputs
    /// (`ferry logs --workflow RUN` prints a run's log).
    Runs {
        /// The install's name.
        install: String,
        /// Only this action's runs.
        action: Option<String>,
        /// At most this many runs.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum WorkflowsCmd {
    /// Show a workflow's steps (exit 0 once read; `workflows wait` exits 1 when it failed).
    Get {
        /// The workflow's id.
        id: String,
        /// Also show each plan: the resources it adds, changes, replaces and destroys (from
        /// Terraform's `show -json`; a script's plan is in its job's log).
        #[arg(long)]
        diff: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Follow a workflow, printing each step as it changes, until it ends; exit 1 unless it
    /// succeeded (the failed steps' reasons and the end of their logs are printed).
    Wait {
        /// The workflow's id.
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List workflows, newest first.
    List {
        /// Only this install's.
        #[arg(long)]
        install: Option<String>,
        #[command(flatten)]
        out: ListOutput,
    },
    /// Approve waiting plans: one step (its index, or its component's name) or every one that waits.
    Approve {
        /// The workflow's id.
        id: String,
        /// The step: its index, or its component's name (as `workflows get` shows them).
        #[arg(long, conflicts_with = "all", required_unless_present = "all")]
        step: Option<String>,
        /// Every plan of the workflow: those waiting now, and each later one as it comes (the
        /// approval service approves them, as under approve-all).
        #[arg(long)]
        all: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Run a failed (or cancelled) workflow again from one step (its index or component); a failed
    /// apply plans again first. With --wait, follows it to its end.
    Retry {
        /// The workflow's id.
        id: String,
        /// The step: its index, or its component's name (as `workflows get` shows them).
        #[arg(long)]
        step: String,
        /// Follow the workflow until it ends; exit 1 unless it succeeded.
        #[arg(long)]
        wait: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Skip a step (its index or component) with the later steps of its component: one that has
    /// not run, a waiting approval, or a failed or cancelled step of an ended workflow (which then
    /// runs on). What depends on it runs with what the component has deployed.
    Skip {
        /// The workflow's id.
        id: String,
        /// The step: its index, or its component's name (as `workflows get` shows them).
        #[arg(long)]
        step: String,
        /// Follow the workflow until it ends; exit 1 unless it succeeded.
        #[arg(long)]
        wait: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Deny a waiting plan: its apply does not run and the workflow fails.
    Deny {
        /// The workflow's id.
        id: String,
        /// The step: its index, or its component's name (as `workflows get` shows them).
        #[arg(long)]
        step: String,
        /// Skip the denied apply and go on, instead of failing the workflow.
        #[arg(long, conflicts_with = "skip_dependents")]
        skip_current: bool,
        /// Skip the denied apply and every step that depends on it, and go on.
        #[arg(long)]
        skip_dependents: bool,
        /// Why: the step's message and the approval record keep it.
        #[arg(long)]
        reason: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Stop a workflow: steps not started are cancelled, running jobs are stopped on the runner
    /// (SIGTERM to the job's processes, SIGKILL after a grace period). Waits until it has ended.
    Cancel {
        /// The workflow's id.
        id: String,
        /// Return at once instead of waiting for the workflow to end.
        #[arg(long)]
        no_wait: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum ApprovalsCmd {
    /// List plans waiting for a decision, oldest first, with each plan's summary.
    List {
        /// Only this install's.
        #[arg(long)]
        install: Option<String>,
        #[command(flatten)]
        out: ListOutput,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum RunnersCmd {
    /// List runners heard from: active (heartbeats arrive), unhealthy (a few missed), offline.
    List {
        /// Only this install's.
        #[arg(long)]
        install: Option<String>,
        #[command(flatten)]
        out: ListOutput,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum JobsCmd {
    /// Show a job: its status, executions, outputs and plan.
    Get {
        /// The job's id.
        id: String,
        /// Also show where each execution's time went, span by span: the record's write, the
        /// doorbell and the claim, the grant, the artifact and work directory, the role, the
        /// plugin's start and its run. Each span is timed on one clock (the control plane's or
        /// the runner host's).
        #[arg(long)]
        timing: bool,
        /// Print JSON instead of text (the timing's points are in each execution's `timing`).
        #[arg(long)]
        json: bool,
    },
    /// Stop one job: queued, it is cancelled at once; running, its runner stops it (SIGTERM, then
    /// SIGKILL after the grace period). Its step ends cancelled. Waits until the job has ended.
    Cancel {
        /// The job's id.
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every command, flag and positional argument says what it is for in `--help`.
    #[test]
    fn every_command_and_argument_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if id == "help" || id == "version" || arg.is_global_set() && !path.is_empty() {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.get_about().is_none() && sub.get_long_about().is_none() {
                    missing.push(format!("{path} {} (command)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "", &mut missing);
        assert!(missing.is_empty(), "no help text: {missing:#?}");
    }

    /// `--api` and `--token` have defaults (`ferry login`'s, `ferry dev`'s address), so no usage
    /// line may show them as required: a newcomer reading `Usage:` would think they must pass both.
    /// `ferry login` is the one command that needs the token, since saving it is what it does.
    #[test]
    fn no_usage_line_asks_for_the_api_or_token() {
        fn walk(cmd: &mut clap::Command, path: &str, wrong: &mut Vec<String>) {
            let usage = cmd.render_usage().to_string();
            let login = path == "ferry login";
            if usage.contains("--api <") || usage.contains("--token <") && !login {
                wrong.push(format!("{path}: {usage}"));
            }
            for sub in cmd.get_subcommands_mut() {
                let name = format!("{path} {}", sub.get_name());
                walk(sub, &name, wrong);
            }
        }
        let mut wrong = Vec::new();
        let mut cli = Cli::command();
        cli.build();
        walk(&mut cli, "ferry", &mut wrong);
        assert!(
            wrong.is_empty(),
            "usage lines that ask for --api/--token: {wrong:#?}"
        );
    }
}
