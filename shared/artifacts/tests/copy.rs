use std::os::unix::fs::PermissionsExt;

use ferry_artifacts::{
    ArtifactConfig, ArtifactError, BlobStore, LocalLayout, NatsObjectStore, copy, pack, push,
    unpack,
};
use ferry_tests::NatsServer;

fn config() -> ArtifactConfig {
    ArtifactConfig {
        component: "greeter".into(),
        kind: "script".into(),
        content_hash: "sha256:00".into(),
    }
}

fn files() -> Vec<(&'static str, &'static [u8], bool)> {
    vec![
        ("apply.sh", b"#!/bin/sh\necho hi\n", true),
        ("sub/data.txt", b"data", false),
    ]
}

#[test]
fn packing_is_reproducible() {
    let a = pack(&config(), files()).unwrap();
    let mut reversed = files();
    reversed.reverse();
    let b = pack(&config(), reversed).unwrap();
    assert_eq!(a.manifest_digest, b.manifest_digest);
    let c = pack(
        &config(),
        vec![("apply.sh", &b"#!/bin/sh\necho bye\n"[..], true)],
    )
    .unwrap();
    assert_ne!(a.manifest_digest, c.manifest_digest);
}

#[tokio::test]
async fn copy_from_nats_to_a_local_layout_verifies_and_skips() {
    let nats = NatsServer::start();
    let js = async_nats::jetstream::new(nats.admin().await);
    let os = js
        .create_object_store(async_nats::jetstream::object_store::Config {
            bucket: "artifacts".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let vendor = NatsObjectStore::new(os);
    let art = pack(&config(), files()).unwrap();
    push(&vendor, &art).await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let install = LocalLayout::open(&dir.path().join("oci")).unwrap();
    let first = copy(&vendor, &install, &art.manifest_digest).await.unwrap();
    assert_eq!((first.blobs_copied, first.blobs_skipped), (3, 0));
    let again = copy(&vendor, &install, &art.manifest_digest).await.unwrap();
    assert_eq!(
        (again.blobs_copied, again.blobs_skipped),
        (0, 3),
        "a second copy moves nothing"
    );

    let out = dir.path().join("src");
    std::fs::create_dir_all(&out).unwrap();
    unpack(&install, &art.manifest_digest, &out).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(out.join("sub/data.txt")).unwrap(),
        "data"
    );
    let mode = std::fs::metadata(out.join("apply.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "executable bit survives");

    // A tampered blob in the install store is detected on read.
    let (layer_digest, _) = &art.blobs[1];
    let hex = layer_digest.strip_prefix("sha256:").unwrap();
    std::fs::write(dir.path().join("oci/blobs/sha256").join(hex), b"evil").unwrap();
    assert!(matches!(
        install.get_blob(layer_digest).await,
        Err(ArtifactError::DigestMismatch { .. })
    ));

    // Putting bytes under the wrong digest is refused.
    assert!(matches!(
        vendor.put_blob(layer_digest, b"other").await,
        Err(ArtifactError::DigestMismatch { .. })
    ));
    // A digest cannot name a path outside the layout.
    assert!(matches!(
        install.get_blob("sha256:../../etc/passwd").await,
        Err(ArtifactError::InvalidDigest(_))
    ));
    // An unknown artifact is NotFound, not a panic.
    let missing = format!("sha256:{}", "0".repeat(64));
    assert!(matches!(
        copy(&vendor, &install, &missing).await,
        Err(ArtifactError::NotFound(_))
    ));
}

/// Jobs of one runner copy artifacts at once, and artifacts share blobs (a layer, an empty
/// config): every write of the same blob lands, none takes another's file from under it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_blob_written_at_once_by_many_copies_lands_every_time() {
    let dir = tempfile::tempdir().unwrap();
    let layout = std::sync::Arc::new(LocalLayout::open(&dir.path().join("oci")).unwrap());
    let bytes = vec![7u8; 256 * 1024];
    let digest = ferry_artifacts::sha256_digest(&bytes);
    for _round in 0..20 {
        let writes: Vec<_> = (0..8)
            .map(|_| {
                let (layout, bytes, digest) = (layout.clone(), bytes.clone(), digest.clone());
                tokio::spawn(async move { layout.put_blob(&digest, &bytes).await })
            })
            .collect();
        for w in writes {
            w.await.unwrap().unwrap();
        }
    }
    assert_eq!(layout.get_blob(&digest).await.unwrap(), bytes);
}
