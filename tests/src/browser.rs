//! A real browser for dashboard tests: Debian's headless Chromium, driven over WebDriver by
//! `chromedriver` on a free port (`scripts/install-browser` installs both), with fantoccini as
//! the client. Screenshots go to `target/screenshots/`.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{free_port, listening, repo_root};

pub struct Browser {
    driver: Child,
    pub url: String,
}

impl Browser {
    /// Starts chromedriver; [`Browser::session`] opens a browser window on it.
    pub fn start() -> Browser {
        let port = free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver (scripts/install-browser installs it)");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !listening(port) {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Browser {
            driver,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    /// A new headless browser (its own cookies).
    pub async fn session(&self) -> fantoccini::Client {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,900"],
            }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        fantoccini::ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&self.url)
            .await
            .expect("a browser session")
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Saves a screenshot of the page as `target/screenshots/<name>.png`.
pub async fn screenshot(client: &fantoccini::Client, name: &str) {
    let dir = repo_root().join("target/screenshots");
    std::fs::create_dir_all(&dir).expect("target/screenshots");
    let png = client.screenshot().await.expect("a screenshot");
    std::fs::write(dir.join(format!("{name}.png")), png).expect("write the screenshot");
}
