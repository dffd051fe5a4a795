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
    let Some(text) = cfg.metadata.readme_text.clone() else {
        return Ok(Json(Readme {
            app_config_id: install.app_config_id,
            ..Readme::default()
        }));
    };
    let state = ferry_appconfig::jobs::install_state(&cfg, &install);
    // On the blocking pool: a readme may make an RSA key (sprig's `genCA`), seconds of CPU.
    let (markdown, warning) = tokio::task::spawn_blocking(move || {
        match ferry_appconfig::template::render_readme(&text, &state) {
            Ok(rendered) => (rendered, None),
            Err(e) => (text, Some(e.to_string())),
        }
    })
    .await
    .map_err(|e| ApiError::Unavailable(format!("rendering the readme: {e}")))?;
    Ok(Json(Readme {
        app_config_id: install.app_config_id,
        markdown,
        warning,
    }))
}
