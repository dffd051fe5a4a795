//! The `container_image` plugin (also `external_image`): an existing image copied, by digest and
//! with every platform of a multi-platform index, from its registry into the install's own.
//!
//! Plan: the tag resolved to a digest in the source registry; the plan names source, digest and
//! destination, so approving it approves exactly that image. Apply: the digest-verified copy
//! (`ferry_artifacts::copy_tagged`: blobs already there are skipped), then the outputs Nuon gives
//! an image component, `image.repository`, `image.tag` (and `image.digest`), for other components'
//! templates. Teardown leaves the image where it is.
//!
//! `[public]` images are pulled anonymously; `[aws_ecr]` ones with credentials from ECR's
//! `GetAuthorizationToken` (the `ferry-aws` crate), under the runner host's AWS identity.
//!
//! A registry on the loopback address (`127.0.0.1:5000/x`, `localhost:5000/x`) is spoken to over
//! plain HTTP, as Docker treats it; every other over HTTPS.

use ferry_artifacts::{AnyStore, Auth, LocalLayout, Registry, copy_tagged};
use ferry_protocol::messages::{ImageSettings, ImageSource, KindSettings};
use serde::{Deserialize, Serialize};

use super::{Plugin, PluginError, PluginJob, PluginPlan, PluginResult, approved_plan, sha256};

#[derive(Debug, Serialize, Deserialize)]
struct ImagePlan {
    component: String,
    /// `repository:tag` as the app names it.
    source: String,
    digest: String,
    /// Where it is copied to.
    destination: String,
}

fn settings(job: &PluginJob) -> Result<&ImageSettings, PluginError> {
    match &job.spec.settings {
        KindSettings::Image(i) => Ok(i),
        _ => Err(PluginError(
            "a container_image job without its image's settings".into(),
        )),
    }
}

/// `docker.io/library/nginx` for `nginx`, `docker.io/bitnami/redis` for `bitnami/redis`; a name
/// whose first part is a host (has a `.` or a `:`, or is `localhost`) as it is.
pub fn full_name(image_url: &str) -> String {
    let first = image_url.split('/').next().unwrap_or_default();
    let has_host = image_url.contains('/')
        && (first.contains('.') || first.contains(':') || first == "localhost");
    match (has_host, image_url.contains('/')) {
        (true, _) => image_url.to_string(),
        (false, true) => format!("docker.io/{image_url}"),
        (false, false) => format!("docker.io/library/{image_url}"),
    }
}

/// The registry URL `Registry::new` takes for an image name: plain HTTP on loopback only.
pub fn registry_url(image_url: &str) -> String {
    let name = full_name(image_url);
    let host = name.split('/').next().unwrap_or_default();
    let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
    if matches!(host, "127.0.0.1" | "localhost" | "[::1]") {
        format!("http://{name}")
    } else {
        format!("https://{name}")
    }
}

/// The image's registry, with its credentials: anonymous for `[public]`; for `[aws_ecr]`, ECR's
/// `GetAuthorizationToken` in the image's region under the runner host's AWS identity
/// (`FERRY_ECR_ENDPOINT` names another ECR endpoint than AWS's).
async fn source(i: &ImageSettings) -> Result<Registry, PluginError> {
    let auth = match &i.source {
        ImageSource::Public => Auth::Anonymous,
        ImageSource::AwsEcr { region } => {
            let endpoint = std::env::var("FERRY_ECR_ENDPOINT").ok();
            let ecr = ferry_aws::Ecr::new(region, endpoint.as_deref()).await;
            ecr.auth()
                .await
                .map_err(|e| PluginError(format!("credentials for {}: {e}", i.image_url)))?
        }
        ImageSource::Unsupported(k) => {
            return Err(PluginError(format!(
                "`{k}` images are checked, but this version of Ferry does not copy them"
            )));
        }
    };
    Registry::new(&registry_url(&i.image_url), auth).map_err(|e| PluginError(e.to_string()))
}

/// The install's store of this component's images: its registry (a repository per component),
/// else the runner's layout directory (the image listed under the component's name).
async fn destination(job: &PluginJob) -> Result<AnyStore, PluginError> {
    if let Some(r) = &job.tools.registry {
        let repo = r
            .for_component(&job.spec.component)
            .await
            .map_err(|e| PluginError(format!("the install's registry: {e}")))?;
        return Ok(AnyStore::Registry(repo));
    }
    let dir = job.tools.layout.as_ref().ok_or_else(|| {
        PluginError("the runner gave no install registry and no layout directory".into())
    })?;
    Ok(AnyStore::Layout(
        LocalLayout::open(dir).map_err(|e| PluginError(e.to_string()))?,
    ))
}

