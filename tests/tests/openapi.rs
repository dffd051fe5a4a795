//! The API's OpenAPI description (`/v1/openapi.json`): valid by a real validator, every
//! described operation served, every schema it refers to defined.

use std::process::Command;

use ferry_tests::{NatsServer, Proc, repo_root};
use serde_json::Value;

fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                out.push(r);
            }
            m.values().for_each(|x| refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

#[test]
fn the_description_is_valid_and_every_operation_in_it_is_served() {
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (_server, api) = Proc::server(&nats.url, dir.path().join("server.log"));
    let token = ferry_tests::token_for(&api).unwrap();

    // Served without a token.
    let out = Command::new("curl")
        .args(["-sf", &format!("{api}/v1/openapi.json")])
        .output()
        .unwrap();
    assert!(out.status.success(), "GET /v1/openapi.json failed");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, &out.stdout).unwrap();

    // A real validator's verdict (PyPI's openapi-spec-validator).
    let check = Command::new("python3")
        .env("PYTHONPATH", repo_root().join(".tools/pip-openapi"))
        .args(["-m", "openapi_spec_validator"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );

    // Every schema referred to is defined.
    let mut found = Vec::new();
    refs(&doc, &mut found);
    for r in &found {
        let name = r.trim_start_matches("#/components/schemas/");
        assert!(
            doc["components"]["schemas"].get(name).is_some(),
            "{r} is not defined"
        );
    }
    assert!(doc["components"]["securitySchemes"]["token"]["scheme"] == "bearer");

    // Every described operation is routed: with a token, none answers as an unknown route
    // (an empty 404) or an unknown method (405).
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 40, "{} paths", paths.len());
    let mut operations = 0;
    for (path, item) in paths {
        let url = path
            .split('/')
            .map(|seg| if seg.starts_with('{') { "nope" } else { seg })
            .collect::<Vec<_>>()
            .join("/");
        for method in ["get", "post", "delete", "put", "patch"] {
            if item.get(method).is_none() {
                continue;
            }
            operations += 1;
            let out = Command::new("curl")
                .args(["-s", "--max-time", "2", "-X", &method.to_uppercase()])
                .args(["-H", &format!("authorization: Bearer {token}")])
                .args(["-w", "\n%{http_code}"])
                .arg(format!("{api}{url}"))
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
            assert!(
                code != "405" && !(code == "404" && body.trim().is_empty()),
                "{method} {path} is described but not served: HTTP {code} {body:?}"
            );
        }
    }
    assert!(operations >= 48, "{operations} operations");
    // And the other way round, a path nobody serves is an empty 404 (the check above can fail).
    let out = Command::new("curl")
        .args(["-s", "-w", "%{http_code}", &format!("{api}/v1/nowhere")])
        .args(["-H", &format!("authorization: Bearer {token}")])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "404");
}
