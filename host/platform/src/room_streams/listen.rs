//! The job `room-listener`: on PostgreSQL, the notifications of posts made by any host
//! (`LISTEN atrium_rooms`, each naming a room and a sequence, or a room whose members
//! changed), handed to the hub, which reads the messages from the timeline. PostgreSQL delivers a notification only on commit, so the
//! message is there to read.
//!
//! A notification carries no message: the timeline is the truth. When the listening
//! connection is lost, what was notified meanwhile is lost with it, so the job listens again
//! on a new connection and then reads, for every watched room, what was stored since the
//! hub's last push ([`RoomHub::catch_up_all`]). Listening before reading means nothing falls
//! between the two. On SQLite there is one host and the job ends at once.

use std::sync::Arc;
use std::time::Duration;

use atrium_jobs::{Job, JobError, Stop};
use atrium_store::RoomNotification;

use super::RoomHub;

/// How long the job waits before listening again after the database refused it.
const RETRY: Duration = Duration::from_secs(1);

/// The room listener of a host.
pub struct RoomListener(pub Arc<RoomHub>);

#[async_trait::async_trait]
impl Job for RoomListener {
    fn name(&self) -> &'static str {
        "room-listener"
    }

    async fn run(self: Box<Self>, mut stop: Stop) -> Result<(), JobError> {
        let hub = self.0;
        loop {
            let listening = tokio::select! {
                () = stop.requested() => return Ok(()),
                listening = hub.store().room_notifications() => listening,
            };
            let mut notifications = match listening {
                Ok(Some(notifications)) => notifications,
                Ok(None) => return Ok(()),
                Err(e) => {
                    stop.report("listening to room notifications failed", &e);
                    tokio::select! {
                        () = stop.requested() => return Ok(()),
                        () = tokio::time::sleep(RETRY) => continue,
                    }
                }
            };
            hub.catch_up_all().await;
            loop {
                let next = tokio::select! {
                    () = stop.requested() => return Ok(()),
                    next = notifications.next() => next,
                };
                match next {
                    Ok(RoomNotification::Posted { room_id, seq }) => {
                        let hub = hub.clone();
                        tokio::spawn(async move { hub.notified(&room_id, seq).await });
                    }
                    Ok(RoomNotification::MembersChanged { room_id }) => {
                        hub.members_changed(&room_id);
                    }
                    Ok(RoomNotification::Lost) => {
                        tracing::warn!("the room listener's connection was lost; listening again");
                        break;
                    }
                    Err(e) => {
                        stop.report("the room listener's connection failed", &e);
                        break;
                    }
                }
            }
        }
    }
}
