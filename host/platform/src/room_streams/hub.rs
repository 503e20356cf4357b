//! The live side of rooms: which streams of this host watch which room, and how a stored
//! message reaches them.
//!
//! The stored timeline is the truth; the hub only says "there is more". Each watched room has
//! a [`Channel`] holding the sequence of the last message it pushed (`delivered`) and its
//! subscribers. A message reaches the channel in one of three ways, all ending in
//! [`RoomHub::advance`]: the host that stored it hands it over ([`RoomHub::published`]), a
//! PostgreSQL notification names its room and sequence ([`RoomHub::notified`], from
//! [`super::RoomListener`]), or a catch-up after the listening connection was lost
//! ([`RoomHub::catch_up_all`]). `advance` pushes the next message directly when it is the one
//! after `delivered` and otherwise reads everything after `delivered` from the timeline, so a
//! lost or reordered notification costs a read, never a message.
//!
//! Each subscriber has a bounded buffer ([`RoomsConfig::buffer`] messages). A push never
//! waits: when a subscriber's buffer is full the message is not queued for it and the
//! subscriber is marked lagging; when its client reads again, its [`Subscription`] reads what
//! it missed from the timeline before going on. A slow client therefore never slows a post or
//! another subscriber, costs at most its buffer in memory, and loses nothing.
//!
//! Who may read a room is checked when a stream opens, and again whenever a member leaves:
//! the host that removed the member tells its channel ([`RoomHub::members_changed`]), the
//! others hear it by notification (or, after a lost connection, from the catch-up), and every
//! subscription of the room answers [`Next::MembersChanged`] before its next message, so the
//! stream can check its reader again and end before a removed member reads another word.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use atrium_store::{RoomMessage, Store, TenantKey};
use tokio::sync::{mpsc, watch};

use super::RoomsConfig;

/// The most messages one timeline read brings.
const READ_BATCH: i64 = 500;

/// A message on its way to the streams: encoded once, however many streams send it.
#[derive(Debug)]
pub struct Delivery {
    /// The stored message.
    pub message: RoomMessage,
    encoded: OnceLock<String>,
}

impl Delivery {
    fn new(message: RoomMessage) -> Arc<Delivery> {
        Arc::new(Delivery {
            message,
            encoded: OnceLock::new(),
        })
    }

    /// The message as `encode` writes it, computed by the first stream that asks.
    pub fn encoded(&self, encode: impl FnOnce(&RoomMessage) -> String) -> &str {
        self.encoded.get_or_init(|| encode(&self.message))
    }
}

/// One subscriber of a channel.
struct Subscriber {
    id: u64,
    tx: mpsc::Sender<Arc<Delivery>>,
    lagging: Arc<AtomicBool>,
}

/// A room watched by streams of this host.
struct Channel {
    tenant: TenantKey,
    /// The last sequence pushed to the subscribers (none until read from the timeline). Held
    /// while pushing, so pushes of one room happen one at a time and in order.
    delivered: tokio::sync::Mutex<Option<i64>>,
    subscribers: Mutex<Vec<Subscriber>>,
    /// Counts the removals of members, so that the subscriptions check their reader again.
    members: watch::Sender<u64>,
}

impl Channel {
    fn members_changed(&self) {
        self.members.send_modify(|n| *n = n.wrapping_add(1));
    }
}

