//! `GET /v1/installs/{name}/readme`: the app's readme (metadata `readme`) rendered for one
//! install, from the config version it runs, as Nuon renders it: Go's html/template over the
//! install's state (`ferry_appconfig::template::render_readme`). A readme that does not render
//! (it reads an output the install does not have yet) comes back as written, with the reason.

use axum::Json;
use ferry_model::ops::Operation as _;
use ferry_model::{self as m, api::Readme};

use crate::ApiError;
use crate::auth::Ctx;
use crate::ids::Name;

#[utoipa::path(
    get,
    path = m::ops::InstallReadme::PATH,
    security(("token" = [m::ops::InstallReadme::ROLE_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name")),
    responses((status = 200, description = "The readme rendered for the install", body = Readme), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn install_readme(Ctx(s): Ctx, Name(name): Name) -> Result<Json<Readme>, ApiError> {
    let install = crate::installs::install_of(&s, &name).await?;
    let (_, _, cfg) = s.store.config(&s.org, &install.app_config_id).await?;
    let text = cfg.metadata.readme_text.clone();
    Ok(Json(rendered(&cfg, install, text).await?))
}

/// The file of an app package that its customers read in their portal (Nuon's name for it).
pub const PORTAL_README: &str = "CUSTOMER_PORTAL_README.md";

/// `GET /v1/installs/{name}/portal-readme`: the app's [`PORTAL_README`] rendered for one
/// install, as the readme is (empty when the app has none).
#[utoipa::path(
    get,
    path = m::ops::InstallPortalReadme::PATH,
    security(("token" = [m::ops::InstallPortalReadme::ROLE_NAME])),
    tag = "installs",
    params(("name" = String, Path, description = "The install's name")),
    responses((status = 200, description = "The customer portal's readme rendered for the install", body = Readme), crate::error::NotFound, crate::error::Refusals)
)]
pub async fn install_portal_readme(
    Ctx(s): Ctx,
    Name(name): Name,
) -> Result<Json<Readme>, ApiError> {
    let install = crate::installs::install_of(&s, &name).await?;
    let (_, pkg, cfg) = s.store.config(&s.org, &install.app_config_id).await?;
    let text = pkg
        .files
        .get(PORTAL_README)
        .map(|b| String::from_utf8_lossy(b).into_owned());
    Ok(Json(rendered(&cfg, install, text).await?))
}

/// `text` (a readme of the config `cfg`) rendered for `install`: as written, with the reason,
/// when it does not render.
async fn rendered(
    cfg: &ferry_appconfig::AppConfig,
    install: m::Install,
    text: Option<String>,
) -> Result<Readme, ApiError> {
    let Some(text) = text else {
        return Ok(Readme {
            app_config_id: install.app_config_id,
            ..Readme::default()
        });
    };
    let state = ferry_appconfig::jobs::install_state(cfg, &install);
    // On the blocking pool: a readme may make an RSA key (sprig's `genCA`), seconds of CPU.
    let (markdown, warning) = tokio::task::spawn_blocking(move || {
        match ferry_appconfig::template::render_readme(&text, &state) {
            Ok(rendered) => (rendered, None),
            Err(e) => (text, Some(e.to_string())),
        }
    })
    .await
    .map_err(|e| ApiError::Unavailable(format!("rendering the readme: {e}")))?;
    Ok(Readme {
        app_config_id: install.app_config_id,
        markdown,
        warning,
    })
}
