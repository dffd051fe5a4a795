use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{ArtifactError, sha256_digest};

pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
pub const ARTIFACT_TYPE: &str = "application/vnd.ferry.component.v1";
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.ferry.component.config.v1+json";
pub const LAYER_MEDIA_TYPE: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub media_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    pub config: Descriptor,
    pub layers: Vec<Descriptor>,
}

impl Manifest {
    /// Parses a manifest after verifying it hashes to `digest`.
    pub fn parse(digest: &str, bytes: &[u8]) -> Result<Manifest, ArtifactError> {
        crate::verify(digest, bytes)?;
        let m: Manifest =
            serde_json::from_slice(bytes).map_err(|e| ArtifactError::InvalidManifest {
                digest: digest.into(),
                reason: e.to_string(),
            })?;
        for d in std::iter::once(&m.config).chain(m.layers.iter()) {
            crate::digest_hex(&d.digest)?;
        }
        Ok(m)
    }
}

/// The artifact's config blob: what it is and what it was built from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactConfig {
    pub component: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub content_hash: String,
}

#[derive(Debug, Clone)]
pub struct BuiltArtifact {
    pub manifest_digest: String,
    pub manifest_bytes: Vec<u8>,
    /// The manifest's media type (what a registry is told it is).
    pub media_type: String,
    /// Config and layer blobs by digest.
    pub blobs: Vec<(String, Vec<u8>)>,
    pub size: u64,
    /// The name it is pushed under besides its digest (a chart's version), if any.
    pub tag: Option<String>,
}

/// Packs files (path relative to the component's directory, content, executable) into an artifact.
/// The layer is reproducible — sorted entries, zero timestamps and owners — so the same files always
/// give the same digest.
pub fn pack<'a>(
    config: &ArtifactConfig,
    files: impl IntoIterator<Item = (&'a str, &'a [u8], bool)>,
) -> Result<BuiltArtifact, ArtifactError> {
    let config_bytes =
        serde_json::to_vec(config).map_err(|e| ArtifactError::Store(e.to_string()))?;
    one_layer(
        Some(ARTIFACT_TYPE),
        (CONFIG_MEDIA_TYPE, config_bytes),
        (LAYER_MEDIA_TYPE, tar_gz(files)?),
        None,
    )
}

/// An image manifest of one config blob and one layer, both `(media type, bytes)`: the shape of
/// Ferry's component artifacts and of Helm's charts alike.
pub(crate) fn one_layer(
    artifact_type: Option<&str>,
    (config_type, config): (&str, Vec<u8>),
    (layer_type, layer): (&str, Vec<u8>),
    tag: Option<String>,
) -> Result<BuiltArtifact, ArtifactError> {
    let manifest = Manifest {
        schema_version: 2,
        media_type: MANIFEST_MEDIA_TYPE.into(),
        artifact_type: artifact_type.map(str::to_string),
        config: Descriptor {
            media_type: config_type.into(),
            digest: sha256_digest(&config),
            size: config.len() as u64,
        },
        layers: vec![Descriptor {
            media_type: layer_type.into(),
            digest: sha256_digest(&layer),
            size: layer.len() as u64,
        }],
    };
    let manifest_bytes =
        serde_json::to_vec(&manifest).map_err(|e| ArtifactError::Store(e.to_string()))?;
    Ok(BuiltArtifact {
        manifest_digest: sha256_digest(&manifest_bytes),
        size: (config.len() + layer.len() + manifest_bytes.len()) as u64,
        manifest_bytes,
        media_type: MANIFEST_MEDIA_TYPE.into(),
        tag,
        blobs: vec![
            (manifest.config.digest.clone(), config),
            (manifest.layers[0].digest.clone(), layer),
        ],
    })
}

/// A reproducible `tar+gzip` of `files` (path, content, executable): sorted entries, zero
/// timestamps and owners, so the same files always give the same bytes.
pub(crate) fn tar_gz<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8], bool)>,
) -> Result<Vec<u8>, ArtifactError> {
    let mut files: Vec<(&str, &[u8], bool)> = files.into_iter().collect();
    files.sort_by(|a, b| a.0.cmp(b.0));
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    tar.mode(tar::HeaderMode::Deterministic);
    for (path, bytes, exec) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(if exec { 0o755 } else { 0o644 });
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        h.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut h, path, bytes)?;
    }
    Ok(tar.into_inner()?.finish()?)
}

/// Extracts a `tar+gzip` layer into `dir`. Entries that would land outside `dir` (absolute paths,
/// `..`) are refused by `tar`'s `unpack_in`.
pub fn unpack_layer(bytes: &[u8], dir: &Path) -> Result<(), ArtifactError> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    archive.set_preserve_permissions(true);
    for entry in archive.entries()? {
        let mut entry = entry?;
        if !entry.unpack_in(dir)? {
            let path = entry
                .path()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            return Err(ArtifactError::Store(format!(
                "layer entry `{path}` points outside the target directory"
            )));
        }
    }
    Ok(())
}

/// A manifest as a copy walks it: an image (or artifact) and its blobs, or an index and the
/// manifests it lists. Docker's schema-2 manifests and manifest lists read as the OCI ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Image {
        media_type: String,
        /// The config's digest, then each layer's.
        blobs: Vec<String>,
    },
    Index {
        media_type: String,
        manifests: Vec<String>,
    },
}

pub const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
pub const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const DOCKER_LIST_MEDIA_TYPE: &str =
    "application/vnd.docker.distribution.manifest.list.v2+json";

/// Parses any manifest after verifying it hashes to `digest` (with `oci-spec`'s types).
pub fn parse_any(digest: &str, bytes: &[u8]) -> Result<Parsed, ArtifactError> {
    crate::verify(digest, bytes)?;
    let invalid = |reason: String| ArtifactError::InvalidManifest {
        digest: digest.into(),
        reason,
    };
    let probe: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
    let declared = probe["mediaType"].as_str().map(str::to_string);
    let checked = |d: String| -> Result<String, ArtifactError> {
        crate::digest_hex(&d)?;
        Ok(d)
    };
    if probe.get("manifests").is_some() {
        let index =
            oci_spec::image::ImageIndex::from_reader(bytes).map_err(|e| invalid(e.to_string()))?;
        let manifests = index
            .manifests()
            .iter()
            .map(|m| checked(m.digest().to_string()))
            .collect::<Result<_, _>>()?;
        Ok(Parsed::Index {
            media_type: declared.unwrap_or_else(|| INDEX_MEDIA_TYPE.into()),
            manifests,
        })
    } else {
        let m = oci_spec::image::ImageManifest::from_reader(bytes)
            .map_err(|e| invalid(e.to_string()))?;
        let blobs = std::iter::once(m.config())
            .chain(m.layers())
            .map(|d| checked(d.digest().to_string()))
            .collect::<Result<_, _>>()?;
        Ok(Parsed::Image {
            media_type: declared.unwrap_or_else(|| MANIFEST_MEDIA_TYPE.into()),
            blobs,
        })
    }
}
