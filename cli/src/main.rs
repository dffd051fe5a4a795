//! `ferry`, the vendor's command-line tool.

mod actions;
mod args;
mod audit;
mod bootstrap;
mod commands;
mod dev;
mod devprocs;
mod fetch;
mod history;
mod listings;
mod logs;
mod plans;
mod releases;
mod render;
mod sse;
mod stack;
mod tokens;
mod watch;

use clap::Parser;

use args::{
    ApprovalsCmd, AppsCmd, Cli, Command, InstallsCmd, JobsCmd, RunnersCmd, TokensCmd, WorkflowsCmd,
};

#[tokio::main]
async fn main() {
    // SAFETY: called first thing, before any other thread could be handling signals. Restoring the
    // default SIGPIPE action makes `ferry logs ... | head` end quietly, as a Unix tool should, instead
    // of failing on a closed stdout.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    render::set_quiet(cli.quiet);
    let code = match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            let red = anstyle::Style::new()
                .bold()
                .fg_color(Some(anstyle::AnsiColor::Red.into()));
            anstream::eprintln!("{red}error:{red:#} {e:#}");
            1
        }
    };
    std::process::exit(code);
}

async fn run(cli: Cli) -> anyhow::Result<i32> {
    let token = tokens::resolve(cli.token.clone());
    let api_base = tokens::resolve_api(cli.api.clone());
    let api = ferry_client::Client::new(&api_base, token.as_deref())?;
    match cli.command {
        Command::Apps(cmd) => apps(&api, cmd).await,
        Command::Installs(cmd) => installs(&api, cmd).await,
        Command::Workflows(cmd) => workflows(&api, cmd).await,
        Command::Actions(cmd) => actions::run(&api, cmd).await,
        Command::Runbooks(cmd) => actions::runbooks(&api, cmd).await,
        Command::Releases(cmd) => releases::run(&api, cmd).await,
        Command::BreakGlass(cmd) => actions::break_glass(&api, cmd).await,
        Command::Jobs(JobsCmd::Get { id, timing, json }) => {
            commands::jobs_get(&api, &id, timing, json).await
        }
        Command::Jobs(JobsCmd::Cancel { id, json }) => commands::jobs_cancel(&api, &id, json).await,
        Command::Approvals(ApprovalsCmd::List { install, out }) => {
            listings::approvals_list(&api, install.as_deref(), out.format()).await
        }
        Command::Runners(RunnersCmd::List { install, out }) => {
            listings::runners_list(&api, install.as_deref(), out.format()).await
        }
        Command::Logs {
            job,
            workflow,
            install,
            component,
            follow,
            timestamps,
            no_timestamps,
            json,
        } => {
            let target = match (job, workflow, install) {
                (Some(j), _, _) => logs::Target::Job(j),
                (_, Some(w), _) => logs::Target::Workflow(w),
                (_, _, Some(i)) => logs::Target::Install(i),
                (None, None, None) => {
                    anyhow::bail!("say whose log: --job, --workflow or --install")
                }
            };
            let timestamps = match (timestamps, no_timestamps) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            };
            let show = logs::Show {
                follow,
                json,
                timestamps,
                component,
            };
            logs::run(&api, target, show).await
        }
        Command::Audit(ask) => audit::run(&api, ask).await,
        Command::Dev(args) => dev::run(args).await,
        Command::Login { token } => tokens::login(&api_base, &token).await,
        Command::Tokens(TokensCmd::Create {
            name,
            role,
            installs,
            labels,
            json,
        }) => tokens::create(&api, &name, &role, (installs, labels), json).await,
        Command::Tokens(TokensCmd::List { out }) => tokens::list(&api, out.format()).await,
        Command::Tokens(TokensCmd::Revoke { which }) => tokens::revoke(&api, &which).await,
        Command::Completion { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "ferry", &mut std::io::stdout());
            Ok(0)
        }
    }
}

