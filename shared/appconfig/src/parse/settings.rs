//! What a `helm_chart` or `kubernetes_manifest` says beyond variables, read into the protocol's
//! [`KindSettings`] with its template sources (rendered per install by [`Component::render`]).
//!
//! File references (`values_file.path`, a `manifest = "./x.yaml"`) are replaced by the file's
//! contents here, as Nuon does at sync: what is deployed is the package's bytes. The checker has
//! already reported a reference that is missing or leaves the package; such a value reads as empty.

use ferry_protocol::messages::{
    HelmRepo, HelmSettings, ImageSettings, ImageSource, JobSettings, KindSettings, Kustomize,
    ManifestSettings,
};

use super::*;
use crate::check::{Reference, reference, remote_path, resolve};

impl<'a> Loader<'a> {
    /// The settings of a component of `kind` declared in `doc` (files resolved against `base`).
    pub(super) fn settings(&self, r: &Node, kind: ComponentType, base: &str) -> KindSettings {
        match kind {
            ComponentType::HelmChart => KindSettings::Helm(self.helm(r, base)),
            ComponentType::KubernetesManifest => KindSettings::Manifest(ManifestSettings {
                manifest: r.str_of("manifest").map(|v| self.contents(base, v)),
                kustomize: r.get("kustomize").map(|k| Kustomize {
                    path: k.str_of("path").unwrap_or(".").to_string(),
                    patches: k
                        .get("patches")
                        .map(Node::items)
                        .unwrap_or_default()
                        .iter()
                        .filter_map(|p| p.as_str().map(str::to_string))
                        .collect(),
                    enable_helm: k.bool_of("enable_helm").unwrap_or(false),
                    load_restrictor: k.str_of("load_restrictor").unwrap_or_default().to_string(),
                }),
                namespace: r.str_of("namespace").unwrap_or_default().to_string(),
            }),
            ComponentType::ContainerImage => {
                image(r).map_or(KindSettings::None, KindSettings::Image)
            }
            ComponentType::Job => KindSettings::Job(JobSettings {
                image_url: r.str_of("image_url").unwrap_or_default().to_string(),
                tag: r.str_of("tag").unwrap_or_default().to_string(),
                cmd: strings(r.get("cmd")),
                args: strings(r.get("args")),
            }),
            _ => KindSettings::None,
        }
    }

    fn helm(&self, r: &Node, base: &str) -> HelmSettings {
        let values_files = r
            .get("values_file")
            .map(Node::items)
            .unwrap_or_default()
            .iter()
            .filter_map(|f| {
                // `contents` (inline or a reference), else `path` / `source` (a path).
                if let Some(c) = f.str_of("contents") {
                    return Some(self.contents(base, c));
                }
                let p = f.str_of("path").or_else(|| f.str_of("source"))?;
                let p = if reference(p) == Reference::Inline {
                    format!("./{p}")
                } else {
                    p.to_string()
                };
                Some(self.contents(base, &p))
            })
            .collect();
        // The older `[[value]]` list first, so `[values]` wins where both set one path.
        let mut set: Vec<(String, String)> = r
            .get("value")
            .map(Node::items)
            .unwrap_or_default()
            .iter()
            .filter_map(|v| {
                Some((
                    v.str_of("name")?.to_string(),
                    v.str_of("value")?.to_string(),
                ))
            })
            .collect();
        set.extend(string_map(r.get("values")));
        HelmSettings {
            release: r.str_of("chart_name").unwrap_or_default().to_string(),
            namespace: r.str_of("namespace").unwrap_or_default().to_string(),
            storage_driver: r.str_of("storage_driver").unwrap_or_default().to_string(),
            values_files,
            set,
            repo: r.get("helm_repo").map(|h| HelmRepo {
                url: h.str_of("repo_url").unwrap_or_default().to_string(),
                chart: h.str_of("chart").unwrap_or_default().to_string(),
                version: h.str_of("version").map(str::to_string),
            }),
            take_ownership: r.bool_of("take_ownership").unwrap_or(false),
        }
    }

