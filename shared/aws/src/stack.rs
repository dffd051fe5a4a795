//! The install stack as its runner reads it in the customer's account: CloudFormation's
//! DescribeStacks on the runner host's own identity (its instance role may describe its own
//! stack; `ferry_appconfig::stack`).

/// Why the stack could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    #[error("CloudFormation DescribeStacks `{name}` in {region}: {source}")]
    Describe {
        name: String,
        region: String,
        #[source]
        source: Box<aws_sdk_cloudformation::Error>,
    },
    #[error("CloudFormation has no stack `{0}`")]
    Missing(String),
}

/// A stack's id, status and outputs, each output under its description when it has one (the
/// install stack describes each with its Nuon key) or else its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackInfo {
    pub id: String,
    pub status: String,
    pub outputs: Vec<(String, String)>,
    /// The stack's parameters as the customer last set them (during an update, the new ones).
    pub parameters: Vec<(String, String)>,
}

/// Reads stack `name` in `region`; `endpoint`: another CloudFormation endpoint than AWS's (in
/// Ferry's tests, moto).
pub async fn describe_stack(
    region: &str,
    endpoint: Option<&str>,
    name: &str,
) -> Result<StackInfo, StackError> {
    let shared = crate::sdk_config(region).await;
    let mut config = aws_sdk_cloudformation::config::Builder::from(&shared);
    if let Some(url) = endpoint {
        config = config.endpoint_url(url);
    }
    let client = aws_sdk_cloudformation::Client::from_conf(config.build());
    let answer = client
        .describe_stacks()
        .stack_name(name)
        .send()
        .await
        .map_err(|e| StackError::Describe {
            name: name.to_string(),
            region: region.to_string(),
            source: Box::new(e.into()),
        })?;
    let stack = answer
        .stacks()
        .first()
        .ok_or_else(|| StackError::Missing(name.to_string()))?;
    let outputs = stack
        .outputs()
        .iter()
        .filter_map(|o| {
            let key = o.description().or(o.output_key())?;
            Some((
                key.to_string(),
                o.output_value().unwrap_or_default().to_string(),
            ))
        })
        .collect();
    let parameters = stack
        .parameters()
        .iter()
        .filter_map(|p| {
            Some((
                p.parameter_key()?.to_string(),
                p.parameter_value().unwrap_or_default().to_string(),
            ))
        })
        .collect();
    Ok(StackInfo {
        parameters,
        id: stack.stack_id().unwrap_or(name).to_string(),
        status: stack
            .stack_status()
            .map(|s| s.as_str().to_string())
            .unwrap_or_default(),
        outputs,
    })
}