impl Channel {
    fn subscribers(&self) -> std::sync::MutexGuard<'_, Vec<Subscriber>> {
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the hub has done, for tests and the operator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HubStats {
    /// Rooms with at least one subscriber.
    pub rooms: usize,
    /// Open subscriptions.
    pub subscribers: usize,
    /// Messages not queued because a subscriber's buffer was full (each read back later).
    pub overflowed: u64,
    /// Timeline reads made because a message did not follow the last one pushed.
    pub catch_ups: u64,
}

/// The streams of this host, by room.
pub struct RoomHub {
    store: Store,
    config: RoomsConfig,
    channels: Mutex<HashMap<String, Arc<Channel>>>,
    next_id: AtomicU64,
    closed: AtomicBool,
    overflowed: AtomicU64,
    catch_ups: AtomicU64,
}

impl std::fmt::Debug for RoomHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoomHub")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl RoomHub {
    /// The hub of a host over `store`.
    #[must_use]
    pub fn new(store: Store, config: RoomsConfig) -> Arc<RoomHub> {
        Arc::new(RoomHub {
            store,
            config,
            channels: Mutex::default(),
            next_id: AtomicU64::new(1),
            closed: AtomicBool::new(false),
            overflowed: AtomicU64::new(0),
            catch_ups: AtomicU64::new(0),
        })
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &RoomsConfig {
        &self.config
    }

    /// The store the timeline is read from.
    #[must_use]
    pub fn store(&self) -> &Store {
        &self.store
    }

    fn channels(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Channel>>> {
        self.channels.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the hub holds and has done.
    pub fn stats(&self) -> HubStats {
        let channels = self.channels();
        HubStats {
            rooms: channels.len(),
            subscribers: channels.values().map(|c| c.subscribers().len()).sum(),
            overflowed: self.overflowed.load(Ordering::Relaxed),
            catch_ups: self.catch_ups.load(Ordering::Relaxed),
        }
    }

    /// Ends every subscription (the host is stopping: a stream must not hold the graceful
    /// shutdown open) and refuses new ones.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let channels: Vec<Arc<Channel>> = self.channels().drain().map(|(_, c)| c).collect();
        for channel in channels {
            channel.subscribers().clear();
        }
    }

    /// Subscribes to room `room` of `tenant` (the caller checked that the room is the
    /// tenant's and that it may read it): from the message after `after` (replayed from the
    /// timeline), or from the next message when none.
    pub async fn subscribe(
        self: &Arc<Self>,
        tenant: &TenantKey,
        room: &str,
        after: Option<i64>,
    ) -> Result<Subscription, atrium_store::StoreError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(self.config.buffer.max(1));
        let lagging = Arc::new(AtomicBool::new(false));
        let mut start = 0;
        let mut members = None;
        while !self.closed.load(Ordering::SeqCst) {
            let channel = self
                .channels()
                .entry(room.to_owned())
                .or_insert_with(|| {
                    Arc::new(Channel {
                        tenant: tenant.clone(),
                        delivered: tokio::sync::Mutex::new(None),
                        subscribers: Mutex::default(),
                        members: watch::Sender::new(0),
                    })
                })
                .clone();
            members = Some(channel.members.subscribe());
            // The subscriber joins while no push runs, at the position the pushes have
            // reached: every later message is pushed to it.
            {
                let mut delivered = channel.delivered.lock().await;
                start = match *delivered {
                    Some(seq) => seq,
                    None => {
                        let last = self.last_seq(tenant, room).await?;
                        *delivered = Some(last);
                        last
                    }
                };
                channel.subscribers().push(Subscriber {
                    id,
                    tx: tx.clone(),
                    lagging: lagging.clone(),
                });
            }
            // The last subscriber may have left meanwhile and taken the channel out of the
            // map: then this one joins the room's new channel instead.
            if self
                .channels()
                .get(room)
                .is_some_and(|c| Arc::ptr_eq(c, &channel))
            {
                break;
            }
            channel.subscribers().retain(|s| s.id != id);
        }
        // The subscription holds no sender of its own: when the hub drops its one (closing,
        // or never joined because the host is stopping), the subscription ends.
        drop(tx);
        // A hub that is closed gives a subscription that ends at once.
        let members = members.unwrap_or_else(|| watch::Sender::new(0).subscribe());
        Ok(Subscription {
            hub: self.clone(),
            tenant: tenant.clone(),
            room: room.to_owned(),
            id,
            rx,
            lagging,
            last: after.unwrap_or(start),
            pending: VecDeque::new(),
            behind: after.is_some(),
            members,
        })
    }

    async fn last_seq(
        &self,
        tenant: &TenantKey,
        room: &str,
    ) -> Result<i64, atrium_store::StoreError> {
        Ok(self
            .store
            .room(tenant, room)
            .await?
            .map_or(0, |r| r.last_seq))
    }

    /// Removes subscriber `id` of `room`, and the room's channel with the last one.
    fn unsubscribe(&self, room: &str, id: u64) {
        let mut channels = self.channels();
        if let Some(channel) = channels.get(room) {
            let mut subscribers = channel.subscribers();
            subscribers.retain(|s| s.id != id);
            let empty = subscribers.is_empty();
            drop(subscribers);
            if empty {
                channels.remove(room);
            }
        }
    }

    /// This host stored `message`: pushed to the room's subscribers here (the others hear of
    /// it by notification).
    pub async fn published(&self, message: RoomMessage) {
        let channel = self.channels().get(&message.room_id).cloned();
        if let Some(channel) = channel {
            let seq = message.seq;
            self.advance(&channel, &message.room_id.clone(), seq, Some(message))
                .await;
        }
    }

    /// Message `seq` was stored in room `room` (by any host).
    pub async fn notified(&self, room: &str, seq: i64) {
        let channel = self.channels().get(room).cloned();
        if let Some(channel) = channel {
            self.advance(&channel, room, seq, None).await;
        }
    }

    /// A member left room `room` (on any host): its subscriptions check their reader again.
    pub fn members_changed(&self, room: &str) {
        if let Some(channel) = self.channels().get(room) {
            channel.members_changed();
        }
    }

    /// Reads what every watched room stored since its last push, and has every subscription
    /// check its reader again (the notifications were interrupted: posts and removals of
    /// members may have been missed).
    pub async fn catch_up_all(&self) {
        let channels: Vec<(String, Arc<Channel>)> = self
            .channels()
            .iter()
            .map(|(room, c)| (room.clone(), c.clone()))
            .collect();
        for (room, channel) in channels {
            channel.members_changed();
            self.advance(&channel, &room, i64::MAX, None).await;
        }
    }

    /// Pushes the room's messages up to `seq` (all stored, for `i64::MAX`) that were not
    /// pushed yet: `message` itself when it is the next one, the timeline's otherwise.
    async fn advance(&self, channel: &Channel, room: &str, seq: i64, message: Option<RoomMessage>) {
        let mut delivered = channel.delivered.lock().await;
        let Some(mut last) = *delivered else {
            // Nobody joined yet; the first subscriber reads the position itself.
            return;
        };
        if seq <= last {
            return;
        }
        if let Some(message) = message.filter(|m| m.seq == last + 1) {
            last = message.seq;
            self.push(channel, Delivery::new(message));
            *delivered = Some(last);
            return;
        }
        if seq != i64::MAX {
            self.catch_ups.fetch_add(1, Ordering::Relaxed);
        }
        loop {
            let read = self
                .store
                .room_messages_after(&channel.tenant, room, last, READ_BATCH)
                .await;
            let messages = match read {
                Ok(messages) => messages,
                Err(e) => {
                    // The subscribers notice the gap at the next message and read it then.
                    tracing::warn!(error = %e, room, after = last, "reading a room's new messages failed");
                    break;
                }
            };
            let full = i64::try_from(messages.len()).unwrap_or(i64::MAX) == READ_BATCH;
            for message in messages {
                last = message.seq;
                self.push(channel, Delivery::new(message));
            }
            if !full || last >= seq {
                break;
            }
        }
        *delivered = Some(last);
    }

    /// Queues `delivery` for every subscriber of `channel` without waiting; a full buffer
    /// marks its subscriber lagging.
    fn push(&self, channel: &Channel, delivery: Arc<Delivery>) {
        for subscriber in channel.subscribers().iter() {
            if let Err(mpsc::error::TrySendError::Full(_)) =
                subscriber.tx.try_send(delivery.clone())
            {
                subscriber.lagging.store(true, Ordering::SeqCst);
                self.overflowed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// What a subscription hands out.
#[derive(Debug)]
pub enum Next {
    /// The next message.
    Message(Arc<Delivery>),
    /// A member left the room: the reader must be checked again before the next message.
    MembersChanged,
}

/// One stream's view of a room: the messages after `last`, in order, each once.
pub struct Subscription {
    hub: Arc<RoomHub>,
    tenant: TenantKey,
    room: String,
    id: u64,
    rx: mpsc::Receiver<Arc<Delivery>>,
    lagging: Arc<AtomicBool>,
    /// The last sequence this subscription handed out.
    last: i64,
    /// Messages read from the timeline, not handed out yet.
    pending: VecDeque<Arc<Delivery>>,
    /// Whether the timeline may hold more after `last` than the buffer will bring.
    behind: bool,
    /// The channel's count of removed members (ends with the channel: the hub closed).
    members: watch::Receiver<u64>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("room", &self.room)
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

impl Subscription {
    /// The sequence of the last message handed out (or the starting position).
    #[must_use]
    pub fn last(&self) -> i64 {
        self.last
    }

    /// The next message, or first word that a member left; none when the subscription ended
    /// (the host is stopping, or the timeline could not be read: the client reconnects with
    /// the last id it saw).
    pub async fn next(&mut self) -> Option<Next> {
        loop {
            if self.members.has_changed().unwrap_or(false) {
                self.members.mark_unchanged();
                return Some(Next::MembersChanged);
            }
            while let Some(delivery) = self.pending.pop_front() {
                if delivery.message.seq > self.last {
                    self.last = delivery.message.seq;
                    return Some(Next::Message(delivery));
                }
            }
            if self.lagging.swap(false, Ordering::SeqCst) {
                self.behind = true;
            }
            if self.behind {
                self.read_timeline().await?;
                continue;
            }
            let watching = self.members.has_changed().is_ok();
            let delivery = tokio::select! {
                biased;
                changed = self.members.changed(), if watching => {
                    if changed.is_ok() {
                        return Some(Next::MembersChanged);
                    }
                    continue;
                }
                delivery = self.rx.recv() => delivery?,
            };
            let seq = delivery.message.seq;
            if seq <= self.last {
                continue;
            }
            if seq == self.last + 1 {
                self.last = seq;
                return Some(Next::Message(delivery));
            }
            // A gap: what lies between is in the timeline.
            self.behind = true;
        }
    }

    /// Reads the next messages after `last` from the timeline into `pending`.
    async fn read_timeline(&mut self) -> Option<()> {
        match self
            .hub
            .store
            .room_messages_after(&self.tenant, &self.room, self.last, READ_BATCH)
            .await
        {
            Ok(messages) => {
                self.behind = i64::try_from(messages.len()).unwrap_or(i64::MAX) == READ_BATCH;
                self.pending.extend(messages.into_iter().map(Delivery::new));
                Some(())
            }
            Err(e) => {
                tracing::warn!(error = %e, room = %self.room, after = self.last, "replaying a room's timeline failed; the stream ends");
                None
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.hub.unsubscribe(&self.room, self.id);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use atrium_store::{MemberKind, NewRoomMember, NewRoomMessage, Posted, Store, TenantKey};
    use serde_json::Map;

    use super::*;

    async fn post(store: &Store, tenant: &TenantKey, room: &str, n: i64) -> RoomMessage {
        let metadata = Map::new();
        let message = NewRoomMessage {
            sender_type: "system",
            sender_ref: "system",
            sender_display: "System",
            content: "hi",
            mentions: &[],
            metadata: &metadata,
        };
        match store
            .post_room_message(
                tenant,
                room,
                &message,
                jiff::Timestamp::from_microsecond(n).unwrap(),
                false,
            )
            .await
            .unwrap()
        {
            Posted::Stored { message, .. } => *message,
            other => panic!("{other:?}"),
        }
    }

    async fn next(s: &mut Subscription) -> i64 {
        match tokio::time::timeout(Duration::from_secs(5), s.next())
            .await
            .expect("a message within 5 s")
            .expect("the subscription goes on")
        {
            Next::Message(delivery) => delivery.message.seq,
            Next::MembersChanged => -1,
        }
    }

    #[tokio::test]
    async fn a_subscriber_gets_each_message_once_in_order_whatever_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(dir.path()).await.unwrap();
        let tenant = TenantKey::new("org", "shop");
        let member = NewRoomMember {
            kind: MemberKind::User {
                user_id: "00000000-0000-4000-8000-0000000000a1".into(),
            },
            display_name: "Ann".into(),
        };
        let room = store
            .create_room(&tenant, "r", "user:x", &[member])
            .await
            .unwrap()
            .id;
        let hub = RoomHub::new(
            store.clone(),
            RoomsConfig {
                buffer: 2,
                ..RoomsConfig::default()
            },
        );
        let mut live = hub.subscribe(&tenant, &room, None).await.unwrap();
        assert_eq!(hub.stats().subscribers, 1);
        // Handed over by the posting host.
        let m1 = post(&store, &tenant, &room, 1).await;
        hub.published(m1).await;
        assert_eq!(next(&mut live).await, 1);
        // Notified out of order: the gap is read from the timeline.
        let _m2 = post(&store, &tenant, &room, 2).await;
        let _m3 = post(&store, &tenant, &room, 3).await;
        hub.notified(&room, 3).await;
        hub.notified(&room, 2).await;
        assert_eq!((next(&mut live).await, next(&mut live).await), (2, 3));
        // Five messages into a buffer of two: the rest is read back.
        for n in 4..=8 {
            let m = post(&store, &tenant, &room, n).await;
            hub.published(m).await;
        }
        assert!(hub.stats().overflowed > 0);
        let seqs: Vec<i64> = [0; 5].iter().map(|_| 0).collect();
        let mut got = Vec::new();
        for _ in seqs {
            got.push(next(&mut live).await);
        }
        assert_eq!(got, [4, 5, 6, 7, 8]);
        // A replay from seq 6, then live.
        let mut replay = hub.subscribe(&tenant, &room, Some(6)).await.unwrap();
        assert_eq!((next(&mut replay).await, next(&mut replay).await), (7, 8));
        // A member left: every subscription says so once, before its next message, whether
        // it was waiting or behind; a catch-up says so too.
        hub.members_changed(&room);
        let m9 = post(&store, &tenant, &room, 9).await;
        hub.published(m9).await;
        assert_eq!((next(&mut live).await, next(&mut live).await), (-1, 9));
        assert_eq!((next(&mut replay).await, next(&mut replay).await), (-1, 9));
        let waiting = tokio::spawn(async move {
            let seq = next(&mut live).await;
            (seq, live)
        });
        tokio::task::yield_now().await;
        hub.catch_up_all().await;
        let (seq, live) = waiting.await.unwrap();
        assert_eq!((seq, next(&mut replay).await), (-1, -1));
        hub.members_changed("another-room");
        drop((live, replay));
        assert_eq!(hub.stats().rooms, 0);
        // Closing ends a subscription.
        let mut last = hub.subscribe(&tenant, &room, None).await.unwrap();
        hub.close();
        assert!(last.next().await.is_none());
    }
}