fn location(store: &AnyStore, job: &PluginJob) -> String {
    match store {
        AnyStore::Registry(r) => r.location(),
        AnyStore::Layout(_) => format!(
            "oci:{}:{}",
            job.tools
                .layout
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            job.spec.component
        ),
        AnyStore::Nats(_) => String::new(),
    }
}

fn tag(i: &ImageSettings) -> &str {
    if i.tag.is_empty() { "latest" } else { &i.tag }
}

async fn plan(job: &PluginJob) -> Result<PluginResult, PluginError> {
    let i = settings(job)?;
    let src = source(i).await?;
    let digest = src.resolve(tag(i)).await.map_err(|e| {
        PluginError(format!(
            "resolving {}:{}: {e}",
            full_name(&i.image_url),
            tag(i)
        ))
    })?;
    let dst = destination(job).await?;
    let plan = ImagePlan {
        component: job.spec.component.clone(),
        source: format!("{}:{}", full_name(&i.image_url), tag(i)),
        digest,
        destination: location(&dst, job),
    };
    let bytes = serde_json::to_vec_pretty(&plan)?;
    let plan_digest = sha256(&bytes);
    let changes = job.spec.applied_digest.as_deref() != Some(plan_digest.as_str());
    let summary = if changes {
        format!(
            "copy {}@{} into {}",
            plan.source, plan.digest, plan.destination
        )
    } else {
        "no changes".into()
    };
    println!("plan: {summary}");
    let file = job.work_dir.join("plan.json");
    std::fs::write(&file, &bytes)?;
    Ok(PluginResult {
        plan: Some(PluginPlan {
            file,
            changes,
            summary,
            diff: None,
        }),
        ..Default::default()
    })
}

async fn apply(job: &PluginJob) -> Result<PluginResult, PluginError> {
    let plan: ImagePlan = serde_json::from_slice(&approved_plan(job)?)?;
    let i = settings(job)?;
    let src = source(i).await?;
    let dst = destination(job).await?;
    let tag_here = match &dst {
        AnyStore::Layout(_) => job.spec.component.clone(),
        _ => tag(i).to_string(),
    };
    println!(
        "copying {}@{} into {}",
        plan.source, plan.digest, plan.destination
    );
    let stats = copy_tagged(&src, &dst, &plan.digest, Some(&tag_here))
        .await
        .map_err(|e| PluginError(format!("copying {}@{}: {e}", plan.source, plan.digest)))?;
    println!(
        "copied {} blobs ({} bytes), {} already there",
        stats.blobs_copied, stats.bytes_copied, stats.blobs_skipped
    );
    let mut outputs = serde_json::Map::new();
    outputs.insert(
        "image".into(),
        serde_json::json!({
            "repository": plan.destination,
            "tag": tag(i),
            "digest": plan.digest,
        }),
    );
    Ok(PluginResult {
        outputs,
        ..Default::default()
    })
}

/// A container image: resolved by digest, then copied into the install's registry.
pub(crate) struct Image;

/// The plugin process is synchronous; copying an image is the registry client's async code.
fn block_on<T>(
    work: impl std::future::Future<Output = Result<T, PluginError>>,
) -> Result<T, PluginError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(work)
}

impl Plugin for Image {
    fn plan(&self, job: &PluginJob) -> Result<PluginResult, PluginError> {
        block_on(plan(job))
    }

    fn apply(&self, job: &PluginJob) -> Result<PluginResult, PluginError> {
        block_on(apply(job))
    }

    fn teardown(&self, _: &PluginJob) -> Result<PluginResult, PluginError> {
        println!("images stay in the install's registry: nothing to tear down");
        Ok(PluginResult::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_names_read_as_docker_does() {
        assert_eq!(full_name("nginx"), "docker.io/library/nginx");
        assert_eq!(full_name("bitnami/redis"), "docker.io/bitnami/redis");
        assert_eq!(full_name("ghcr.io/acme/api"), "ghcr.io/acme/api");
        assert_eq!(full_name("localhost:5000/api"), "localhost:5000/api");
        assert_eq!(
            registry_url("127.0.0.1:5000/acme/api"),
            "http://127.0.0.1:5000/acme/api"
        );
        assert_eq!(
            registry_url("public.ecr.aws/nginx/nginx"),
            "https://public.ecr.aws/nginx/nginx"
        );
    }
}