    /// A "contents" value: inline text as it is; a local reference as the file's text (resolved
    /// against `base`, then, as the checker allows with a warning, against the package root); a
    /// remote one as the bytes `ferry apps sync` fetched into the package.
    pub(super) fn contents(&self, base: &str, value: &str) -> String {
        let path = match reference(value) {
            Reference::Inline => return value.to_string(),
            Reference::Remote => Some(remote_path(value)),
            Reference::Local => resolve(base, value)
                .filter(|p| self.pkg.files.contains_key(p))
                .or_else(|| resolve("", value)),
        };
        path.and_then(|p| self.pkg.files.get(&p))
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    }
}

/// A container image's source: the one of `public`, `aws_ecr`, `gcp_gar`, `azure_acr` present
/// (the checker has said when there is not exactly one).
fn image(r: &Node) -> Option<ImageSettings> {
    let (key, t) = ["public", "aws_ecr", "gcp_gar", "azure_acr"]
        .into_iter()
        .find_map(|k| r.get(k).map(|t| (k, t)))?;
    let source = match key {
        "public" => ImageSource::Public,
        "aws_ecr" => ImageSource::AwsEcr {
            region: t.str_of("region").unwrap_or_default().to_string(),
        },
        other => ImageSource::Unsupported(other.to_string()),
    };
    Some(ImageSettings {
        image_url: t.str_of("image_url").unwrap_or_default().to_string(),
        tag: t.str_of("tag").unwrap_or_default().to_string(),
        source,
    })
}

fn strings(node: Option<&Node>) -> Vec<String> {
    node.map(Node::items)
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect()
}

/// Every template source in `settings`, for what reads an input.
pub(super) fn templates(settings: &KindSettings) -> Vec<&String> {
    match settings {
        KindSettings::None => vec![],
        KindSettings::Helm(h) => [&h.release, &h.namespace, &h.storage_driver]
            .into_iter()
            .chain(&h.values_files)
            .chain(h.set.iter().map(|(_, v)| v))
            .collect(),
        KindSettings::Manifest(m) => m.manifest.iter().chain([&m.namespace]).collect(),
        KindSettings::Image(i) => vec![&i.tag],
        KindSettings::Job(j) => [&j.image_url, &j.tag]
            .into_iter()
            .chain(&j.cmd)
            .chain(&j.args)
            .collect(),
    }
}

/// `settings` with each template rendered against an install's state (Nuon renders these
/// fields: chart_name, namespace, storage_driver, values, values files; manifest, namespace).
pub(super) fn render(
    settings: &KindSettings,
    render: impl Fn(&str, &str) -> Result<String, String>,
) -> Result<KindSettings, String> {
    Ok(match settings {
        KindSettings::None => KindSettings::None,
        KindSettings::Helm(h) => KindSettings::Helm(HelmSettings {
            release: render("chart_name", &h.release)?,
            namespace: render("namespace", &h.namespace)?,
            storage_driver: render("storage_driver", &h.storage_driver)?,
            values_files: h
                .values_files
                .iter()
                .enumerate()
                .map(|(i, f)| render(&format!("values_file[{i}]"), f))
                .collect::<Result<_, _>>()?,
            set: h
                .set
                .iter()
                .map(|(k, v)| Ok((k.clone(), render(&format!("values.{k}"), v)?)))
                .collect::<Result<_, String>>()?,
            ..h.clone()
        }),
        KindSettings::Manifest(m) => KindSettings::Manifest(ManifestSettings {
            manifest: m
                .manifest
                .as_deref()
                .map(|s| render("manifest", s))
                .transpose()?,
            namespace: render("namespace", &m.namespace)?,
            kustomize: m.kustomize.clone(),
        }),
        KindSettings::Image(i) => KindSettings::Image(ImageSettings {
            tag: render("tag", &i.tag)?,
            ..i.clone()
        }),
        KindSettings::Job(j) => KindSettings::Job(JobSettings {
            image_url: render("image_url", &j.image_url)?,
            tag: render("tag", &j.tag)?,
            cmd: j
                .cmd
                .iter()
                .map(|c| render("cmd", c))
                .collect::<Result<_, _>>()?,
            args: j
                .args
                .iter()
                .map(|a| render("args", a))
                .collect::<Result<_, _>>()?,
        }),
    })
}
