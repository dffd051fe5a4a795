//! Helm's own OCI chart artifact (what `helm push` makes and `helm pull oci://` reads): a config of
//! media type `application/vnd.cncf.helm.config.v1+json` holding the chart's metadata (its
//! `Chart.yaml` as JSON), one layer `application/vnd.cncf.helm.chart.content.v1.tar+gzip` holding the
//! packaged chart (files under `<name>/`), tagged with the chart's version.
//!
//! Packed here rather than by running `helm package`: the build service runs no tools, and the
//! package must be reproducible (sorted entries, zero times and owners), so an unchanged chart keeps
//! its digest.

use crate::ArtifactError;
use crate::format::{BuiltArtifact, Manifest};

pub const HELM_CONFIG_MEDIA_TYPE: &str = "application/vnd.cncf.helm.config.v1+json";
pub const HELM_CHART_MEDIA_TYPE: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";

/// Packs a chart's files (paths relative to the chart's directory, which holds `Chart.yaml`).
pub fn pack_helm_chart<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8], bool)>,
) -> Result<BuiltArtifact, ArtifactError> {
    let files: Vec<(&str, &[u8], bool)> = files.into_iter().collect();
    let chart_yaml = files
        .iter()
        .find(|(p, _, _)| *p == "Chart.yaml")
        .map(|(_, b, _)| *b)
        .ok_or_else(|| ArtifactError::Store("the chart has no Chart.yaml".into()))?;
    let meta: serde_json::Value = serde_norway::from_slice(chart_yaml)
        .map_err(|e| ArtifactError::Store(format!("Chart.yaml: {e}")))?;
    let field = |k: &str| {
        meta[k]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| ArtifactError::Store(format!("Chart.yaml has no `{k}`")))
    };
    let (name, version) = (field("name")?, field("version")?);
    let prefixed: Vec<(String, &[u8], bool)> = files
        .iter()
        .map(|(p, b, x)| (format!("{name}/{p}"), *b, *x))
        .collect();
    let layer = crate::format::tar_gz(prefixed.iter().map(|(p, b, x)| (p.as_str(), *b, *x)))?;
    let config = serde_json::to_vec(&meta).map_err(|e| ArtifactError::Store(e.to_string()))?;
    // OCI tags take no `+`: Helm writes a chart version's build metadata with `_`.
    crate::format::one_layer(
        None,
        (HELM_CONFIG_MEDIA_TYPE, config),
        (HELM_CHART_MEDIA_TYPE, layer),
        Some(version.replace('+', "_")),
    )
}

/// The chart version of a Helm chart artifact in `store` (its tag, as Helm writes it), or `None`
/// when the artifact is not a chart.
pub async fn chart_tag<S: crate::BlobStore>(
    store: &S,
    manifest_digest: &str,
) -> Result<Option<String>, ArtifactError> {
    let manifest = Manifest::parse(manifest_digest, &store.get_manifest(manifest_digest).await?)?;
    if manifest.config.media_type != HELM_CONFIG_MEDIA_TYPE {
        return Ok(None);
    }
    let config: serde_json::Value =
        serde_json::from_slice(&store.get_blob(&manifest.config.digest).await?).map_err(|e| {
            ArtifactError::InvalidManifest {
                digest: manifest_digest.into(),
                reason: format!("chart config: {e}"),
            }
        })?;
    Ok(config["version"].as_str().map(|v| v.replace('+', "_")))
}
