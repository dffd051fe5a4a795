//! The install stack for the customer: `GET /v1/installs/{name}/stack` renders its
//! CloudFormation template (`ferry_appconfig::stack`) with the install's state from the config
//! version it runs; `POST` publishes it to the vendor's bucket (`ferry-server --stack-bucket`)
//! and records where, with the AWS console's quick-create link, on the install
//! (`Install::stack_template`, `.nuon.install_stack.{template_url,quick_link_url,checksum}`).

use axum::Json;
use axum::extract::Query;
use ferry_appconfig::stack::StackOptions;
use ferry_model::api::{PublishStack, StackQuery};
use ferry_model::ops::Operation as _;
use ferry_model::{self as m, Install};
use ferry_store::{ArchiveError, BoxFuture};
use sha2::Digest;

use crate::auth::Ctx;
use crate::ids::Name;
use crate::{ApiError, ApiState};

/// The longest bundle URL a template takes.
const MAX_URL: usize = 2048;

/// A publish's answer: the object's https URL.
pub type Published<'a> = BoxFuture<'a, Result<String, ArchiveError>>;

/// Where published templates go: the server adapts its S3 bucket to this.
pub trait StackBucket: Send + Sync {
    /// Puts `body` under `name`; returns the object's https URL (what CloudFormation fetches).
    fn publish<'a>(&'a self, name: &'a str, body: Vec<u8>) -> Published<'a>;
    /// The bucket's region: the console link's, unless the caller names another.
    fn region(&self) -> &str;
}

#[utoipa::path(
    get,
    path = m::ops::InstallStackOp::PATH,
    security(("token" = [m::ops::InstallStackOp::ROLE_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name"), StackQuery),
    responses((status = 200, description = "The install stack's CloudFormation template", body = Object), crate::error::Invalid, crate::error::NotFound, crate::error::Refusals)
)]
pub async fn install_stack(
    Ctx(s): Ctx,
    Name(name): Name,
    Query(q): Query<StackQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let install = crate::installs::install_of(&s, &name).await?;
    let opts = options(&install, q.bundle_url, q.bundle_sha256)?;
    let (template, _) = render(&s, &install, &opts).await?;
    Ok(Json(template))
}

#[utoipa::path(
    post,
    path = m::ops::PublishInstallStack::PATH,
    security(("token" = [m::ops::PublishInstallStack::ROLE_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name")),
    request_body = PublishStack,
    responses((status = 200, description = "Where the template is, and the console link that launches it", body = m::StackTemplate), crate::error::Invalid, crate::error::NotFound, crate::error::Conflict, crate::error::Refusals)
)]
pub async fn publish_install_stack(
    Ctx(s): Ctx,
    Name(name): Name,
    Json(body): Json<m::ops::Body<m::ops::PublishInstallStack>>,
) -> Result<Json<m::StackTemplate>, ApiError> {
    // Checked before anything else: it goes into the link the install record keeps.
    if let Some(region) = &body.region {
        let ok = !region.is_empty()
            && region.len() <= 32
            && region
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !ok {
            return Err(ApiError::BadRequest(format!(
                "region `{region}`: an AWS region such as eu-west-1"
            )));
        }
    }
    let Some(bucket) = s.stack_bucket.clone() else {
        return Err(ApiError::Conflict(
            "this control plane publishes no install stacks: start ferry-server with --stack-bucket".into(),
        ));
    };
    let install = crate::installs::install_of(&s, &name).await?;
    let opts = options(&install, body.bundle_url, body.bundle_sha256)?;
    let (template, stack_name) = render(&s, &install, &opts).await?;
    let bytes = serde_json::to_vec_pretty(&template)
        .map_err(|e| ApiError::BadRequest(format!("the template: {e}")))?;
    let checksum = format!("sha256:{:x}", sha2::Sha256::digest(&bytes));
    // Named by its content: a published template never changes under a link already sent.
    let object = format!("{}/{}/{}.json", s.org, install.name, &checksum[7..23]);
    let template_url = bucket
        .publish(&object, bytes)
        .await
        .map_err(|e| ApiError::Unavailable(format!("publishing the template: {e}")))?;
    let region = body.region.unwrap_or_else(|| bucket.region().to_string());
    let published = m::StackTemplate {
        quick_link_url: ferry_appconfig::stack::quick_create_link(
            &region,
            &template_url,
            &stack_name,
            &opts,
        ),
        template_url,
        checksum,
        app_config_id: install.app_config_id.clone(),
        published_at: m::now(),
        published_by: s.actor.clone(),
    };
    let kept = published.clone();
    s.store
        .repo::<Install>()
        .modify(&s.org, &name, move |i| {
            i.stack_template = Some(kept.clone());
            Ok::<_, ()>(true)
        })
        .await?
        .ok();
    crate::handlers::audit(
        &s,
        "install.stack_published",
        &name,
        serde_json::json!({ "template_url": published.template_url, "checksum": published.checksum }),
    )
    .await?;
    Ok(Json(published))
}

/// The template's options, the bundle's sha256 checked.
fn options(
    install: &Install,
    bundle_url: Option<String>,
    bundle_sha256: Option<String>,
) -> Result<StackOptions, ApiError> {
    // Both go into the template and the console link the install record keeps.
    if bundle_url.as_deref().is_some_and(|u| u.len() > MAX_URL) {
        return Err(ApiError::BadRequest(format!(
            "bundle_url: at most {MAX_URL} characters"
        )));
    }
    if let Some(sha) = bundle_sha256.as_deref()
        && !(sha.len() == 64
            && sha
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()))
    {
        return Err(ApiError::BadRequest(format!(
            "bundle_sha256 `{sha}`: 64 lower-case hex digits"
        )));
    }
    Ok(StackOptions {
        install: install.name.clone(),
        bundle_url: bundle_url.unwrap_or_default(),
        bundle_sha256: bundle_sha256.unwrap_or_default(),
    })
}

/// The template and the stack's name, from the config version the install runs.
async fn render(
    s: &ApiState,
    install: &Install,
    opts: &StackOptions,
) -> Result<(serde_json::Value, String), ApiError> {
    let (_, _, cfg) = s.store.config(&s.org, &install.app_config_id).await?;
    let state = ferry_appconfig::jobs::install_state(&cfg, install);
    let bad = |e: ferry_appconfig::stack::StackError| ApiError::BadRequest(e.to_string());
    let template = ferry_appconfig::stack::cloudformation(&cfg, &state, opts).map_err(bad)?;
    let name = ferry_appconfig::stack::stack_name(&cfg, &state, &install.name).map_err(bad)?;
    Ok((template, name))
}