async fn apps(api: &ferry_client::Client, cmd: AppsCmd) -> anyhow::Result<i32> {
    match cmd {
        AppsCmd::Validate { dir, json, strict } => commands::apps_validate(&dir, json, strict),
        AppsCmd::Lint { dir, json, rules } => commands::apps_lint(&dir, json, rules),
        AppsCmd::Sync { dir, name, json } => commands::apps_sync(api, &dir, name, json).await,
        AppsCmd::List { out } => listings::apps_list(api, out.format()).await,
        AppsCmd::Get { name, json } => releases::fleet(api, &name, json).await,
        AppsCmd::Schema { markdown } => commands::apps_schema(markdown),
    }
}

// Long: one arm per `ferry installs` subcommand, each a call; clap's enum is matched once.
async fn installs(api: &ferry_client::Client, cmd: InstallsCmd) -> anyhow::Result<i32> {
    match cmd {
        InstallsCmd::Create {
            app,
            name,
            inputs,
            approve_all,
            approvals,
            labels,
            wait,
            json,
        } => {
            let new = commands::NewInstall {
                app: &app,
                name: &name,
                inputs: &inputs,
                labels: &labels,
                approve_all,
                approvals: &approvals,
            };
            let started = commands::installs_create(api, new, json, wait).await?;
            commands::then_wait(api, started, wait, json).await
        }
        InstallsCmd::UpdateInputs {
            name,
            inputs,
            wait,
            json,
        } => {
            let started = commands::installs_update_inputs(api, &name, &inputs, json, wait).await?;
            commands::then_wait(api, started, wait, json).await
        }
        InstallsCmd::Deploy {
            name,
            components,
            with_dependents,
            plan_only,
            config,
            plan_first,
            wait,
            json,
        } => {
            let scope = ferry_model::DeployScope {
                components,
                with_dependents,
                plan_only,
                config,
            };
            if plan_first {
                return history::plan_first(api, &name, scope, json).await;
            }
            start(api, &name, "deploy", &scope, wait, json).await
        }
        InstallsCmd::History { name, out } => history::show(api, &name, out.format()).await,
        InstallsCmd::Rollback {
            name,
            to,
            wait,
            json,
        } => {
            let config = history::rollback_config(api, &name, to.as_deref()).await?;
            let scope = ferry_model::DeployScope {
                config: Some(config),
                ..Default::default()
            };
            start(api, &name, "deploy", &scope, wait, json).await
        }
        InstallsCmd::Reprovision { name, wait, json } => {
            start(api, &name, "reprovision", &Default::default(), wait, json).await
        }
        InstallsCmd::Teardown { name, wait, json } => {
            start(api, &name, "teardown", &Default::default(), wait, json).await
        }
        InstallsCmd::Readme { name, json } => {
            let readme = api
                .call::<ferry_model::ops::InstallReadme>(&[&name], &(), &())
                .await?;
            if json {
                commands::print_json(&readme)?;
                return Ok(0);
            }
            if let Some(w) = &readme.warning {
                eprintln!("warning: the readme did not render ({w}); shown as written");
            }
            if readme.markdown.is_empty() && readme.warning.is_none() {
                eprintln!("the app has no readme (metadata.toml `readme`)");
                return Ok(0);
            }
            println!("{}", render::clean(readme.markdown.trim_end()));
            Ok(0)
        }
        InstallsCmd::Stack {
            name,
            bundle_url,
            bundle_sha256,
            upload: true,
            region,
            json,
            ..
        } => {
            let body = ferry_model::api::PublishStack {
                bundle_url,
                bundle_sha256,
                region,
            };
            stack::publish(api, &name, &body, json).await
        }
        InstallsCmd::Stack {
            name,
            out,
            bundle_url,
            bundle_sha256,
            ..
        } => {
            let query = ferry_model::api::StackQuery {
                bundle_url,
                bundle_sha256,
            };
            stack::write(api, &name, out.as_deref(), &query).await
        }
        InstallsCmd::RunnerToken { name, json } => {
            bootstrap::print_runner_token(api, &name, json).await
        }
        InstallsCmd::RunnerBundle {
            name,
            out,
            hub_url,
            data_dir,
            for_stack,
            binaries,
            archive,
        } => {
            let opts = bootstrap::BundleOptions {
                for_stack,
                binaries,
                archive,
            };
            bootstrap::runner_bundle(api, &name, &out, hub_url.as_deref(), &data_dir, &opts)
                .await?;
            println!(
                "runner bundle for install {name} written to {}",
                out.display()
            );
            Ok(0)
        }
        InstallsCmd::Revoke { name, json } => bootstrap::revoke(api, &name, json).await,
        InstallsCmd::Get { name, json } => commands::installs_get(api, &name, json).await,
        InstallsCmd::List {
            app,
            config,
            status,
            drifted,
            runner_health,
            labels,
            out,
        } => {
            let query = ferry_model::InstallQuery {
                app,
                config,
                status,
                drifted: drifted.then_some(true),
                runner_health,
                label: (!labels.is_empty()).then(|| labels.join(",")),
            };
            listings::installs_list(api, &query, out.format()).await
        }
        InstallsCmd::Label {
            name,
            set,
            remove,
            json,
        } => commands::installs_label(api, &name, &set, remove, json).await,
        InstallsCmd::DriftCheck {
            name,
            components,
            wait,
            json,
        } => {
            let scope = ferry_model::DeployScope {
                components,
                plan_only: true,
                ..Default::default()
            };
            start(api, &name, "drift-check", &scope, wait, json).await
        }
        InstallsCmd::Approvals { name, who, json } => {
            commands::installs_approvals(api, &name, &who, json).await
        }
        InstallsCmd::ApproveAll { name, state, json } => {
            commands::installs_approve_all(api, &name, state == "on", json).await
        }
        InstallsCmd::Delete { name, force } => {
            let options = ferry_model::api::DeleteOptions { force };
            api.call::<ferry_model::ops::DeleteInstall>(&[&name], &options, &())
                .await?;
            println!("install {name} deleted");
            Ok(0)
        }
    }
}

