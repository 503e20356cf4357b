//! Rooms in the store: posts numbered in order with strictly increasing times even when the
//! clock stands still or goes back, the sender's membership checked in the posting
//! transaction (a refused post takes no number), the member limit, and the timeline read
//! back in pages without a message skipped or repeated.

use atrium_store::{
    MemberAdded, MemberKind, NewRoomMember, NewRoomMessage, Posted, TenantKey, TenantSettings,
};
use serde_json::{Map, Value};

use super::{stores, unique};

fn message<'a>(sender: &'a str, metadata: &'a Map<String, Value>) -> NewRoomMessage<'a> {
    NewRoomMessage {
        sender_type: "user",
        sender_ref: sender,
        sender_display: "Ann",
        content: "hi",
        mentions: &[],
        metadata,
    }
}

fn user(id: &str) -> NewRoomMember {
    NewRoomMember {
        kind: MemberKind::User {
            user_id: id.to_owned(),
        },
        display_name: "Ann".into(),
    }
}

/// The time `micros` µs after the epoch.
fn at(micros: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_microsecond(micros).unwrap()
}

#[tokio::test]
async fn posts_in_one_instant_keep_their_order_and_pages_stay_exact() {
    const ANN: &str = "00000000-0000-4000-8000-0000000000a1";
    for (store, _dir) in stores().await {
        let tenant = TenantKey::new(unique("org"), "shop");
        let elsewhere = TenantKey::new(unique("org"), "shop");
        let room = store
            .create_room(&tenant, "Ops", &format!("user:{ANN}"), &[user(ANN)])
            .await
            .unwrap();
        assert_eq!((room.member_count, room.last_seq), (1, 0));
        let metadata = Map::new();
        let ann_key = format!("user:{ANN}");
        let ann = ann_key.as_str();
        // 120 posts at the same instant, then 5 with a clock that went back.
        let mut times = Vec::new();
        for (i, now) in (0..125).map(|i| (i, if i < 120 { 1_000_000 } else { 500 })) {
            match store
                .post_room_message(&tenant, &room.id, &message(ann, &metadata), at(now), true)
                .await
                .unwrap()
            {
                Posted::Stored { message, members } => {
                    assert_eq!(message.seq, i + 1);
                    assert_eq!(members, [ann.to_owned()]);
                    times.push(message.created_at);
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
        assert_eq!(times[0], at(1_000_000));
        // A non-member's post and a post to another tenant's room take no number.
        let stranger = message("user:00000000-0000-4000-8000-0000000000b2", &metadata);
        assert_eq!(
            store
                .post_room_message(&tenant, &room.id, &stranger, at(1), true)
                .await
                .unwrap(),
            Posted::NotMember
        );
        assert_eq!(
            store
                .post_room_message(&elsewhere, &room.id, &message(ann, &metadata), at(1), true)
                .await
                .unwrap(),
            Posted::UnknownRoom
        );
        assert_eq!(
            store
                .room(&tenant, &room.id)
                .await
                .unwrap()
                .unwrap()
                .last_seq,
            125
        );
        assert!(store.room(&elsewhere, &room.id).await.unwrap().is_none());
        // Pages of 50 by `before`, newest first: every message once.
        let mut seen = Vec::new();
        let mut before = None;
        loop {
            let page = store
                .room_messages_before(&tenant, &room.id, before, 50)
                .await
                .unwrap();
            if page.is_empty() {
                break;
            }
            before = page.last().map(|m| m.created_at);
            seen.extend(page.iter().map(|m| m.seq));
        }
        assert_eq!(seen, (1..=125).rev().collect::<Vec<_>>());
        let after = store
            .room_messages_after(&tenant, &room.id, 120, 500)
            .await
            .unwrap();
        assert_eq!(
            after.iter().map(|m| m.seq).collect::<Vec<_>>(),
            [121, 122, 123, 124, 125]
        );
        // The member limit; adding twice; removing.
        let bea = "00000000-0000-4000-8000-0000000000b3";
        assert_eq!(
            store
                .add_room_member(&tenant, &room.id, &user(bea), ann, 1)
                .await
                .unwrap(),
            MemberAdded::Full { limit: 1 }
        );
        assert_eq!(
            store
                .add_room_member(&tenant, &room.id, &user(bea), ann, 2)
                .await
                .unwrap(),
            MemberAdded::Added(true)
        );
        assert_eq!(
            store
                .add_room_member(&tenant, &room.id, &user(bea), ann, 2)
                .await
                .unwrap(),
            MemberAdded::Added(false)
        );
        assert_eq!(
            store
                .add_room_member(&elsewhere, &room.id, &user(bea), ann, 2)
                .await
                .unwrap(),
            MemberAdded::UnknownRoom
        );
        let key = format!("user:{bea}");
        assert_eq!(
            store
                .remove_room_member(&tenant, &room.id, &key)
                .await
                .unwrap(),
            Some(true)
        );
        assert_eq!(
            store
                .remove_room_member(&tenant, &room.id, &key)
                .await
                .unwrap(),
            Some(false)
        );
        assert_eq!(
            store
                .remove_room_member(&elsewhere, &room.id, &key)
                .await
                .unwrap(),
            None
        );
        // The lists: every room of the tenant, or a member's.
        let all = store.rooms_page(&tenant, None, None, 10).await.unwrap();
        assert_eq!(all.len(), 1);
        assert!(
            store
                .rooms_page(&tenant, Some(&key), None, 10)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            store
                .rooms_page(&elsewhere, None, None, 10)
                .await
                .unwrap()
                .is_empty()
        );
        // The tenant's settings: the member limit and the time zone, per tenant.
        assert_eq!(
            store.tenant_settings(&tenant).await.unwrap(),
            TenantSettings::default()
        );
        let set = TenantSettings {
            room_member_limit: Some(7),
            time_zone: Some("Europe/Berlin".into()),
        };
        // A change of the time zone is said (the heartbeats were rescheduled with it).
        assert!(store.set_tenant_settings(&tenant, &set).await.unwrap());
        assert_eq!(store.tenant_settings(&tenant).await.unwrap(), set);
        let same_zone = TenantSettings {
            room_member_limit: Some(8),
            ..set.clone()
        };
        assert!(
            !store
                .set_tenant_settings(&tenant, &same_zone)
                .await
                .unwrap()
        );
        assert_eq!(store.tenant_settings(&tenant).await.unwrap(), same_zone);
        assert_eq!(
            store.tenant_settings(&elsewhere).await.unwrap(),
            TenantSettings::default()
        );
        assert!(
            store
                .set_tenant_settings(&tenant, &TenantSettings::default())
                .await
                .unwrap()
        );
        assert_eq!(
            store.tenant_settings(&tenant).await.unwrap(),
            TenantSettings::default()
        );
    }
}
