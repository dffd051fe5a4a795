//! The web dashboard in a real browser (headless Chromium over WebDriver): sign in with a
//! token, see the install, approve waiting plans, watch the workflow finish live, follow a
//! job's log live; a viewer's buttons are disabled and its decisions refused; forms need
//! their CSRF token. Screenshots of the main pages go to `target/screenshots/`.

use std::process::Command;
use std::time::{Duration, Instant};

use fantoccini::{Client, Locator};
use ferry_tests::NatsServer;
use ferry_tests::browser::{Browser, decide, screenshot, sign_in, text_of, until_text};
use ferry_tests::typed::*;

fn workflow(api: &str, id: &str) -> Workflow {
    cli::<Workflow>(api, &["workflows", "get", id, "--json"])
}

#[test]
fn an_operator_approves_and_watches_a_deploy_and_a_viewer_cannot_decide() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = ferry_tests::server_and_runner(&nats, dir.path());
    // The greeter's apply takes a few seconds, writing as it goes: a log to follow live.
    let app = ferry_tests::hello_with_greeter_prelude(
        dir.path(),
        "for i in $(seq 1 30); do echo \"warming up $i\"; sleep 0.15; done",
    );
    ferry_tests::sync_hello(&api, &app);
    let created = cli::<CreatedInstall>(
        &api,
        &[
            "installs", "create", "--app", "hello", "--name", "prod", "--json",
        ],
    );
    let wf_id = created.workflow_id.as_str().to_string();
    let admin = ferry_tests::token_for(&api).unwrap();
    let viewer = cli::<CreatedToken>(
        &api,
        &[
            "tokens", "create", "--name", "eve", "--role", "viewer", "--json",
        ],
    )
    .token;

    let browser = Browser::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let b = browser.session().await;
        b.goto(&format!("{api}/ui/login")).await.unwrap();
        screenshot(&b, "login").await;
        sign_in(&b, &api, &admin).await;
        // The install, its config version, and its runner's health (once it has been heard
        // from: the page is read again until then).
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut row = text_of(&b, "tr[data-install=prod]").await;
        while !row.contains("active") && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(250)).await;
            b.refresh().await.unwrap();
            row = text_of(&b, "tr[data-install=prod]").await;
        }
        assert!(
            row.contains("hello") && row.contains("v1") && row.contains("active"),
            "{row}"
        );
        screenshot(&b, "installs").await;

        // The install's page lists its workflow; its page shows the first plan waiting.
        b.goto(&format!("{api}/ui/installs/prod")).await.unwrap();
        b.find(Locator::Css(&format!("a[href='/ui/workflows/{wf_id}']")))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let approve = b
            .wait()
            .at_most(Duration::from_secs(90))
            .for_element(Locator::Css("button[data-decision=approve]"))
            .await
            .unwrap();
        let first = text_of(&b, "section.approval").await;
        assert!(first.contains("waits for a decision"), "{first}");
        // A script's plan is what it printed.
        assert!(first.contains("will ensure"), "{first}");
        screenshot(&b, "workflow-approval").await;

        // A viewer sees the same plan with its buttons disabled, and a decision forced through
        // is refused.
        let v = browser.session().await;
        sign_in(&v, &api, &viewer).await;
        v.goto(&format!("{api}/ui/workflows/{wf_id}"))
            .await
            .unwrap();
        let button = v
            .find(Locator::Css("button[data-decision=approve]"))
            .await
            .unwrap();
        assert!(button.attr("disabled").await.unwrap().is_some());
        let why = text_of(&v, "span.why").await;
        assert!(
            why.contains("A viewer token cannot decide on plans"),
            "{why}"
        );
        v.execute(
            "document.querySelector('button[data-decision=approve]').disabled = false",
            vec![],
        )
        .await
        .unwrap();
        button.click().await.unwrap();
        // The page the click leads to, not the one it was made on (read before it is gone).
        let refused = until_text(&v, "main", |t| t.contains("cannot decide on plans")).await;
        assert!(refused.contains("cannot decide on plans"), "{refused}");
        v.close().await.unwrap();
        assert_eq!(
            name_of(&workflow(&api, &wf_id).status),
            "running",
            "the viewer decided nothing"
        );

        // The operator approves each plan as it comes; the greeter's apply log is followed live.
        decide(&b, approve).await;
        let mut log_followed = false;
        let mut plan_seen = false;
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            assert!(Instant::now() < deadline, "the workflow did not finish");
            let wf = workflow(&api, &wf_id);
            if name_of(&wf.status) == "succeeded" {
                break;
            }
            let greeter = the_step(&wf, "greeter", "apply");
            if !log_followed && name_of(&greeter.status) == "running" {
                let job = greeter.job_id.as_deref().unwrap();
                b.goto(&format!("{api}/ui/jobs/{job}")).await.unwrap();
                until_text(&b, "#job-status", |t| t == "finished").await;
                let log = text_of(&b, "pre#log").await;
                for i in 1..=30 {
                    let line = format!("warming up {i}");
                    let seen = log.lines().filter(|l| l.ends_with(&line)).count();
                    assert_eq!(seen, 1, "{line} shown {seen} times:\n{log}");
                }
                assert!(log.contains("greeter wrote: hello, prod!"), "{log}");
                screenshot(&b, "job").await;
                log_followed = true;
                b.goto(&format!("{api}/ui/workflows/{wf_id}"))
                    .await
                    .unwrap();
                continue;
            }
            if let Ok(button) = b.find(Locator::Css("button[data-decision=approve]")).await {
                // Terraform's plan (the counter) is shown as its changes.
                let plan = text_of(&b, "section.approval").await;
                if plan.contains("Plan of counter") {
                    assert!(plan.contains("+ terraform_data."), "{plan}");
                    screenshot(&b, "plan").await;
                    plan_seen = true;
                }
                decide(&b, button).await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(log_followed, "the greeter's apply was never seen running");
        assert!(plan_seen, "the counter's plan was never shown");

        // The page of the last decision saw the workflow finish without being loaded again.
        let status = until_text(&b, "#wf-status", |t| t == "succeeded").await;
        assert_eq!(status, "succeeded");
        let stayed = b
            .execute("return window.__stayed === true", vec![])
            .await
            .unwrap();
        assert_eq!(
            stayed,
            serde_json::Value::Bool(true),
            "the page was reloaded"
        );
        screenshot(&b, "workflow").await;
        b.goto(&format!("{api}/ui/installs/prod")).await.unwrap();
        assert!(text_of(&b, "table#components").await.contains("greeter"));
        screenshot(&b, "install").await;

        // Releases, once there is one.
        b.goto(&format!("{api}/ui/releases")).await.unwrap();
        assert!(
            text_of(&b, "table#releases")
                .await
                .contains("No releases yet")
        );
        let release = cli::<Release>(
            &api,
            &[
                "releases", "create", "--app", "hello", "--waves", "100%", "--json",
            ],
        );
        b.refresh().await.unwrap();
        let listed = text_of(&b, "table#releases").await;
        assert!(
            listed.contains(release.id.as_str()) && listed.contains("hello"),
            "{listed}"
        );
        screenshot(&b, "releases").await;
        b.close().await.unwrap();
    });

    // Forms without their CSRF token are refused (for a signed-in session: the cookie names a
    // session, never the token).
    let decide = format!("/ui/workflows/{wf_id}/decide");
    let token = format!("token={admin}");
    let (_, signed_in, _) = post(
        &api,
        "/ui/login",
        &["cookie: ferry_login=n0nce"],
        &[&token, "csrf=n0nce"],
    );
    let value = signed_in
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: ferry_session="))
        .and_then(|v| v.split(';').next())
        .unwrap_or_else(|| panic!("{signed_in}"))
        .to_string();
    assert!(!value.contains(&admin), "the cookie holds the token");
    let session = format!("cookie: ferry_session={value}");
    let (code, _, _) = post(&api, &decide, &[&session], &["step=0", "decision=approve"]);
    assert_eq!(code, "422", "a form without its csrf field");
    let forged = ["csrf=forged", "step=0", "decision=approve"];
    let (code, _, _) = post(&api, &decide, &[&session], &forged);
    assert_eq!(code, "403", "a forged csrf token");
    // Sign-in without the form's own nonce (a cross-site form) is refused.
    let (code, _, _) = post(&api, "/ui/login", &[], &[&token, "csrf=n0nce"]);
    assert_eq!(code, "403");
    // A token that is not one is refused, with the form to try again.
    let nonce = "cookie: ferry_login=n0nce";
    let wrong = ["token=ferry_nope", "csrf=n0nce"];
    let (code, _, page) = post(&api, "/ui/login", &[nonce], &wrong);
    assert!(
        code == "401" && page.contains("not valid") && page.contains("name=\"token\""),
        "{code} {page}"
    );
    // The session cookie is HttpOnly and SameSite=Strict; pages carry their CSP.
    let (_, headers, _) = post(&api, "/ui/login", &[nonce], &[&token, "csrf=n0nce"]);
    let cookie = headers
        .lines()
        .find(|l| l.starts_with("set-cookie: ferry_session="))
        .unwrap_or_else(|| panic!("{headers}"));
    assert!(
        cookie.contains("httponly")
            && cookie.contains("samesite=strict")
            && !cookie.contains("secure"),
        "{cookie}"
    );
    assert!(headers.contains("content-security-policy: default-src 'none'; script-src 'self'"));
    // Behind a proxy that terminates TLS, the cookie goes over HTTPS only.
    let https = [nonce, "x-forwarded-proto: https"];
    let (_, headers, _) = post(&api, "/ui/login", &https, &[&token, "csrf=n0nce"]);
    assert!(
        headers
            .lines()
            .any(|l| l.starts_with("set-cookie: ferry_session=") && l.contains("; secure")),
        "{headers}"
    );
}