/// Starts a deploy-like workflow of an install (`kind`: deploy, reprovision, teardown) and prints
/// it, or follows it to its end with `--wait`.
async fn start(
    api: &ferry_client::Client,
    name: &str,
    kind: &str,
    scope: &ferry_model::DeployScope,
    wait: bool,
    json: bool,
) -> anyhow::Result<i32> {
    let started = commands::installs_deploy(api, name, kind, scope, json, wait).await?;
    commands::then_wait(api, started, wait, json).await
}

async fn workflows(api: &ferry_client::Client, cmd: WorkflowsCmd) -> anyhow::Result<i32> {
    match cmd {
        WorkflowsCmd::Wait { id, json } => commands::then_wait(api, id, true, json).await,
        WorkflowsCmd::Get {
            id,
            diff: true,
            json,
        } => plans::workflow_with_plans(api, &id, json).await,
        WorkflowsCmd::Get { id, json, .. } => commands::workflows_get(api, &id, json).await,
        WorkflowsCmd::List { install, out } => {
            listings::workflows_list(api, install.as_deref(), out.format()).await
        }
        WorkflowsCmd::Cancel { id, no_wait, json } => {
            commands::workflows_cancel(api, &id, !no_wait, json).await
        }
        WorkflowsCmd::Approve {
            id,
            step,
            all,
            json,
        } => {
            let d = ferry_model::api::Decision {
                step,
                all,
                ..Default::default()
            };
            commands::workflows_decide(api, &id, d, true, json).await
        }
        WorkflowsCmd::Retry {
            id,
            step,
            wait,
            json,
        } => {
            commands::workflows_step_response(api, &id, "retry", &step, json && !wait).await?;
            commands::then_wait(api, id, wait, json).await
        }
        WorkflowsCmd::Skip {
            id,
            step,
            wait,
            json,
        } => {
            commands::workflows_step_response(api, &id, "skip", &step, json && !wait).await?;
            commands::then_wait(api, id, wait, json).await
        }
        WorkflowsCmd::Deny {
            id,
            step,
            skip_current,
            skip_dependents,
            reason,
            json,
        } => {
            let on_deny = match (skip_current, skip_dependents) {
                (true, _) => ferry_model::OnDeny::SkipCurrent,
                (_, true) => ferry_model::OnDeny::SkipDependents,
                _ => ferry_model::OnDeny::Fail,
            };
            let d = ferry_model::api::Decision {
                step: Some(step),
                all: false,
                on_deny,
                reason,
            };
            commands::workflows_decide(api, &id, d, false, json).await
        }
    }
}
