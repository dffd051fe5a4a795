//! Jobs end the way users ask: cancelled on the runner (also when they trap SIGTERM), cancelled
//! while nobody runs them, and one workflow per install at a time however many deploys race.
//! Long because each check of the issue is a test of its own against real processes.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ferry_tests::typed::*;
use ferry_tests::{
    NatsServer, Proc, copy_dir, ferry, repo_root, running_job, server_and_runner, sync_and_create,
};

/// The example app, with greeter's apply trapping SIGTERM and sleeping, as a shell whose command
/// line carries a name of its own: the job runs in a sandbox (its own PID namespace, no path of
/// the test's in reach), so the test finds it from outside by that name (`script_pid`).
fn stubborn_example(dir: &Path) -> (PathBuf, String) {
    let app = dir.join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    let name = format!(
        "stubborn-{}",
        dir.file_name().unwrap().to_string_lossy().replace('.', "")
    );
    let path = app.join("components/src/greeter/apply.sh");
    let apply = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        apply.replace(
            "set -eu\n",
            &format!(
                "set -eu\nexec sh -c \"trap 'echo ignoring SIGTERM; sleep 0.3; echo cleaned up after SIGTERM' TERM; while true; do sleep 0.1; done\" {name}\n"
            ),
        ),
    )
    .unwrap();
    (app, name)
}

