//! The hub as a three-node cluster (`ferry-server hub-init --cluster-listen ... --route ...`,
//! every stream, bucket and object store at R3): a node SIGKILLed while several installs deploy
//! loses nothing — every deploy finishes, each job ran once, each log line arrived once — and the
//! node, restarted, catches up with the others.

use std::path::Path;
use std::time::{Duration, Instant};

use ferry_tests::typed::*;
use ferry_tests::{NatsCluster, Proc, ferry, repo_root, running_job};

const INSTALLS: [&str; 3] = ["c1", "c2", "c3"];
/// Lines the slow component's apply prints, a tenth of a second apart.
const LINES: usize = 40;

/// examples/hello with a component whose apply takes a few seconds, printing numbered lines and
/// counting its runs in the install's sandbox.
/// The job lease of the server under test (see where it is given).
const LEASE_SECS: u64 = 300;

fn app(dir: &Path) -> std::path::PathBuf {
    let app = dir.join("hello");
    ferry_tests::copy_dir(&repo_root().join("examples/hello"), &app);
    std::fs::write(
        app.join("components/slow.toml"),
        "name = \"slow\"\ntype = \"script\"\ndirectory = \"components/src/slow\"\n\n[env_vars]\nROOT = \"{{.nuon.install.sandbox.outputs.root}}\"\n",
    )
    .unwrap();
    let src = app.join("components/src/slow");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("apply.sh"),
        format!(
            "#!/bin/sh\nset -eu\nfor i in $(seq 1 {LINES}); do echo \"slow line $i\"; sleep 0.1; done\necho run >> \"$ROOT/slow-runs\"\necho '{{}}' > \"$FERRY_OUTPUTS\"\n"
        ),
    )
    .unwrap();
    app
}

/// The install's sandbox root, where the slow component counts its runs.
fn runs(root: &str) -> usize {
    std::fs::read_to_string(Path::new(root).join("slow-runs"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

#[test]
fn a_hub_node_killed_mid_deploy_loses_nothing_and_catches_up_after_its_restart() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    let mut hub = NatsCluster::start();
    let (_server, api) = Proc::server_with(
        &hub.url,
        dir.path().join("server.log"),
        // A lease must outlast the hub's failover, or a job cut off from it meanwhile is
        // declared lost and runs again: under this suite's load a failover took over 30 s
        // (docs/operations.md), and once on a loaded CI machine more than 90 s. The test is
        // about losing nothing, not about how fast the hub recovers: the lease is long enough
        // for any failover a machine completes at all, and a job that still ran twice says when.
        &[
            "--replicas",
            "3",
            "--job-lease-secs",
            &LEASE_SECS.to_string(),
        ],
    );
    let _runners: Vec<Proc> = INSTALLS
        .iter()
        .map(|i| {
            Proc::runner(
                &hub.url,
                i,
                &dir.path().join(format!("runner-{i}")),
                dir.path().join(format!("runner-{i}.log")),
            )
        })
        .collect();
    ferry_tests::sync_hello(&api, &app);
    let mut roots = Vec::new();
    for i in INSTALLS {
        let (code, out, err) = ferry_tests::create_hello(&api, i, &["--json"]);
        assert_eq!(code, 0, "{out}{err}");
        let created: CreatedInstall = serde_json::from_str(&out).unwrap();
        let wf = created.workflow_id;
        wait_until(&api, &wf, 180, "provisioning", |w| {
            name_of(&w.status) == "succeeded"
        });
        let install = cli::<Install>(&api, &["installs", "get", i, "--json"]);
        roots.push(
            install.sandbox.outputs["root"]
                .as_str()
                .unwrap_or_else(|| panic!("no sandbox root in {install:?}"))
                .to_string(),
        );
    }
    for root in &roots {
        assert_eq!(runs(root), 1, "provisioning ran the slow component once");
    }
    // Every stream is replicated on all three nodes, even after `ferry-server init` (which the
    // harness runs without --replicas) set them up again.
    // Buckets and object stores are read from their leader: a follower's read may miss the
    // latest write, and every decision is a read, then a compare-and-swap. So are job logs
    // (`LOGS`), read whole once their job has ended.
    for (name, config) in stream_configs(&hub) {
        let replicas = config["num_replicas"].as_u64().unwrap_or_default();
        assert_eq!(replicas, 3, "stream {name} has {replicas} replicas");
        if name.starts_with("KV_") || name.starts_with("OBJ_") || name == "LOGS" {
            assert_eq!(
                config["allow_direct"], false,
                "{name} is read from followers"
            );
        }
    }

    // A new version of the slow component, deployed to every install.
    let apply = app.join("components/src/slow/apply.sh");
    let script = std::fs::read_to_string(&apply).unwrap();
    std::fs::write(&apply, format!("{script}# version 2\n")).unwrap();
    ferry_tests::sync_hello(&api, &app);
    let deploys: Vec<String> = INSTALLS
        .iter()
        .map(|i| {
            let d = cli::<Deployed>(&api, &["installs", "deploy", i, "--json"]);
            d.workflow_id.as_str().to_string()
        })
        .collect();
    for wf in &deploys {
        running_job(&api, wf, "slow", "apply");
    }
    // The node the scheduler works through goes, with no goodbye, while every install's apply
    // is printing its lines.
    let victim = hub
        .node_of_user("scheduler")
        .expect("the scheduler is connected to a node");
    hub.kill_node(victim);
    let killed_at = Instant::now();

    for wf in &deploys {
        let done = wait_until(&api, wf, 240, "the deploy to end", |w| {
            name_of(&w.status) != "running" && name_of(&w.status) != "pending"
        });
        assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
        for s in &done.steps {
            let Some(job) = s.job_id.as_deref() else {
                continue;
            };
            let j = cli::<Job>(&api, &["jobs", "get", job, "--json"]);
            if j.executions.len() != 1 {
                let first = j.executions.first();
                panic!(
                    "job {job} of {wf} ran {} times: its first execution ended {:?} at {:?}, \
                     {:.0}s after node {} was killed; with a {LEASE_SECS}s job lease this means \
                     the hub took longer than the lease to fail over (a machine too loaded), \
                     not that a running job was lost: {j:?}",
                    j.executions.len(),
                    first.map(|e| e.status),
                    first.and_then(|e| e.finished_at.clone()),
                    killed_at.elapsed().as_secs_f64(),
                    hub.nodes[victim].name
                );
            }
        }
        let slow = the_step(&done, "slow", "apply")
            .job_id
            .as_deref()
            .unwrap()
            .to_string();
        let (code, log, err) = ferry(&api, &["logs", "--job", &slow, "--no-timestamps"]);
        assert_eq!(code, 0, "{err}");
        for n in 1..=LINES {
            let line = format!("slow line {n}");
            assert_eq!(
                log.lines().filter(|l| l.trim_end() == line).count(),
                1,
                "`{line}` is in {slow}'s log once:\n{log}"
            );
        }
    }
    for root in &roots {
        assert_eq!(runs(root), 2, "the deploy ran the slow component once more");
    }
    eprintln!(
        "deploys finished {:.1}s after node {} was killed",
        killed_at.elapsed().as_secs_f64(),
        hub.nodes[victim].name
    );

    // Back with the store it had: it catches up with what the others took meanwhile.
    hub.start_node(victim);
    let survivor = (victim + 1) % 3;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (have, want) = (hub.streams(victim), hub.streams(survivor));
        let behind: Vec<_> = want
            .iter()
            .filter(|(name, (_, last))| have.get(*name).map(|h| h.1) != Some(*last))
            .collect();
        if !want.is_empty() && behind.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the restarted node did not catch up: behind on {behind:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    // And the hub still works with all three: one more deploy.
    let again = cli::<Deployed>(&api, &["installs", "deploy", "c1", "--json"]);
    let wf = again.workflow_id.as_str();
    let done = wait_until(&api, wf, 180, "a deploy after the restart", |w| {
        name_of(&w.status) != "running" && name_of(&w.status) != "pending"
    });
    assert_eq!(name_of(&done.status), "succeeded", "{done:?}");
}

/// Each stream's configuration, as node 1 knows it.
fn stream_configs(hub: &NatsCluster) -> Vec<(String, serde_json::Value)> {
    let jsz = hub.monitor(0, "jsz?accounts=true&streams=true&config=true");
    let streams: Vec<serde_json::Value> = jsz["account_details"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["name"] == ferry_pki::hub::ACCOUNT)
        .flat_map(|a| a["stream_detail"].as_array().cloned().unwrap_or_default())
        .collect();
    assert!(!streams.is_empty(), "no streams on node 1: {jsz}");
    streams
        .into_iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or_default().to_string(),
                s["config"].clone(),
            )
        })
        .collect()
}

