//! `ferry installs stack`: the install stack's CloudFormation template, as the API renders it,
//! printed or written to a file, with how the customer launches it.

use std::path::Path;

use anyhow::{Context, Result};
use ferry_client::Client as Api;
use ferry_model::api::StackQuery;
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
