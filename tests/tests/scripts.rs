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