/// A form posted with curl: (status, headers lowercased, body). `fields` are `name=value`,
/// each URL-encoded.
fn post(api: &str, path: &str, headers: &[&str], fields: &[&str]) -> (String, String, String) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-i", "-w", "\n%{http_code}"]);
    for h in headers {
        cmd.args(["-H", h]);
    }
    for f in fields {
        cmd.args(["--data-urlencode", f]);
    }
    let out = cmd.arg(format!("{api}{path}")).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (response, code) = text.rsplit_once('\n').unwrap_or((&text, ""));
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((response, ""));
    (code.to_string(), head.to_lowercase(), body.to_string())
}

/// Loads `path` until `css` shows text that `ok` accepts (the page is server-rendered: a change
/// shows on the next load).
async fn reload_until(b: &Client, url: &str, css: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        b.goto(url).await.unwrap();
        let t = text_of(b, css).await;
        if ok(&t) {
            return t;
        }
        assert!(
            Instant::now() < deadline,
            "{url} {css} never matched: {t:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

async fn click(b: &Client, css: &str) {
    b.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .click()
        .await
        .unwrap();
}

/// A day of operating the fleet from the dashboard: the approvals inbox across installs (and
/// the installs page marking who waits), a denial with its reason behind a confirmation, a
/// failed workflow's retry, an install's history and rollback, a release paused, resumed and
/// cancelled from its page, and the audit page an admin reads (a viewer may not).
#[test]
fn an_operator_runs_the_fleet_from_the_dashboard() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, _runner, api) = ferry_tests::server_and_runner(&nats, dir.path());
    let app = dir.path().join("hello");
    ferry_tests::copy_dir(&ferry_tests::repo_root().join("examples/hello"), &app);
    ferry_tests::sync_hello(&api, &app);
    let created = cli::<CreatedInstall>(
        &api,
        &[
            "installs", "create", "--app", "hello", "--name", "prod", "--json",
        ],
    );
    let wf = created.workflow_id.as_str().to_string();
    let (code, _, err) = ferry_tests::ferry(&api, &["installs", "label", "prod", "tier=gold"]);
    assert_eq!(code, 0, "{err}");
    let admin = ferry_tests::token_for(&api).unwrap();
    let viewer = cli::<CreatedToken>(
        &api,
        &[
            "tokens", "create", "--name", "vic", "--role", "viewer", "--json",
        ],
    )
    .token;

    let browser = Browser::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let b = browser.session().await;
        sign_in(&b, &api, &admin).await;
        // The installs page marks the install whose plan waits.
        let row = reload_until(
            &b,
            &format!("{api}/ui/installs"),
            "tr[data-install=prod]",
            |t| t.contains("plan waiting"),
        )
        .await;
        assert!(row.contains("tier=gold"), "{row}");

        // The inbox: approve what waits, plan by plan, until counter's plan comes; deny it,
        // with a reason, once the confirmation is ticked.
        let inbox = format!("{api}/ui/approvals");
        loop {
            let section = reload_until(&b, &inbox, "section.approval", |t| !t.is_empty()).await;
            if section.starts_with("counter on prod") {
                assert!(section.contains("+ terraform_data."), "{section}");
                screenshot(&b, "approvals").await;
                break;
            }
            click(&b, "section.approval button[data-decision=approve]").await;
            b.wait().for_element(Locator::Css("h1")).await.unwrap();
        }
        click(&b, "section.approval details.deny summary").await;
        // The denial offers what the CLI's --skip options do; failing the workflow is the default.
        let then = text_of(&b, "details.deny select[name=on_deny]").await;
        assert!(
            then.contains("fail the workflow")
                && then.contains("skip this apply, go on")
                && then.contains("skip this apply and what depends on it"),
            "{then}"
        );
        b.find(Locator::Css("details.deny input[name=reason]"))
            .await
            .unwrap()
            .send_keys("the counter must not change this week")
            .await
            .unwrap();
        click(&b, "details.deny input[name=confirm]").await;
        click(&b, "details.deny button[data-decision=deny]").await;
        reload_until(&b, &inbox, "#no-approvals", |t| !t.is_empty()).await;

        // The workflow failed on the denial: its steps say who and why, and it offers a retry.
        let page = format!("{api}/ui/workflows/{wf}");
        let status = reload_until(&b, &page, "#wf-status", |t| t == "failed").await;
        assert_eq!(status, "failed");
        let steps = text_of(&b, "table#steps").await;
        assert!(
            steps.contains("plan denied: the counter must not change this week")
                && steps.contains("token:admin"),
            "{steps}"
        );
        screenshot(&b, "failed-workflow").await;
        click(&b, "button[data-respond=retry]").await;
        reload_until(&b, &page, "#wf-status", |t| t == "running").await;
        let (code, out, err) = ferry_tests::ferry(&api, &["workflows", "approve", &wf, "--all"]);
        assert_eq!(code, 0, "{out}{err}");
        reload_until(&b, &page, "#wf-status", |t| t == "succeeded").await;

        // A second config deployed; the install page's history offers the rollback to the first.
        let first = cli::<Install>(&api, &["installs", "get", "prod", "--json"]).app_config_id;
        let apply = app.join("components/src/greeter/apply.sh");
        let text = std::fs::read_to_string(&apply).unwrap();
        std::fs::write(&apply, text.replacen("set -eu\n", "set -eu\necho v2\n", 1)).unwrap();
        ferry_tests::sync_hello(&api, &app);
        let (code, out, err) = ferry_tests::ferry(&api, &["installs", "approve-all", "prod", "on"]);
        assert_eq!(code, 0, "{out}{err}");
        let (code, out, err) = ferry_tests::ferry(&api, &["installs", "deploy", "prod", "--wait"]);
        assert_eq!(code, 0, "{out}{err}");
        b.goto(&format!("{api}/ui/installs/prod")).await.unwrap();
        let history = text_of(&b, "table#history").await;
        assert!(
            history.contains("provision") && history.contains("deploy-components"),
            "{history}"
        );
        assert!(text_of(&b, "#labels").await.contains("tier=gold"));
        screenshot(&b, "install-history").await;
        click(&b, "#rollback input[name=confirm]").await;
        click(&b, "#rollback button").await;
        let back = until_text(&b, "#wf-status", |t| t == "succeeded").await;
        assert_eq!(back, "succeeded");
        let now = cli::<Install>(&api, &["installs", "get", "prod", "--json"]);
        assert_eq!(now.app_config_id, first, "rolled back");

        // A release from its page: paused, resumed, cancelled.
        let (code, out, err) =
            ferry_tests::ferry(&api, &["installs", "approve-all", "prod", "off"]);
        assert_eq!(code, 0, "{out}{err}");
        let release = cli::<Release>(
            &api,
            &[
                "releases", "create", "--app", "hello", "--waves", "100%", "--json",
            ],
        );
        b.goto(&format!("{api}/ui/releases")).await.unwrap();
        click(&b, &format!("a[href='/ui/releases/{}']", release.id)).await;
        for (action, then) in [
            ("pause", "paused"),
            ("resume", "running"),
            ("cancel", "cancelled"),
        ] {
            click(&b, &format!("button[data-release-action={action}]")).await;
            until_text(&b, "#release-status", |t| t == then).await;
        }
        assert!(text_of(&b, "table.wave").await.contains("prod"));
        screenshot(&b, "release").await;

        // The audit page, filtered: the denial with its reason.
        b.goto(&format!("{api}/ui/audit?action=approval.denied"))
            .await
            .unwrap();
        let audit = text_of(&b, "table#audit").await;
        assert!(
            audit.contains("approval.denied") && audit.contains("must not change this week"),
            "{audit}"
        );
        assert!(!audit.contains("approval.approved"), "{audit}");
        screenshot(&b, "audit").await;
        b.close().await.unwrap();

        // A viewer sees no audit link, and is refused the page.
        let v = browser.session().await;
        sign_in(&v, &api, &viewer).await;
        assert!(v.find(Locator::Css("a[href='/ui/audit']")).await.is_err());
        v.goto(&format!("{api}/ui/audit")).await.unwrap();
        assert!(
            text_of(&v, "p.problem")
                .await
                .contains("cannot read the audit record")
        );
        v.close().await.unwrap();
    });
}