/// The host's pid of the process whose command line carries `name`, once it runs.
fn script_pid(name: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(pid) = pids_with(name).into_iter().next() {
            return pid;
        }
        assert!(Instant::now() < deadline, "the apply script never started");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The processes that have `arg` in their command line.
fn pids_with(arg: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(arg))
                .unwrap_or(false)
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// How many processes have `arg` in their command line.
fn processes_with(arg: &str) -> usize {
    pids_with(arg).len()
}

fn alive(pid: &str) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[test]
fn cancel_stops_a_job_that_traps_sigterm() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (app, script) = stubborn_example(dir.path());
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let _runner = Proc::runner_with(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
        &["--cancel-grace-secs", "1"],
    );
    let wf = sync_and_create(&api, &app, "prod");
    let job = running_job(&api, &wf, "greeter", "apply");
    let pid = script_pid(&script);
    assert!(alive(&pid));
    let install = || cli::<Install>(&api, &["installs", "get", "prod", "--json"]).status;
    assert_eq!(name_of(&install()), "provisioning");

    let asked = Instant::now();
    let (code, out, err) = ferry(&api, &["workflows", "cancel", &wf, "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let took = asked.elapsed();
    let done: Workflow = serde_json::from_str(&out).unwrap();
    assert_eq!(name_of(&done.status), "cancelled", "{done:?}");
    // The install says its last workflow was cancelled, not that it failed.
    let deadline = Instant::now() + Duration::from_secs(10);
    while name_of(&install()) != "cancelled" {
        assert!(Instant::now() < deadline, "install is {:?}", install());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        name_of(&the_step(&done, "greeter", "apply").status),
        "cancelled"
    );
    // Steps after it were never attempted.
    assert_eq!(
        name_of(&the_step(&done, "reporter", "plan").status),
        "not_attempted"
    );
    assert_eq!(
        the_step(&done, "reporter", "plan").message.as_deref(),
        Some("not attempted: the workflow was cancelled")
    );
    let j = cli::<Job>(&api, &["jobs", "get", &job, "--json"]);
    assert_eq!(name_of(&j.status), "cancelled", "{j:?}");
    assert!(!alive(&pid), "the script that trapped SIGTERM still runs");
    // Reported for the record, not asserted as a speed target.
    eprintln!("cancel took {took:?} (grace 1 s)");
    let (_, log, log_err) = ferry(&api, &["logs", "--job", &job]);
    let log = format!("{log}{log_err}");
    assert!(log.contains("cancel requested: SIGTERM"), "{log}");
    assert!(log.contains("ignoring SIGTERM"), "{log}");
    // The grace period is the tool's: it cleaned up before SIGKILL, the sandbox still there.
    assert!(log.contains("cleaned up after SIGTERM"), "{log}");

    // Cancelling it again is refused: it has ended.
    let (code, _, err) = ferry(&api, &["workflows", "cancel", &wf]);
    assert_eq!(code, 1);
    assert!(err.contains("has already ended (cancelled)"), "{err}");
}

#[test]
fn cancel_a_workflow_waiting_for_a_runner_that_is_not_connected() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let app = repo_root().join("examples/hello");
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let wf = sync_and_create(&api, &app, "prod");
    let job = running_job(&api, &wf, "sandbox", "sync");
    // The step says what it waits for.
    let shown = cli::<Workflow>(&api, &["workflows", "get", &wf, "--json"]);
    let message = the_step(&shown, "sandbox", "sync")
        .message
        .clone()
        .unwrap_or_default();
    assert!(
        message.starts_with("queued: no runner has connected for install prod (waiting since "),
        "{message}"
    );
    let (_, out, _) = ferry(&api, &["installs", "get", "prod"]);
    assert!(out.contains("runner: none has connected yet"), "{out}");

    let done = cli::<Workflow>(&api, &["workflows", "cancel", &wf, "--json"]);
    assert_eq!(name_of(&done.status), "cancelled", "{done:?}");
    assert_eq!(
        name_of(&the_step(&done, "sandbox", "sync").status),
        "cancelled"
    );
    let j = cli::<Job>(&api, &["jobs", "get", &job, "--json"]);
    assert_eq!(name_of(&j.status), "not_attempted");
    assert_eq!(
        j.error.as_deref(),
        Some("cancelled before a runner took it")
    );

    // A runner connecting later does not run the cancelled job.
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    std::thread::sleep(Duration::from_secs(2));
    let j = cli::<Job>(&api, &["jobs", "get", &job, "--json"]);
    assert_eq!(j.executions.len(), 0, "{j:?}");
    // Its heartbeat makes it known, and active.
    let runners = cli::<Vec<RunnerInfo>>(&api, &["runners", "list", "--install", "prod", "--json"]);
    assert_eq!(runners.len(), 1, "{runners:?}");
    assert_eq!(name_of(&runners[0].health), "active");
    assert_eq!(runners[0].runner.install, "prod");
    let (_, out, _) = ferry(&api, &["installs", "get", "prod"]);
    assert!(out.contains("active (last seen"), "{out}");
}

#[test]
fn concurrent_deploys_of_one_install_start_one_workflow() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let app = repo_root().join("examples/hello");
    let (_server, _runner, api) = server_and_runner(&nats, dir.path());
    let first = sync_and_create(&api, &app, "prod");
    wait_until(&api, &first, 120, "the install to be provisioned", |w| {
        name_of(&w.status) == "succeeded"
    });

    let deploys: Vec<_> = (0..20)
        .map(|_| {
            let api = api.clone();
            std::thread::spawn(move || ferry(&api, &["installs", "deploy", "prod", "--json"]))
        })
        .collect();
    let results: Vec<(i32, String, String)> =
        deploys.into_iter().map(|t| t.join().unwrap()).collect();
    let accepted: Vec<&(i32, String, String)> = results.iter().filter(|r| r.0 == 0).collect();
    assert_eq!(accepted.len(), 1, "{results:#?}");
    for (code, _, err) in results.iter().filter(|r| r.0 != 0) {
        assert_eq!(*code, 1);
        assert!(err.contains("busy"), "{err}");
    }
    let winner: Deployed = serde_json::from_str(&accepted[0].1).unwrap();
    let deployed = winner.workflow_id.as_str();
    let done = wait_until(&api, deployed, 120, "the deploy to finish", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    // The losers left nothing behind: two workflows in all, the provision and the one deploy.
    let all = cli::<Vec<Workflow>>(&api, &["workflows", "list", "--install", "prod", "--json"]);
    let ids: Vec<&str> = all.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(ids, [deployed, first.as_str()]);
}

/// The example app, with greeter's apply ticking for a few seconds into `record` in the
/// install's directory on the runner host (`<runner data>/install/record`: the one place of the
/// host a job and the test both see), each line naming its execution by its work directory.
fn ticking_example(dir: &Path) -> PathBuf {
    let app = dir.join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    let path = app.join("components/src/greeter/apply.sh");
    let apply = std::fs::read_to_string(&path).unwrap();
    let r = "\"$FERRY_INSTALL_DIR/record\"";
    let run = "${FERRY_WORK_DIR##*/}";
    std::fs::write(
        &path,
        apply.replace(
            "set -eu\n",
            &format!(
                "set -eu\necho \"start {run} $(date +%s%3N)\" >> {r}\nfor i in $(seq 30); do echo \"tick {run} $(date +%s%3N)\" >> {r}; sleep 0.2; done\necho \"end {run} $(date +%s%3N)\" >> {r}\n"
            ),
        ),
    )
    .unwrap();
    app
}

#[test]
fn a_runner_killed_mid_job_loses_the_execution_and_the_job_runs_again_once() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("runner/install/record");
    let app = ticking_example(dir.path());
    let (_server, api) = Proc::server_with(
        &nats.url,
        dir.path().join("server.log"),
        // Long enough for the successor to be heard before the lease ends: the job is then
        // offered again while a runner of the install listens (so no "no responders" takes a
        // grant to the dead runner back), and only the lost execution on the job's record keeps
        // the dead planner from being granted it again.
        &["--job-lease-secs", "8"],
    );
    let data = dir.path().join("runner");
    let first = Proc::runner(&nats.url, "prod", &data, dir.path().join("runner-1.log"));
    let wf = sync_and_create(&api, &app, "prod");
    let job = running_job(&api, &wf, "greeter", "apply");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&record)
        .unwrap_or_default()
        .contains("tick")
    {
        assert!(Instant::now() < deadline, "the apply never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Heard before it dies (its first heartbeats come every second): the control plane knows it
    // as the plan's maker, active by its last heartbeat well after it is gone.
    let deadline = Instant::now() + Duration::from_secs(30);
    while cli::<Vec<RunnerInfo>>(&api, &["runners", "list", "--install", "prod", "--json"])
        .is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "the first runner was never heard"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    first.kill();
    // Its leaf nats-server goes with it (it is asked to die with its parent): nothing of the dead
    // runner holds the install's link or store.
    let conf = data.join("leaf/nats.conf").to_string_lossy().into_owned();
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_with(&conf) > 0 {
        assert!(
            Instant::now() < deadline,
            "the dead runner's leaf still runs"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let killed_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let _second = Proc::runner(&nats.url, "prod", &data, dir.path().join("runner-2.log"));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cli::<Vec<RunnerInfo>>(&api, &["runners", "list", "--install", "prod", "--json"])
        .iter()
        .any(|r| r.runner.first_seen_ms > killed_ms)
    {
        assert!(
            Instant::now() < deadline,
            "the second runner was never heard"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let done = wait_until(&api, &wf, 120, "the workflow to finish", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    let j = cli::<Job>(&api, &["jobs", "get", &job, "--json"]);
    let statuses: Vec<String> = j.executions.iter().map(|e| name_of(&e.status)).collect();
    assert_eq!(statuses, ["lost", "finished"], "{j:?}");
    let (_, log, _) = ferry(&api, &["logs", "--job", &job]);
    assert!(log.contains("stopped renewing its lease"), "{log}");

    // Two runs of the script, one after the other: the first was killed (no `end`), and none of
    // its ticks is later than the second's start.
    let text = std::fs::read_to_string(&record).unwrap();
    let lines: Vec<(&str, &str, u64)> = text
        .lines()
        .map(|l| {
            let mut it = l.split(' ');
            let (kind, pid, at) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
            (kind, pid, at.parse().unwrap())
        })
        .collect();
    let starts: Vec<_> = lines.iter().filter(|l| l.0 == "start").collect();
    assert_eq!(starts.len(), 2, "{text}");
    let (first_pid, second_start) = (starts[0].1, starts[1].2);
    assert!(
        lines
            .iter()
            .filter(|l| l.1 == first_pid)
            .all(|l| l.0 != "end" && l.2 < second_start),
        "the first run went on after the second started:\n{text}"
    );
    assert_eq!(lines.iter().filter(|l| l.0 == "end").count(), 1, "{text}");
}

#[test]
fn a_job_past_its_timeout_is_killed_and_timed_out() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (app, name) = stubborn_example(dir.path());
    let toml = app.join("components/greeter.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        text.replace(
            "type = \"script\"\n",
            "type = \"script\"\ntimeout = \"2s\"\n",
        ),
    )
    .unwrap();
    let (_server, _runner, api) = server_and_runner(&nats, dir.path());
    let wf = sync_and_create(&api, &app, "prod");
    let pid = script_pid(&name);
    let done = wait_until(&api, &wf, 120, "the workflow to end", |w| {
        name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
    });
    assert_eq!(name_of(&done.status), "failed", "{done:?}");
    let apply = the_step(&done, "greeter", "apply");
    assert_eq!(name_of(&apply.status), "failed");
    assert_eq!(apply.message.as_deref(), Some("timed out after 2s"));
    let j = cli::<Job>(
        &api,
        &["jobs", "get", apply.job_id.as_deref().unwrap(), "--json"],
    );
    assert_eq!(name_of(&j.status), "timed_out", "{j:?}");
    assert_eq!(name_of(&j.executions[0].status), "timed_out");
    assert!(!alive(&pid), "the script still runs after its timeout");
}

#[test]
fn a_result_larger_than_a_message_goes_in_chunks_and_plans_stay_home() {
    let nats = NatsServer::start_with_max_payload("1MB");
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    // A Terraform plan whose changes (its JSON) hold a 1.2 MB value: its result does not fit in a
    // 1 MB message.
    let tf = app.join("components/src/counter/main.tf");
    let mut module = std::fs::read_to_string(&tf).unwrap();
    module.push_str(&format!(
        "\nresource \"terraform_data\" \"big\" {{\n  input = \"{}\"\n}}\n",
        "0".repeat(1_200_000)
    ));
    std::fs::write(&tf, module).unwrap();
    let (_server, _runner, api) = server_and_runner(&nats, dir.path());
    let wf = sync_and_create(&api, &app, "prod");
    let done = wait_until(&api, &wf, 120, "the workflow to end", |w| {
        name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    let plan = the_step(&done, "counter", "plan");
    assert_eq!(
        plan.message.as_deref(),
        Some("Plan: 2 to add, 0 to change, 0 to destroy. 2 output(s) change.")
    );
    let job = plan.job_id.as_deref().unwrap();
    // The JSON shape of `--diff --json`: the plan as Terraform wrote it.
    let shown = cli::<serde_json::Value>(&api, &["workflows", "get", &wf, "--diff", "--json"]);
    let index = plan.index.to_string();
    let big = shown["plans"][&index]["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["address"] == "terraform_data.big")
        .unwrap()["change"]["after"]["input"]
        .as_str()
        .unwrap()
        .len();
    assert_eq!(big, 1_200_000);
    let runner_log = std::fs::read_to_string(dir.path().join("runner.log")).unwrap();
    assert!(
        runner_log.contains("result too large for a message: sent in chunks"),
        "the result was not offloaded:\n{runner_log}"
    );
    // The plan file itself never left the install: the hub keeps only each plan's changes.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let names: Vec<String> = rt.block_on(async {
        use futures_util::StreamExt;
        let js = async_nats::jetstream::new(nats.admin().await);
        let store = js.get_object_store("plans").await.unwrap();
        let mut list = store.list().await.unwrap();
        let mut names = Vec::new();
        while let Some(Ok(info)) = list.next().await {
            names.push(info.name);
        }
        names
    });
    assert!(names.contains(&format!("default.{job}.json")), "{names:?}");
    assert!(names.iter().all(|n| n.ends_with(".json")), "{names:?}");
}

#[test]
fn outputs_too_large_for_a_record_fail_the_apply_with_the_reason() {
    let nats = NatsServer::start_with_max_payload("1MB");
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    std::fs::write(
        app.join("components/src/greeter/apply.sh"),
        "#!/bin/sh\nset -eu\nbig=$(printf '%0600000d' 7)\nprintf '{\"message\": \"%s\"}\\n' \"$big\" > \"$FERRY_OUTPUTS\"\n",
    )
    .unwrap();
    let (_server, _runner, api) = server_and_runner(&nats, dir.path());
    let wf = sync_and_create(&api, &app, "prod");
    let done = wait_until(&api, &wf, 120, "the workflow to end", |w| {
        name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
    });
    assert_eq!(name_of(&done.status), "failed", "{done:?}");
    let apply = the_step(&done, "greeter", "apply");
    let message = apply.message.as_deref().unwrap();
    assert!(
        message.starts_with("the component's outputs are 60001")
            && message.contains("more than the 262144 an install record can hold"),
        "{message}"
    );
}

/// A plugin process lives for one job: its allocator takes no transparent huge pages (two 2 MiB
/// pages zeroed at every start were a fifth of its start's CPU, `loadtest release`). The apply
/// script reads its parent's, the plugin process's, huge pages from `/proc`: in a sandbox the
/// plugin (dropped to the job's user, so not dumpable) keeps its memory from its own job, so
/// this runner runs jobs unsandboxed; the plugin's environment is made the same way in both.
#[test]
fn a_plugin_process_takes_no_transparent_huge_pages() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    std::fs::write(
        app.join("components/src/greeter/apply.sh"),
        "#!/bin/sh\nset -eu\nhuge=$(awk '/^AnonHugePages:/ {s += $2} END {print s + 0}' /proc/$PPID/smaps)\n\
         cmd=$(tr '\\0' ' ' < /proc/$PPID/cmdline)\n\
         printf '{\"message\": \"m\", \"huge_kb\": %s, \"parent\": \"%s\"}\\n' \"$huge\" \"$cmd\" > \"$FERRY_OUTPUTS\"\n",
    )
    .unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let _runner = Proc::runner_with(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
        &["--unsandboxed-jobs"],
    );
    let wf = sync_and_create(&api, &app, "prod");
    let done = wait_until(&api, &wf, 120, "the workflow to end", |w| {
        name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    let install = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
    let outputs = &install.components["greeter"].outputs;
    let parent = outputs["parent"].as_str().unwrap_or_default();
    assert!(parent.contains(" plugin --job "), "{outputs:?}");
    assert_eq!(outputs["huge_kb"], 0, "{outputs:?}");
}

#[test]
fn a_runner_stopped_with_sigterm_lets_its_running_job_finish() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("runner/install/record");
    let app = ticking_example(dir.path());
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let data = dir.path().join("runner");
    let mut first = Proc::runner(&nats.url, "prod", &data, dir.path().join("runner-1.log"));
    let wf = sync_and_create(&api, &app, "prod");
    let job = running_job(&api, &wf, "greeter", "apply");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&record)
        .unwrap_or_default()
        .contains("tick")
    {
        assert!(Instant::now() < deadline, "the apply never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let exit = first.terminate(Duration::from_secs(30));
    assert!(
        exit.is_some_and(|s| s.success()),
        "the runner did not drain and exit: {exit:?}"
    );
    // The job it was running finished before it exited, once.
    let j = cli::<Job>(&api, &["jobs", "get", &job, "--json"]);
    assert_eq!(name_of(&j.status), "finished", "{j:?}");
    assert_eq!(j.executions.len(), 1);
    assert!(std::fs::read_to_string(&record).unwrap().contains("end "));
    let log = std::fs::read_to_string(dir.path().join("runner-1.log")).unwrap();
    assert!(log.contains("stopping: no new jobs"), "{log}");

    // The rest of the workflow waits for the next runner, which finishes it.
    let _second = Proc::runner(&nats.url, "prod", &data, dir.path().join("runner-2.log"));
    let done = wait_until(&api, &wf, 120, "the workflow to finish", |w| {
        name_of(&w.status) == "succeeded" || name_of(&w.status) == "failed"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
}

#[test]
fn a_plugin_that_crashes_fails_its_step_and_leaves_nothing_running() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (app, name) = stubborn_example(dir.path());
    let (_server, _runner, api) = server_and_runner(&nats, dir.path());
    let wf = sync_and_create(&api, &app, "prod");
    let script = script_pid(&name);
    // The plugin process (the script's parent) dies as in a crash.
    let stat = std::fs::read_to_string(format!("/proc/{script}/stat")).unwrap();
    let plugin = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string();
    let cmdline = std::fs::read_to_string(format!("/proc/{plugin}/cmdline")).unwrap_or_default();
    assert!(cmdline.contains("plugin"), "{cmdline}");
    std::process::Command::new("kill")
        .args(["-KILL", &plugin])
        .status()
        .unwrap();

    let done = wait_until(&api, &wf, 60, "the workflow to end", |w| {
        name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
    });
    assert_eq!(name_of(&done.status), "failed", "{done:?}");
    let apply = the_step(&done, "greeter", "apply");
    assert!(
        apply.message.as_deref().unwrap().contains("plugin exited"),
        "{apply:?}"
    );
    std::thread::sleep(Duration::from_millis(200));
    assert!(!alive(&script), "the crashed plugin's script still runs");
}

#[test]
fn garbage_output_is_logged_safely() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    let path = app.join("components/src/greeter/apply.sh");
    let apply = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        apply.replace(
            "set -eu\n",
            "set -eu\nhead -c 4000 /dev/urandom\nprintf '%0100000d' 0\nprintf '\\033[2J\\r\\0no newline at the end' >&2\necho\n",
        ),
    )
    .unwrap();
    let (_server, _runner, api) = server_and_runner(&nats, dir.path());
    let wf = sync_and_create(&api, &app, "prod");
    let done = wait_until(&api, &wf, 90, "the workflow to end", |w| {
        name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    let job = the_step(&done, "greeter", "apply").job_id.clone().unwrap();
    let log = ferry_tests::job_log(&api, &job);
    assert!(log.iter().all(|l| l.text.len() <= 16 * 1024 + 64));
    assert!(log.iter().any(|l| l.text.contains("greeter wrote")));
}

#[test]
fn a_job_no_runner_takes_times_out_after_its_available_time() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let app = repo_root().join("examples/hello");
    let (_server, api) = Proc::server_with(
        &nats.url,
        dir.path().join("server.log"),
        &["--job-available-secs", "2"],
    );
    let wf = sync_and_create(&api, &app, "prod");
    let done = wait_until(&api, &wf, 60, "the workflow to end", |w| {
        name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
    });
    assert_eq!(name_of(&done.status), "failed", "{done:?}");
    let sync = the_step(&done, "sandbox", "sync");
    assert_eq!(
        sync.message.as_deref(),
        Some("available timeout: no runner of install prod took it within 2s")
    );
    let job = sync.job_id.as_deref().unwrap();
    let j = cli::<Job>(&api, &["jobs", "get", job, "--json"]);
    assert_eq!(name_of(&j.status), "timed_out");
    assert!(j.executions.is_empty(), "{j:?}");
    let (_, out, _) = ferry(&api, &["jobs", "get", job]);
    assert!(
        out.contains("limits: queue 1h, available 2s, execution 30m, overall 2days, 5 executions"),
        "{out}"
    );
}

#[test]
fn cancelling_one_job_ends_its_step_and_its_workflow_cancelled() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let app = repo_root().join("examples/hello");
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let wf = sync_and_create(&api, &app, "prod");
    let job = running_job(&api, &wf, "sandbox", "sync");
    let j = cli::<Job>(&api, &["jobs", "cancel", &job, "--json"]);
    assert_eq!(name_of(&j.status), "not_attempted", "{j:?}");
    // The other syncs already offered run once a runner comes; nothing after them starts.
    let _runner = Proc::runner(
        &nats.url,
        "prod",
        &dir.path().join("runner"),
        dir.path().join("runner.log"),
    );
    let done = wait_until(&api, &wf, 60, "the workflow to end", |w| {
        name_of(&w.status) != "running" && name_of(&w.status) != "pending"
    });
    assert_eq!(name_of(&done.status), "cancelled", "{done:?}");
    assert_eq!(
        name_of(&the_step(&done, "sandbox", "sync").status),
        "cancelled"
    );
    assert_eq!(
        name_of(&the_step(&done, "greeter", "sync").status),
        "succeeded"
    );
    assert_eq!(
        name_of(&the_step(&done, "greeter", "plan").status),
        "not_attempted"
    );
    assert_eq!(
        the_step(&done, "greeter", "plan").message.as_deref(),
        Some("not attempted: the workflow was cancelled")
    );
    let (code, _, err) = ferry(&api, &["jobs", "cancel", &job]);
    assert_eq!(code, 1);
    assert!(err.contains("has already ended (not_attempted)"), "{err}");
}

#[test]
fn an_artifact_larger_than_the_installs_messages_syncs_in_chunks_through_the_leaf() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    // 3 MB that does not compress: the greeter's artifact is larger than any message the
    // install's leaf takes (1 MiB) and than a chunk the hub would send by its own limit.
    let mut noise = Vec::with_capacity(3 << 20);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while noise.len() < 3 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        noise.extend_from_slice(&x.to_le_bytes());
    }
    std::fs::write(app.join("components/src/greeter/noise.bin"), &noise).unwrap();
    let (_server, _runner, api) = server_and_runner(&nats, dir.path());
    let wf = sync_and_create(&api, &app, "prod");
    let done = wait_until(&api, &wf, 120, "the workflow to end", |w| {
        name_of(&w.status) == "failed" || name_of(&w.status) == "succeeded"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
    let sync = the_step(&done, "greeter", "sync");
    let job = cli::<Job>(
        &api,
        &["jobs", "get", sync.job_id.as_deref().unwrap(), "--json"],
    );
    assert!(
        job.outputs["blobs_copied"].as_u64().unwrap() >= 1,
        "{job:?}"
    );
}

/// `--wait` shows a long step's latest log line while it runs, so nobody stares at a silent
/// "running" for minutes.
#[test]
fn waiting_on_a_long_step_shows_its_latest_log_line() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = server_and_runner(&nats, dir.path());
    let app = dir.path().join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    let path = app.join("components/src/greeter/apply.sh");
    let apply = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        apply.replace(
            "set -eu\n",
            "set -eu\nfor i in $(seq 16); do echo \"warming up $i of 16\"; sleep 0.5; done\n",
        ),
    )
    .unwrap();
    ferry_tests::sync_hello(&api, &app);
    let (code, out, err) = ferry_tests::create_hello(&api, "prod", &["--wait"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("greeter    apply    │ warming up "), "{out}");
}
