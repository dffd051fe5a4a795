//! A real browser for dashboard tests: Debian's headless Chromium, driven over WebDriver by
//! `chromedriver` on a free port (`scripts/install-browser` installs both), with fantoccini as
//! the client. Screenshots go to `target/screenshots/`.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, Locator};

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

/// Signs in through the sign-in form with `token`; waits for the installs page.
pub async fn sign_in(b: &Client, api: &str, token: &str) {
    b.goto(&format!("{api}/ui/login")).await.unwrap();
    b.find(Locator::Id("token"))
        .await
        .unwrap()
        .send_keys(token)
        .await
        .unwrap();
    b.find(Locator::Id("signin"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    b.wait()
        .for_element(Locator::Css("table#installs"))
        .await
        .unwrap();
}

/// The text of the first element `css` selects (empty: none).
pub async fn text_of(b: &Client, css: &str) -> String {
    match b.find(Locator::Css(css)).await {
        Ok(e) => e.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// Waits (up to 90 s) until `ok` holds of the text of `css`.
pub async fn until_text(b: &Client, css: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let t = text_of(b, css).await;
        if ok(&t) {
            return t;
        }
        assert!(Instant::now() < deadline, "{css} never matched: {t:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Clicks a decision's button and waits for the page it leads to, marking that page: the mark
/// lasts as long as the page is not loaded again.
pub async fn decide(b: &Client, button: fantoccini::elements::Element) {
    b.execute("window.__before = true", vec![]).await.unwrap();
    button.click().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let old = b.execute("return window.__before === true", vec![]).await;
        let ready = b.find(Locator::Css("table#steps")).await.is_ok();
        if matches!(old, Ok(serde_json::Value::Bool(false))) && ready {
            break;
        }
        assert!(Instant::now() < deadline, "no page after the decision");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    b.execute("window.__stayed = true", vec![]).await.unwrap();
}
