//! `ferry installs stack`: the install stack's CloudFormation template, as the API renders it,
//! printed or written to a file, with how the customer launches it; or published to the
//! control plane's bucket (`--upload`), with the console link that launches it.

use std::path::Path;

use anyhow::{Context, Result};
use ferry_client::Client as Api;
use ferry_model::api::{PublishStack, StackQuery};
use ferry_model::ops;

pub async fn write(api: &Api, name: &str, out: Option<&Path>, query: &StackQuery) -> Result<i32> {
    let template = api.call::<ops::InstallStackOp>(&[name], query, &()).await?;
    let text = serde_json::to_string_pretty(&template)?;
    let Some(file) = out else {
        println!("{text}");
        return Ok(0);
    };
    std::fs::write(file, format!("{text}\n"))
        .with_context(|| format!("writing {}", file.display()))?;
    eprintln!(
        "install stack of {name} written to {file}. The customer launches it in their account, \
         giving the install's one-time runner token (`ferry installs runner-token {name}`):\n  \
         aws cloudformation create-stack --stack-name ferry-{name} --template-body file://{file} \
         --capabilities CAPABILITY_NAMED_IAM --parameters ParameterKey=BootstrapToken,ParameterValue=TOKEN",
        file = file.display()
    );
    Ok(0)
}

/// `--upload`: the template published; its URL and the quick-create link printed.
pub async fn publish(api: &Api, name: &str, body: &PublishStack, json: bool) -> Result<i32> {
    let published = api
        .call::<ops::PublishInstallStack>(&[name], &(), body)
        .await?;
    if json {
        crate::commands::print_json(&published)?;
        return Ok(0);
    }
    println!("{}", published.quick_link_url);
    eprintln!(
        "install stack of {name} published: {} ({}). The link above opens it in the AWS \
         console, ready to launch: the customer gives the install's one-time runner token \
         (`ferry installs runner-token {name}`).",
        published.template_url, published.checksum
    );
    Ok(0)
}
