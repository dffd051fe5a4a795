//! A TCP relay standing for the network between an install and the hub, to cut in tests.

use std::net::TcpListener;
use std::time::Duration;

/// `cut` drops every connection through the relay and refuses new ones until `restore`.
pub struct Link {
    pub port: u16,
    up: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Bumped by `cut`: relays of an older generation stop.
    generation: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Link {
    /// Relays 127.0.0.1:`port` (a free port) to 127.0.0.1:`target`.
    pub fn start(target: u16) -> Link {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the link");
        let port = listener.local_addr().expect("addr").port();
        let up = Arc::new(AtomicBool::new(true));
        let generation = Arc::new(AtomicU64::new(0));
        let (up2, gen2) = (up.clone(), generation.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(inbound) = conn else { continue };
                if !up2.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let Ok(outbound) = std::net::TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                let born = gen2.load(Ordering::SeqCst);
                for (from, to) in [
                    (inbound.try_clone(), outbound.try_clone()),
                    (outbound.try_clone(), inbound.try_clone()),
                ] {
                    let (Ok(mut from), Ok(mut to)) = (from, to) else {
                        continue;
                    };
                    let g = gen2.clone();
                    std::thread::spawn(move || {
                        use std::io::{Read, Write};
                        let _ = from.set_read_timeout(Some(Duration::from_millis(100)));
                        let mut buf = [0u8; 16384];
                        while g.load(Ordering::SeqCst) == born {
                            match from.read(&mut buf) {
                                Ok(0) => break,
                                Ok(n) => {
                                    if to.write_all(&buf[..n]).is_err() {
                                        break;
                                    }
                                }
                                Err(e)
                                    if matches!(
                                        e.kind(),
                                        std::io::ErrorKind::WouldBlock
                                            | std::io::ErrorKind::TimedOut
                                    ) => {}
                                Err(_) => break,
                            }
                        }
                        let _ = from.shutdown(std::net::Shutdown::Both);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Link {
            port,
            up,
            generation,
        }
    }

    /// Drops every connection and refuses new ones.
    pub fn cut(&self) {
        use std::sync::atomic::Ordering;
        self.up.store(false, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Lets connections through again.
    pub fn restore(&self) {
        self.up.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}
