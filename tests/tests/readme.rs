//! The app's readme rendered for each install as Nuon renders it (html/template over the
//! install's state), through the real server: the CLI, the API and the dashboard.

use std::process::Command;

use ferry_tests::{NatsServer, Proc, copy_dir, ferry, repo_root, sync_hello};

const README: &str = "# Hello\n\nGreeting: **{{ .nuon.inputs.inputs.greeting }}** on \
                      {{ .nuon.name }}, {{ \"<b>&+\" }}\n";

#[test]
fn an_installs_readme_renders_its_state_escaped_and_falls_back_to_the_text() {
    let nats = NatsServer::start();
    let (_server, api) = Proc::server(&nats.url, nats.dir.path().join("server.log"));
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("hello");
    copy_dir(&repo_root().join("examples/hello"), &app);
    std::fs::write(app.join("README.md"), README).unwrap();
    sync_hello(&api, &app);
    let (code, out, err) = ferry(
        &api,
        &[
            "installs",
            "create",
            "--app",
            "hello",
            "--name",
            "first",
            "--input",
            "greeting=hi <there>",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");

    let (code, out, err) = ferry(&api, &["installs", "readme", "first"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out, "# Hello\n\nGreeting: **hi &lt;there&gt;** on first, &lt;b&gt;&amp;&#43;\n",
        "{err}"
    );

    // A readme that reads what the install does not have yet shows as written, with why.
    std::fs::write(
        app.join("README.md"),
        "Counter says {{ .nuon.components.counter.outputs.upper }}\n",
    )
    .unwrap();
    sync_hello(&api, &app);
    let (code, out, err) = ferry(
        &api,
        &["installs", "create", "--app", "hello", "--name", "second"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = ferry(&api, &["installs", "readme", "second", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let readme: ferry_model::api::Readme = serde_json::from_str(&out).unwrap();
    assert_eq!(
        readme.markdown,
        "Counter says {{ .nuon.components.counter.outputs.upper }}\n"
    );
    let warning = readme.warning.expect("a warning");
    assert!(warning.contains("outputs.upper"), "{warning}");
    let (_, _, err) = ferry(&api, &["installs", "readme", "second"]);
    assert!(err.contains("did not render"), "{err}");

    // The first install keeps the readme of the config version it runs.
    let (_, out, _) = ferry(&api, &["installs", "readme", "first"]);
    assert!(out.contains("hi &lt;there&gt;"), "{out}");

    // The dashboard shows it as Markdown: what the template escaped stays text, never markup.
    let cookie = ferry_tests::dashboard_cookie(&api);
    let page = Command::new("curl")
        .args(["-s", "-H", &cookie])
        .arg(format!("{api}/ui/installs/first"))
        .output()
        .unwrap();
    let page = String::from_utf8_lossy(&page.stdout);
    assert!(page.contains("<h1>Hello</h1>"), "{page}");
    assert!(
        page.contains("Greeting: <strong>hi &lt;there&gt;</strong> on first, &lt;b&gt;&amp;+"),
        "{page}"
    );
    assert!(!page.contains("<there>") && !page.contains("<b>"), "{page}");
}
