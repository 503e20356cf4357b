//! A room bot. When a room message mentions one of its agents, the mentioned agent answers in
//! the same room, addressing the sender:
//!
//! - `@room-bot:concierge summarize ...` — the concierge delegates to the scribe (its team) and
//!   posts the scribe's summary;
//! - `@room-bot:concierge remind me ...` — the concierge records a commitment and confirms;
//! - anything else — the concierge acknowledges the message.
//!
//! Messages from the bot's own agents are ignored, so two agents never answer each other
//! forever.

use atrium_sdk::{App, Ctx, Error, ManifestInfo, RegistrationError, RoomMessage, SenderType};

static MANIFEST: ManifestInfo = atrium_sdk::manifest!("atrium.app.yaml");

fn on_message(ctx: &Ctx<'_>, agent: &str, message: RoomMessage) -> Result<(), Error> {
    if message.sender_type == SenderType::Agent
        && message
            .sender_ref
            .starts_with(&format!("{}:", ctx.app_id()))
    {
        return Ok(());
    }
    let sender = format!("@{}", message.sender_ref);
    let text = strip_mentions(&message.content);
    let lower = text.to_lowercase();
    let reply = if let Some(topic) = lower.strip_prefix("summarize") {
        let summary =
            ctx.team
                .delegate("scribe", &format!("Summarize: {}", topic.trim()), agent)?;
        format!("{sender} here is the summary: {summary}")
    } else if let Some(what) = lower.strip_prefix("remind me") {
        // "remind me to send the deck": the reply says "to" once.
        let what = what.trim();
        let what = what.strip_prefix("to ").unwrap_or(what).trim_start();
        let id = ctx.commitments.add(
            &format!("Remind {}", message.sender_display),
            what,
            agent,
            None,
        )?;
        format!("{sender} noted ({id}): I will remind you to {what}")
    } else {
        format!("{sender} thanks, {} read: {text}", agent)
    };
    ctx.rooms.post(&message.room_id, &reply, agent)?;
    ctx.logger.info(&format!(
        "answered {} in room {}",
        message.sender_ref, message.room_id
    ));
    Ok(())
}

/// The text without `@app:agent` / `@user:id` mentions.
fn strip_mentions(content: &str) -> String {
    content
        .split_whitespace()
        .filter(|word| {
            !(word
                .trim_matches(|c: char| !c.is_alphanumeric() && c != '@' && c != ':')
                .starts_with('@')
                && word.contains(':'))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Builds the app.
pub fn app() -> Result<App, RegistrationError> {
    let mut app = App::new(&MANIFEST);
    app.on_message(on_message)?;
    Ok(app)
}

atrium_sdk::export!(app, without_http);

#[cfg(test)]
mod tests {
    use super::*;
    use atrium_sdk::testing::{TestClient, room_message};

    /// The install as the tenant grants it: posting needs `rooms.write`.
    fn client() -> TestClient {
        TestClient::new(app()).unwrap().grant(&["rooms.write"])
    }

    #[test]
    fn a_mention_gets_an_answer_in_the_same_room() {
        let client = client();
        client
            .room_message(
                "concierge",
                room_message("room-1", "**@room-bot:concierge** is the build green?"),
            )
            .unwrap();
        let posts = client.rooms.posts();
        assert_eq!(posts.len(), 1);
        assert_eq!(posts[0].room_id, "room-1");
        assert_eq!(posts[0].from_agent, "concierge");
        assert_eq!(
            posts[0].content,
            "@user:00000000-0000-4000-8000-0000000000aa thanks, concierge read: is the build green?"
        );
    }

    #[test]
    fn summaries_are_delegated_to_the_team() {
        let client = client();
        client
            .room_message(
                "concierge",
                room_message("room-1", "@room-bot:concierge summarize the release plan"),
            )
            .unwrap();
        assert_eq!(client.agent_calls(), vec!["delegate scribe".to_owned()]);
        assert!(
            client.rooms.posts()[0]
                .content
                .contains("[room-bot:scribe] Summarize: the release plan")
        );
    }

    #[test]
    fn reminders_become_commitments() {
        let client = client();
        client
            .room_message(
                "concierge",
                room_message("room-1", "@room-bot:concierge remind me to send the deck"),
            )
            .unwrap();
        let commitments = client.commitments();
        assert_eq!(commitments.len(), 1);
        assert_eq!(commitments[0].1, "send the deck");
        assert_eq!(commitments[0].2, "concierge");
        let posts = client.rooms.posts();
        assert!(
            posts[0]
                .content
                .ends_with("I will remind you to send the deck"),
            "{}",
            posts[0].content
        );
    }

    #[test]
    fn without_rooms_write_the_answer_is_refused() {
        let client = TestClient::new(app()).unwrap();
        let err = client
            .room_message(
                "concierge",
                room_message("room-1", "@room-bot:concierge hi"),
            )
            .unwrap_err();
        assert!(
            matches!(&err, atrium_sdk::HandlerError::Tool(e) if e.decision == "scope_denied"),
            "{err:?}"
        );
        assert!(client.rooms.posts().is_empty());
    }

    #[test]
    fn its_own_agents_are_not_answered() {
        let client = client();
        let mut message = room_message("room-1", "@room-bot:concierge hello");
        message.sender_type = SenderType::Agent;
        message.sender_ref = "room-bot:scribe".into();
        client.room_message("concierge", message).unwrap();
        assert!(client.rooms.posts().is_empty());
    }

    #[test]
    fn a_chain_too_deep_fails_the_delegation() {
        let client = client().chain_depth(8);
        let err = client
            .room_message(
                "concierge",
                room_message("r", "@room-bot:concierge summarize x"),
            )
            .unwrap_err();
        assert!(
            matches!(err, atrium_sdk::HandlerError::Agent(e) if e.reason.contains("chain depth"))
        );
    }
}
