//! The README's set-up script checks its prerequisites first and names every missing one.

use std::process::Command;

use ferry_tests::repo_root;

/// With a PATH that has none of the tools, `scripts/dev` names each, says how to get it, and
/// exits 1 before building anything.
#[test]
fn scripts_dev_names_every_missing_prerequisite_first() {
    let empty = tempfile::tempdir().unwrap();
    // bash itself is needed to run the script; nothing else is on this PATH.
    let bash_dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/bin/bash", bash_dir.path().join("bash")).unwrap();
    let path = format!("{}:{}", bash_dir.path().display(), empty.path().display());
    let out = Command::new("/bin/bash")
        .arg(repo_root().join("scripts/dev"))
        .env("PATH", path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for tool in ["cargo:", "terraform:", "cc:"] {
        assert!(err.contains(tool), "{tool} named: {err}");
    }
    assert!(err.contains("apt-get install build-essential"), "{err}");
}

/// The README, ARCHITECTURE.md and docs/ point only inside the repository: every relative link
/// names a file that exists, and nothing sends a reader to a folder beside the checkout.
#[test]
fn docs_point_only_inside_the_repository() {
    let root = repo_root();
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            files.push(p);
        }
    }
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            !text.contains("../shared"),
            "{} points outside",
            f.display()
        );
        // Markdown links: ](target)
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap_or_default();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let path = f.parent().unwrap().join(target);
            assert!(
                path.exists(),
                "{}: link to {target} names nothing",
                f.display()
            );
        }
    }
}
