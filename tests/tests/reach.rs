//! Each customer sees only their own installs. Two customers of one vendor: `acme` (app
//! `hello`) and `globex` (app `shop`), each with a runner, workflows, jobs and logs; a release
//! over globex. A customer token bound to acme makes every operation of the API (`ops::ALL`)
//! and opens every dashboard page against globex's records: each answer is the one a record
//! that does not exist gets, word for word; listings and the event stream carry nothing of
//! globex. Against acme it reads what a customer may. A viewer bound by label follows the label.

use std::process::Command;

use ferry_model::ops;
use ferry_tests::typed::*;
use ferry_tests::{NatsServer, Proc, copy_dir, ferry, repo_root, token_for};

/// One HTTP request with curl: the status and the body.
fn http(method: &str, url: &str, header: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args([
            "-s",
            "-X",
            method,
            "--max-time",
            "20",
            "-w",
            "\n%{http_code}",
        ])
        .args(["-H", header, "-H", "content-type: application/json"])
        .args(["--data-binary", "{}"])
        .arg(url)
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

/// A GET that reads for `secs` (a stream) and returns what arrived.
fn stream(url: &str, header: &str, secs: u32) -> String {
    let out = Command::new("curl")
        .args(["-s", "-N", "--max-time", &secs.to_string(), "-H", header])
        .arg(url)
        .output()
        .expect("run curl");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `template` with each `{param}` filled from `values` (by the path's kind for `{id}`).
fn fill(template: &str, values: &Values) -> String {
    let kind = template.split('/').nth(2).unwrap_or_default();
    let id = match kind {
        "workflows" => &values.workflow,
        "jobs" => &values.job,
        "releases" => &values.release,
        "tokens" => &values.token,
        "configs" => &values.config,
        _ => "",
    };
    template
        .replace("{name}", &values.install)
        .replace("{app}", &values.app)
        .replace("{config}", &values.config)
        .replace("{runbook}", "note")
        .replace("{action}", "greeting_check")
        .replace("{role}", "admin-access")
        .replace("{id}", id)
}

/// The values a path is filled with: one customer's records, or ones that do not exist.
#[derive(Clone)]
struct Values {
    install: String,
    app: String,
    config: String,
    workflow: String,
    job: String,
    release: String,
    token: String,
}

impl Values {
    /// Every value of `self`, each with the one of `other` in the same place.
    fn pairs<'a>(&'a self, other: &'a Values) -> [(&'a str, &'a str); 7] {
        [
            (&self.install, &other.install),
            (&self.app, &other.app),
            (&self.config, &other.config),
            // A job's id starts with its workflow's: the job first.
            (&self.job, &other.job),
            (&self.workflow, &other.workflow),
            (&self.release, &other.release),
            (&self.token, &other.token),
        ]
        .map(|(a, b)| (a.as_str(), b.as_str()))
    }
}

/// Provisions install `name` of app `app` (synced from examples/hello) with label
/// `customer=<name>`; returns its workflow.
fn provision(api: &str, dir: &std::path::Path, app: &str, name: &str) -> ferry_model::Workflow {
    let src = dir.join(app);
    copy_dir(&repo_root().join("examples/hello"), &src);
    std::fs::create_dir_all(src.join("runbooks")).unwrap();
    std::fs::write(
        src.join("runbooks/note.toml"),
        "name = \"note\"\n\n[[steps]]\nname = \"say\"\ntype = \"action\"\ncommand = \"echo noted\"\n",
    )
    .unwrap();
    let (code, out, err) = ferry(api, &["apps", "sync", src.to_str().unwrap(), "--name", app]);
    assert_eq!(code, 0, "{out}{err}");
    let label = format!("customer={name}");
    let created: ferry_model::api::CreatedInstall = cli(
        api,
        &[
            "installs",
            "create",
            "--app",
            app,
            "--name",
            name,
            "--approve-all",
            "--label",
            &label,
            "--json",
        ],
    );
    wait_until(api, &created.workflow_id, 120, "the provisioning", ended)
}

fn values_of(api: &str, wf: &ferry_model::Workflow, app: &str, release: &str) -> Values {
    let install: ferry_model::Install = cli(api, &["installs", "get", &wf.install, "--json"]);
    let job = the_step(wf, "greeter", "plan").job_id.clone().unwrap();
    Values {
        install: wf.install.clone(),
        app: app.into(),
        config: install.app_config_id,
        workflow: wf.id.clone(),
        job,
        release: release.into(),
        token: "none".into(),
    }
}

#[test]
fn a_customer_token_reaches_its_installs_and_nothing_of_another_customers() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let _acme_runner = Proc::runner(
        &nats.url,
        "acme",
        &dir.path().join("runner-acme"),
        dir.path().join("runner-acme.log"),
    );
    let _globex_runner = Proc::runner(
        &nats.url,
        "globex",
        &dir.path().join("runner-globex"),
        dir.path().join("runner-globex.log"),
    );
    let acme_wf = provision(&api, dir.path(), "hello", "acme");
    let globex_wf = provision(&api, dir.path(), "shop", "globex");
    let release: ferry_model::Release =
        cli(&api, &["releases", "create", "--app", "shop", "--json"]);
    let acme = values_of(&api, &acme_wf, "hello", "none");
    let mut globex = values_of(&api, &globex_wf, "shop", &release.id);
    let vendor_token: CreatedToken = cli(
        &api,
        &[
            "tokens", "create", "--name", "ops", "--role", "viewer", "--json",
        ],
    );
    globex.token = vendor_token.info.id.clone();
    let missing = Values {
        install: "nobody".into(),
        app: "noapp".into(),
        config: "01nosuchconfig".into(),
        workflow: "01nosuchworkflow".into(),
        job: "01nosuchworkflow-1".into(),
        release: "01nosuchrelease".into(),
        token: "01nosuchtoken".into(),
    };

    // Binding is required for a customer and refused for an admin, naming the flags.
    let (code, _, err) = ferry(
        &api,
        &["tokens", "create", "--name", "x", "--role", "customer"],
    );
    assert_eq!(code, 1);
    assert!(err.contains("--install NAME"), "{err}");
    let (code, _, err) = ferry(
        &api,
        &[
            "tokens",
            "create",
            "--name",
            "x",
            "--role",
            "admin",
            "--install",
            "acme",
        ],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("an admin token reaches every install"),
        "{err}"
    );
    let customer = customer_token(&api, "acme-sec", "acme");
    let bearer = format!("authorization: Bearer {customer}");

    // Every operation against globex's records answers as one against records that do not
    // exist, and no answer carries anything of globex's.
    let secret_of_globex = [
        "globex",
        "shop",
        globex.workflow.as_str(),
        globex.config.as_str(),
        release.id.as_str(),
    ];
    for op in ops::ALL {
        if !op.path.contains('{') {
            continue;
        }
        let method = op.method.name();
        let (code, body) = http(method, &format!("{api}{}", fill(op.path, &globex)), &bearer);
        let (code_missing, body_missing) = http(
            method,
            &format!("{api}{}", fill(op.path, &missing)),
            &bearer,
        );
        assert_eq!(
            code, code_missing,
            "{method} {} against globex: {body} / against nothing: {body_missing}",
            op.path
        );
        let mut same = body.clone();
        for (theirs, none) in globex.pairs(&missing) {
            same = same.replace(theirs, none);
        }
        assert_eq!(same, body_missing, "{method} {}", op.path);
    }
    // Listings: only acme's.
    for path in [
        "/v1/installs",
        "/v1/apps",
        "/v1/workflows",
        "/v1/approvals",
        "/v1/runners",
        "/v1/releases",
        "/v1/workflows?install=globex",
        "/v1/runners?install=globex",
        "/v1/apps/hello/fleet",
    ] {
        let (code, body) = http("GET", &format!("{api}{path}"), &bearer);
        assert_eq!(code, 200, "{path}: {body}");
        for s in secret_of_globex {
            assert!(!body.contains(s), "{path} shows `{s}`: {body}");
        }
    }
    let (_, body) = http("GET", &format!("{api}/v1/installs"), &bearer);
    assert!(body.contains("\"acme\""), "{body}");
    let (_, body) = http("GET", &format!("{api}/v1/apps/hello/fleet"), &bearer);
    assert!(body.contains("\"installs\":1"), "{body}");
    let (code, body) = http("POST", &format!("{api}/v1/releases"), &bearer);
    assert_eq!(code, 403, "{body}");

    // Against acme: what a customer reads, and no more than its role.
    for path in [
        format!("/v1/installs/{}", acme.install),
        format!("/v1/installs/{}/history", acme.install),
        format!("/v1/workflows/{}", acme.workflow),
        format!("/v1/jobs/{}", acme.job),
        format!("/v1/jobs/{}/logs", acme.job),
        format!("/v1/configs/{}", acme.config),
        "/v1/apps/hello".to_string(),
    ] {
        let (code, body) = http("GET", &format!("{api}{path}"), &bearer);
        assert_eq!(code, 200, "{path}: {body}");
    }
    let (code, body) = http("POST", &format!("{api}/v1/installs/acme/deploy"), &bearer);
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("this needs operator"), "{body}");

    // The event stream: acme's changes come, globex's do not.
    let events = std::thread::spawn({
        let (api, bearer) = (api.clone(), bearer.clone());
        move || stream(&format!("{api}/v1/events"), &bearer, 6)
    });
    std::thread::sleep(std::time::Duration::from_secs(2));
    for name in ["globex", "acme"] {
        let (code, out, err) = ferry(&api, &["installs", "label", name, "seen=yes"]);
        assert_eq!(code, 0, "{out}{err}");
    }
    let events = events.join().unwrap();
    assert!(events.contains("\"acme\""), "{events}");
    for s in secret_of_globex {
        assert!(
            !events.contains(s),
            "the event stream shows `{s}`: {events}"
        );
    }

    // The dashboard, signed in with the customer token: the same.
    let cookie = ferry_tests::dashboard_cookie_for(&api, &customer);
    for (page, of_globex) in [
        ("/ui/installs/{name}", true),
        ("/ui/workflows/{id}", true),
        ("/ui/jobs/{id}", true),
        ("/ui/jobs/{id}/log", true),
        ("/ui/releases/{id}", true),
    ] {
        assert!(of_globex);
        let templ = page.replace("/ui/", "/v1/");
        let path = fill(&templ, &globex).replacen("/v1/", "/ui/", 1);
        let (code, body) = http("GET", &format!("{api}{path}"), &cookie);
        assert_eq!(code, 404, "{path}: {body}");
    }
    // Every form that acts on a record of theirs, as if the record did not exist.
    for form in [
        "/ui/installs/{name}/rollback",
        "/ui/installs/{name}/break-glass",
        "/ui/installs/{name}/break-glass/{role}/revoke",
        "/ui/workflows/{id}/decide",
        "/ui/workflows/{id}/respond",
        "/ui/releases/{id}/pause",
    ] {
        let templ = form.replace("/ui/", "/v1/");
        let path = fill(&templ, &globex).replacen("/v1/", "/ui/", 1);
        let (code, body) = http("POST", &format!("{api}{path}"), &cookie);
        assert_eq!(code, 404, "{path}: {body}");
    }
    for page in ["/ui/installs", "/ui/approvals", "/ui/releases"] {
        let (code, body) = http("GET", &format!("{api}{page}"), &cookie);
        assert_eq!(code, 200, "{page}: {body}");
        for s in secret_of_globex {
            assert!(!body.contains(s), "{page} shows `{s}`");
        }
    }
    let (code, body) = http("GET", &format!("{api}/ui/installs/acme"), &cookie);
    assert_eq!(code, 200, "{body}");

    // A viewer bound by label reaches what carries the label, and follows it.
    let team: CreatedToken = cli(
        &api,
        &[
            "tokens",
            "create",
            "--name",
            "acme-team",
            "--role",
            "viewer",
            "--label",
            "customer=acme",
            "--json",
        ],
    );
    let (_, out, _) = ferry(&api, &["tokens", "list"]);
    assert!(out.contains("labels customer=acme"), "{out}");
    assert!(out.contains("installs acme"), "{out}");
    let team = format!("authorization: Bearer {}", team.token);
    let (code, _) = http("GET", &format!("{api}/v1/installs/globex"), &team);
    assert_eq!(code, 404);
    let (code, out, err) = ferry(&api, &["installs", "label", "globex", "customer=acme"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, body) = http("GET", &format!("{api}/v1/installs/globex"), &team);
    assert_eq!(code, 200, "{body}");
    assert!(token_for(&api).is_some());
}