/// Installs' certificates come from the same CA as the route certificate: a server presenting
/// one on a node's route port is refused, and never joins the cluster.
#[test]
fn a_server_with_an_install_certificate_cannot_join_the_cluster_as_a_route() {
    let hub = NatsCluster::start();
    let dir = tempfile::tempdir().unwrap();
    let creds = ferry_tests::issue_install(&hub.hub.dir, ferry_tests::ORG, "rogue", dir.path());
    let q = |p: &Path| format!("\"{}\"", p.display());
    let conf = dir.path().join("rogue.conf");
    std::fs::write(
        &conf,
        format!(
            "server_name: rogue\nlisten: \"127.0.0.1:{}\"\ncluster {{\n  name: \"ferry-hub\"\n  listen: \"127.0.0.1:{}\"\n  tls {{ cert_file: {}, key_file: {}, ca_file: {} }}\n  routes: [ \"tls://127.0.0.1:{}\" ]\n}}\n",
            ferry_tests::free_port(),
            ferry_tests::free_port(),
            q(&creds.cert),
            q(&creds.key),
            q(&creds.ca),
            hub.nodes[0].route_port,
        ),
    )
    .unwrap();
    let log = dir.path().join("rogue.log");
    let mut rogue = std::process::Command::new(ferry_tests::nats_server_bin())
        .arg("-c")
        .arg(&conf)
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    // The rogue dials every second: give it several tries.
    let deadline = Instant::now() + Duration::from_secs(4);
    let mut names = Vec::new();
    while Instant::now() < deadline {
        let routez = hub.monitor(0, "routez");
        names = routez["routes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["remote_name"].as_str().map(String::from))
            .collect();
        assert!(
            !names.iter().any(|n| n == "rogue"),
            "the rogue joined: {routez}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let _ = rogue.kill();
    let _ = rogue.wait();
    // The real nodes are routed to each other all along.
    assert!(names.iter().any(|n| n == "hub-2"), "{names:?}");
    assert!(names.iter().any(|n| n == "hub-3"), "{names:?}");
    // hub-1 refused it, and says so to the rogue.
    let rogue_log = std::fs::read_to_string(&log).unwrap();
    assert!(
        rogue_log.contains("Route Error 'Authorization Violation'"),
        "the rogue was not refused:\n{rogue_log}"
    );
}
