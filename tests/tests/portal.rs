//! The customer portal in a real browser (headless Chromium): a customer signs in with a token
//! bound to their install and sees that install only; approves its plans (its plans are approved
//! by the customer); reads the app's portal readme rendered for the install; sees an action that
//! failed for want of a break-glass role as a request, grants the role for an hour and revokes
//! it; and reads the install's audit trail. Another customer's install is not found.

use std::time::{Duration, Instant};

use fantoccini::{Client, Locator};
use ferry_tests::browser::{Browser, decide, screenshot, sign_in, text_of, until_text};
use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, copy_dir, ferry, repo_root};

/// examples/hello with an action `fix` that needs break-glass role `admin-access`.
fn app(dir: &std::path::Path) -> std::path::PathBuf {
    let app = dir.join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    std::fs::write(
        app.join("actions/fix.toml"),
        "name = \"fix\"\ntimeout = \"30s\"\nbreak_glass_role = \"admin-access\"\n\n[[triggers]]\ntype = \"manual\"\n\n[[steps]]\nname = \"repair\"\ncommand = \"echo repaired\"\n",
    )
    .unwrap();
    app
}

/// Clicks the first button `css` selects and waits for the install's page again.
async fn submit(b: &Client, css: &str) {
    b.find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    b.wait()
        .for_element(Locator::Css("table#break-glass"))
        .await
        .unwrap();
}

#[test]
fn a_customer_signs_in_to_their_portal_approves_grants_and_revokes() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let _runners: Vec<Proc> = ["acme", "globex"]
        .iter()
        .map(|i| {
            Proc::runner(
                &nats.url,
                i,
                &dir.path().join(format!("runner-{i}")),
                dir.path().join(format!("runner-{i}.log")),
            )
        })
        .collect();
    ferry_tests::sync_hello(&api, &app(dir.path()));
    let acme: CreatedInstall = cli(
        &api,
        &[
            "installs",
            "create",
            "--app",
            "hello",
            "--name",
            "acme",
            "--approvals",
            "customer",
            "--json",
        ],
    );
    let (code, out, err) = ferry_tests::create_hello(&api, "globex", &["--wait"]);
    assert_eq!(code, 0, "{out}{err}");
    let customer = customer_token(&api, "acme-sec", "acme");

    let browser = Browser::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let b = browser.session().await;
        sign_in(&b, &api, &customer).await;
        assert!(b.find(Locator::Css("tr[data-install=acme]")).await.is_ok());
        assert!(
            b.find(Locator::Css("tr[data-install=globex]"))
                .await
                .is_err()
        );
        let nav = text_of(&b, "header nav").await;
        assert!(!nav.contains("Releases"), "{nav}");

        // The customer approves each plan of the provisioning as it comes.
        let wf = acme.workflow_id.as_str();
        b.goto(&format!("{api}/ui/workflows/{wf}")).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let status = workflow(&api, wf).map(|w| w.status);
            if status.is_some_and(|s| s.is_terminal()) {
                break;
            }
            assert!(Instant::now() < deadline, "the provisioning never ended");
            match b.find(Locator::Css("button[data-decision=approve]")).await {
                Ok(button) if button.attr("disabled").await.unwrap().is_none() => {
                    decide(&b, button).await;
                }
                _ => {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    b.refresh().await.unwrap();
                }
            }
        }
        let done = workflow(&api, wf).unwrap();
        assert_eq!(
            done.status,
            ferry_model::WorkflowStatus::Succeeded,
            "{}",
            steps_of(&done)
        );

        // The portal: readme for the install, who approves, break-glass.
        b.goto(&format!("{api}/ui/installs/acme")).await.unwrap();
        let readme = text_of(&b, "#portal-readme").await;
        assert!(readme.contains("for install acme"), "{readme}");
        let heading = text_of(&b, "#portal-readme h3").await;
        assert_eq!(heading, "What this app does");
        assert!(text_of(&b, "#approvals-by").await.contains("the customer"));
        let row = text_of(&b, "#break-glass tr[data-role=admin-access]").await;
        assert!(row.contains("fix") && row.contains("no"), "{row}");

        // The vendor runs the action: it fails without the role, and asks for it here.
        let (code, _, _) = ferry(&api, &["actions", "run", "acme", "fix", "--wait"]);
        assert_ne!(code, 0);
        b.refresh().await.unwrap();
        let asked = text_of(&b, "p.request[data-role=admin-access]").await;
        assert!(
            asked.contains("Action fix asks for role admin-access"),
            "{asked}"
        );
        screenshot(&b, "portal-request").await;

        // Granted for an hour from the portal, then revoked.
        submit(&b, "#break-glass tr[data-role=admin-access] button.approve").await;
        let granted = until_text(
            &b,
            "#break-glass tr[data-role=admin-access] td.grant",
            |t| t.contains("until"),
        )
        .await;
        assert!(granted.contains("token:acme-sec"), "{granted}");
        assert!(b.find(Locator::Css("p.request")).await.is_err());
        let i: ferry_model::Install = cli(&api, &["installs", "get", "acme", "--json"]);
        let grant = &i.break_glass["admin-access"];
        let hour = grant.until_ms.saturating_sub(ferry_model::now_ms());
        assert!((3_500_000..=3_600_000).contains(&hour), "{grant:?}");
        screenshot(&b, "portal").await;
        submit(&b, "#break-glass tr[data-role=admin-access] button.deny").await;
        until_text(
            &b,
            "#break-glass tr[data-role=admin-access] td.grant",
            |t| t == "no",
        )
        .await;
        let trail = text_of(&b, "table#audit-trail").await;
        for action in [
            "break_glass.granted",
            "break_glass.revoked",
            "approval.approved",
        ] {
            assert!(trail.contains(action), "{action} not in the trail: {trail}");
        }
        assert!(!trail.contains("globex"), "{trail}");

        // Another customer's install is not found.
        b.goto(&format!("{api}/ui/installs/globex")).await.unwrap();
        let body = text_of(&b, "main").await;
        assert!(body.contains("install `globex` not found"), "{body}");
        b.close().await.unwrap();
    });
}
