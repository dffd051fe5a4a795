//! A hub of three nats-servers on loopback, configured exactly as an operator would: each node's
//! configuration is written by `ferry-server hub-init --node-name ... --cluster-listen ... --route
//! ...` over one trust directory (nats/cluster/start does the same by hand). Nodes can be
//! SIGKILLed and restarted with their stores, to test that the control plane and the installs'
//! leaves ride through the loss of one.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{bin, free_port, nats_server_bin, repo_root};

/// One node: its ports, its configuration, its process while it runs.
pub struct ClusterNode {
    pub name: String,
    pub client_port: u16,
    pub route_port: u16,
    pub monitor_port: u16,
    conf: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

pub struct NatsCluster {
    pub nodes: Vec<ClusterNode>,
    /// Every node's client URL, comma-separated (`ferry-server --nats-url`).
    pub url: String,
    /// Every node's leafnode URL, comma-separated (`ferry-runner --nats-url`).
    pub leaf_url: String,
    pub dir: tempfile::TempDir,
    pub hub: ferry_pki::HubFiles,
}

impl NatsCluster {
    /// Writes three nodes' configurations with `ferry-server hub-init` and starts them; returns
    /// once every node accepts clients and the cluster has elected a JetStream meta leader.
    pub fn start() -> NatsCluster {
        let dir = tempfile::tempdir().expect("tempdir");
        let hub_dir = dir.path().join("hub");
        let ports: Vec<[u16; 4]> = (0..3)
            .map(|_| [free_port(), free_port(), free_port(), free_port()])
            .collect();
        let routes: Vec<String> = ports
            .iter()
            .map(|p| format!("tls://127.0.0.1:{}", p[1]))
            .collect();
        let mut nodes = Vec::new();
        for (i, [client, route, leaf, monitor]) in ports.iter().copied().enumerate() {
            let name = format!("hub-{}", i + 1);
            let mut init = Command::new(bin("ferry-server"));
            init.current_dir(repo_root())
                .arg("--hub-dir")
                .arg(&hub_dir)
                .args(["hub-init", "--node-name", &name])
                .args(["--listen", &format!("127.0.0.1:{client}")])
                .args(["--leafnode-listen", &format!("127.0.0.1:{leaf}")])
                .args(["--monitor", &format!("127.0.0.1:{monitor}")])
                .arg("--store-dir")
                .arg(dir.path().join(format!("{name}-js")))
                .args(["--cluster-listen", &format!("127.0.0.1:{route}")]);
            for r in &routes {
                init.args(["--route", r]);
            }
            let out = init.output().expect("run ferry-server hub-init");
            assert!(
                out.status.success(),
                "hub-init for {name} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            nodes.push(ClusterNode {
                conf: hub_dir.join(format!("{name}.conf")),
                log: dir.path().join(format!("{name}.log")),
                name,
                client_port: client,
                route_port: route,
                monitor_port: monitor,
                child: None,
            });
        }
        let join =
            |f: &dyn Fn(&[u16; 4]) -> String| ports.iter().map(f).collect::<Vec<_>>().join(",");
        let url = join(&|p| format!("nats://127.0.0.1:{}", p[0]));
        let leaf_url = join(&|p| format!("tls://127.0.0.1:{}", p[2]));
        let hub = ferry_pki::HubFiles::open(&hub_dir).expect("the hub directory hub-init made");
        crate::hub::register(&url, &hub.dir, &leaf_url);
        let mut cluster = NatsCluster {
            nodes,
            url,
            leaf_url,
            dir,
            hub,
        };
        for i in 0..3 {
            cluster.start_node(i);
        }
        cluster.wait_for_meta_leader();
        cluster
    }

    /// Starts node `i` (again, after a kill: with the store it had).
    pub fn start_node(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&node.log)
            .expect("node log");
        let child = Command::new(nats_server_bin())
            .arg("-c")
            .arg(&node.conf)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn nats-server");
        node.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", node.client_port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "{} did not start:\n{}",
                node.name,
                std::fs::read_to_string(&node.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL of node `i`: no goodbye to its routes, clients or leaves.
    pub fn kill_node(&mut self, i: usize) {
        if let Some(mut c) = self.nodes[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// A monitoring endpoint of node `i` (`jsz?streams=true`, `connz?auth=true`) as JSON.
    pub fn monitor(&self, i: usize, path: &str) -> serde_json::Value {
        let url = format!("http://127.0.0.1:{}/{path}", self.nodes[i].monitor_port);
        let out = Command::new("curl")
            .args(["-sf", "--max-time", "5", &url])
            .output()
            .expect("run curl");
        serde_json::from_slice(&out.stdout).unwrap_or_default()
    }

    fn wait_for_meta_leader(&self) {
        // Under the whole suite's load on two cores an election was seen to take over 30 s.
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let led = (0..3).all(|i| {
                self.monitor(i, "jsz")["meta_cluster"]["leader"]
                    .as_str()
                    .is_some_and(|l| !l.is_empty())
            });
            if led {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the cluster elected no JetStream leader:\n{}",
                std::fs::read_to_string(&self.nodes[0].log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The index of the node where a client logged in as `user` is connected, if any.
    pub fn node_of_user(&self, user: &str) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| {
            self.monitor(i, "connz?auth=true&limit=1000")["connections"]
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| c["authorized_user"] == user))
        })
    }

    /// Each stream of the `FERRY` account as node `i` holds it: name → (messages, last sequence).
    pub fn streams(&self, i: usize) -> std::collections::BTreeMap<String, (u64, u64)> {
        let jsz = self.monitor(i, "jsz?accounts=true&streams=true");
        jsz["account_details"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| a["name"] == ferry_pki::hub::ACCOUNT)
            .flat_map(|a| a["stream_detail"].as_array().cloned().unwrap_or_default())
            .filter_map(|s| {
                let name = s["name"].as_str()?.to_string();
                let state = &s["state"];
                Some((
                    name,
                    (
                        state["messages"].as_u64().unwrap_or_default(),
                        state["last_seq"].as_u64().unwrap_or_default(),
                    ),
                ))
            })
            .collect()
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill_node(i);
        }
    }
}
