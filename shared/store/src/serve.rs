//! Serving what installs send (`ferry_protocol::rpc`): one subscription per subject the message
//! is served on, in the service's queue group; each request answered in a task of the service's
//! [`Tasks`]; the [`Caller`] read from the subject once, here, before any handler runs — a
//! message whose subject names no install is refused and counted, never handled.
//!
//! Handlers get a typed caller and a typed request and return an [`Answer`]: the reply (if
//! any) and work to do once it is sent (off the caller's critical path).

use std::future::Future;
use std::pin::Pin;

use ferry_protocol::rpc::{Caller, FromInstall, Request};
use ferry_protocol::{decode, encode};
use futures_util::StreamExt;
use tracing::{debug, warn};

use crate::{StoreError, Tasks};

type After = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What a handler answers a request: its reply, and what to do once the reply is sent.
pub struct Answer<M> {
    reply: Option<M>,
    after: Option<After>,
}

impl<M> Answer<M> {
    pub fn reply(reply: M) -> Answer<M> {
        Answer {
            reply: Some(reply),
            after: None,
        }
    }

    /// No reply: the caller asks again (a store error, say).
    pub fn none() -> Answer<M> {
        Answer {
            reply: None,
            after: None,
        }
    }

    /// `work` runs once the reply is sent.
    pub fn then(mut self, work: impl Future<Output = ()> + Send + 'static) -> Answer<M> {
        self.after = Some(Box::pin(work));
        self
    }
}

/// Subscribes to `M`'s subjects: in `queue` (one member of the group gets each message), or,
/// without one, every subscriber gets each.
async fn subscribe<M: FromInstall>(
    client: &async_nats::Client,
    queue: Option<&str>,
) -> Result<futures_util::stream::SelectAll<async_nats::Subscriber>, StoreError> {
    let mut all = futures_util::stream::SelectAll::new();
    for subject in M::SERVED_ON {
        let sub = match queue {
            Some(q) => client.queue_subscribe(*subject, q.to_string()).await,
            None => client.subscribe(*subject).await,
        }
        .map_err(|e| StoreError::Nats(Box::new(e)))?;
        all.push(sub);
    }
    Ok(all)
}

/// The caller and the message of `msg`, or `None` (counted and logged) when its subject names
/// no install or it cannot be read; `refused` is then what the caller is answered, if anything.
fn read<M: FromInstall>(msg: &async_nats::Message) -> Result<(Caller, M), Option<String>> {
    let rejected = || {
        ferry_telemetry::metrics()
            .messages_rejected
            .get_or_create(&ferry_telemetry::consumer_label(M::LABEL))
            .inc();
    };
    let Some(caller) = Caller::of(&msg.subject) else {
        rejected();
        warn!(subject = %msg.subject, what = M::LABEL, "a message on a subject naming no install");
        return Err(None);
    };
    match decode::<M>(&msg.payload) {
        Ok(m) => Ok((caller, m)),
        Err(e) => {
            rejected();
            warn!(org = %caller.org, install = %caller.install, what = M::LABEL, error = %e, "an undecodable message");
            Err(Some(e.to_string()))
        }
    }
}

/// Serves requests `R` with `handler`, each in a task of `tasks`, until the subscriptions end.
pub async fn serve<R, F, Fut>(
    client: async_nats::Client,
    queue: &str,
    tasks: &Tasks,
    handler: F,
) -> Result<(), StoreError>
where
    R: Request,
    F: Fn(Caller, R) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Answer<R::Reply>> + Send + 'static,
{
    let mut requests = subscribe::<R>(&client, Some(queue)).await?;
    while let Some(msg) = requests.next().await {
        let (client, handler) = (client.clone(), handler.clone());
        tasks.spawn(async move {
            let answer = match read::<R>(&msg) {
                Ok((caller, request)) => handler(caller, request).await,
                Err(why) => Answer {
                    reply: why.and_then(R::refused),
                    after: None,
                },
            };
            if let (Some(to), Some(reply)) = (msg.reply.clone(), answer.reply)
                && let Err(e) = client.publish(to, encode(&reply).into()).await
            {
                debug!(what = R::LABEL, error = %e, "could not answer a request");
            }
            if let Some(after) = answer.after {
                after.await;
            }
        });
    }
    Err(StoreError::SubscriptionEnded(R::LABEL))
}

/// Takes notices `N` (nothing answered) with `handler`, one at a time, until the subscriptions
/// end.
pub async fn take<N, F, Fut>(
    client: async_nats::Client,
    queue: &str,
    handler: F,
) -> Result<(), StoreError>
where
    N: FromInstall,
    F: Fn(Caller, N) -> Fut,
    Fut: Future<Output = ()>,
{
    notices(client, Some(queue), handler).await
}

/// Hears every notice `N` (outside any queue group: each subscriber gets each one) with
/// `handler`, one at a time, until the subscriptions end. For what every replica must know, like
/// which runners an install has (`ferry_model::pregrant_to`).
pub async fn hear<N, F, Fut>(client: async_nats::Client, handler: F) -> Result<(), StoreError>
where
    N: FromInstall,
    F: Fn(Caller, N) -> Fut,
    Fut: Future<Output = ()>,
{
    notices(client, None, handler).await
}

async fn notices<N, F, Fut>(
    client: async_nats::Client,
    queue: Option<&str>,
    handler: F,
) -> Result<(), StoreError>
where
    N: FromInstall,
    F: Fn(Caller, N) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut notices = subscribe::<N>(&client, queue).await?;
    while let Some(msg) = notices.next().await {
        if let Ok((caller, notice)) = read::<N>(&msg) {
            handler(caller, notice).await;
        }
    }
    Err(StoreError::SubscriptionEnded(N::LABEL))
}
