//! A network namespace a test makes (`ip netns add`), for what must not be done in the host's:
//! a stand-in for the instance metadata service on 169.254.169.254, and a firewall the runner's
//! host setup installs. The hub stays on the host's loopback; a relay inside the namespace
//! forwards its port there, so a runner started in the namespace reaches the hub as usual.

use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::Command;

/// A network namespace of this test's, with its loopback up; deleted on drop.
pub struct Netns {
    pub name: String,
}

impl Netns {
    pub fn create() -> Netns {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let name = format!("ferry-test-{}-{n}", std::process::id());
        let ok = |args: &[&str]| {
            let s = Command::new("ip").args(args).status().expect("ip");
            assert!(s.success(), "ip {args:?}");
        };
        ok(&["netns", "add", &name]);
        ok(&["-n", &name, "link", "set", "lo", "up"]);
        Netns { name }
    }

    /// `program args` to run inside the namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// `ip addr add ADDR dev lo` inside the namespace.
    pub fn add_address(&self, addr: &str) {
        let s = Command::new("ip")
            .args(["-n", &self.name, "addr", "add", addr, "dev", "lo"])
            .status()
            .expect("ip");
        assert!(s.success(), "adding {addr}");
    }

    /// Listens on 127.0.0.1:`port` inside the namespace and relays each connection to
    /// 127.0.0.1:`port` on the host, for as long as the test runs.
    pub fn relay(&self, port: u16) {
        let host = std::fs::File::open("/proc/thread-self/ns/net").expect("this thread's netns");
        let ns = std::fs::File::open(format!("/var/run/netns/{}", self.name)).expect("the netns");
        // A socket belongs to the namespace it was made in: the listener is made inside, then
        // this thread goes back, and every connection it makes is the host's.
        let listener = std::thread::spawn(move || {
            // SAFETY: setns(2) on this thread only, with open namespace files.
            assert_eq!(
                unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) },
                0
            );
            let l = TcpListener::bind(("127.0.0.1", port)).expect("bind inside the netns");
            // SAFETY: as above.
            assert_eq!(
                unsafe { libc::setns(host.as_raw_fd(), libc::CLONE_NEWNET) },
                0
            );
            l
        })
        .join()
        .expect("the relay's listener");
        std::thread::spawn(move || {
            for inbound in listener.incoming().flatten() {
                let Ok(outbound) = TcpStream::connect(("127.0.0.1", port)) else {
                    continue;
                };
                for (from, to) in [
                    (inbound.try_clone(), outbound.try_clone()),
                    (outbound.try_clone(), inbound.try_clone()),
                ] {
                    if let (Ok(mut from), Ok(mut to)) = (from, to) {
                        std::thread::spawn(move || {
                            let _ = std::io::copy(&mut from, &mut to);
                            let _ = to.shutdown(std::net::Shutdown::Write);
                        });
                    }
                }
            }
        });
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.name])
            .status();
    }
}
