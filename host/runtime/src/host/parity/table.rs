//! The table: each row an input, the decision or reason both sides must give, word for word.

use super::*;

#[tokio::test]
async fn the_runtime_and_the_sdk_double_apply_the_same_sandbox_rules() {
    use Expect::{Decision, Failed, Ok, Reason};
    let longest = "x".repeat(MAX_ROOM_MESSAGE_CHARS);
    let too_long = "x".repeat(MAX_ROOM_MESSAGE_CHARS + 1);
    let longest_title = "é".repeat(MAX_COMMITMENT_TITLE_CHARS);
    let too_long_title = "é".repeat(MAX_COMMITMENT_TITLE_CHARS + 1);
    let longest_content = "é".repeat(MAX_COMMITMENT_CONTENT_CHARS);
    let too_long_content = "é".repeat(MAX_COMMITMENT_CONTENT_CHARS + 1);
    let deepest = MAX_CHAIN_DEPTH;
    let rows: Vec<(Op, u32, bool, Expect)> = vec![
        // rooms.post
        (post("hello", "lead", None), 1, false, Ok),
        (
            post("hello", "", None),
            1,
            false,
            Decision("invalid_arguments"),
        ),
        (
            post("hello", "ghost", None),
            1,
            false,
            Decision("unknown_agent"),
        ),
        (
            post("", "lead", None),
            1,
            false,
            Decision("invalid_arguments"),
        ),
        (
            post("  \n ", "lead", None),
            1,
            false,
            Decision("invalid_arguments"),
        ),
        (post(&longest, "writer", None), 1, false, Ok),
        (
            post(&too_long, "lead", None),
            1,
            false,
            Decision("invalid_arguments"),
        ),
        (post("hi", "lead", Some(json!({"k": 1}))), 1, false, Ok),
        (
            post("hi", "lead", Some(json!([1, 2]))),
            1,
            false,
            Decision("invalid_arguments"),
        ),
        (
            post("hi", "lead", Some(json!("text"))),
            1,
            false,
            Decision("invalid_arguments"),
        ),
        (
            ungranted_post("hi", "lead"),
            1,
            false,
            Decision("scope_denied"),
        ),
        // The sender and content rules answer before the scope.
        (
            ungranted_post("hi", "ghost"),
            1,
            false,
            Decision("unknown_agent"),
        ),
        // team.delegate
        (delegate("writer", "lead"), 1, false, Ok),
        (delegate("lead", "lead"), 1, false, Ok),
        (
            delegate("lead", "writer"),
            1,
            false,
            Reason("team delegation denied"),
        ),
        (
            delegate("ghost", "lead"),
            1,
            false,
            Reason("team delegation denied"),
        ),
        (
            delegate("writer", ""),
            1,
            false,
            Reason("from_agent is required"),
        ),
        (
            delegate("writer", "ghost"),
            1,
            false,
            Reason("from_agent `ghost`"),
        ),
        (
            delegate("writer", "lead"),
            deepest,
            false,
            Reason("chain depth exceeded"),
        ),
        (delegate("writer", "lead"), deepest - 1, false, Ok),
        (
            delegate("writer", "lead"),
            1,
            true,
            Reason("team delegation is not available"),
        ),
        // apps.invoke and apps.fetch
        (
            Op::Invoke {
                app: "crm".into(),
                agent: "helper".into(),
            },
            1,
            false,
            Ok,
        ),
        (
            Op::Invoke {
                app: "".into(),
                agent: "helper".into(),
            },
            1,
            false,
            Reason("apps.invoke needs"),
        ),
        (
            Op::Invoke {
                app: "crm".into(),
                agent: "helper".into(),
            },
            deepest,
            false,
            Reason("chain depth exceeded"),
        ),
        (
            Op::Invoke {
                app: "crm".into(),
                agent: "helper".into(),
            },
            1,
            true,
            Reason("apps.invoke is not available"),
        ),
        (
            Op::Fetch {
                path: "/contacts".into(),
                method: "get".into(),
            },
            1,
            false,
            Ok,
        ),
        (
            Op::Fetch {
                path: "contacts".into(),
                method: "GET".into(),
            },
            1,
            false,
            Reason("apps.fetch: the path"),
        ),
        (
            Op::Fetch {
                path: "/contacts".into(),
                method: "TRACE".into(),
            },
            1,
            false,
            Reason("apps.fetch: `TRACE`"),
        ),
        (
            Op::Fetch {
                path: "/contacts".into(),
                method: "GET".into(),
            },
            deepest,
            false,
            Reason("chain depth exceeded"),
        ),
        // events.emit
        (
            Op::Emit {
                name: "note_saved".into(),
                pad: 0,
            },
            1,
            false,
            Ok,
        ),
        (
            Op::Emit {
                name: "note_deleted".into(),
                pad: 0,
            },
            1,
            false,
            Reason("event `note_deleted` is not declared"),
        ),
        (
            Op::Emit {
                name: "note_saved".into(),
                // `{"pad":"…"}`: 10 characters around the pad.
                pad: MAX_EVENT_PAYLOAD_BYTES - 10,
            },
            1,
            false,
            Ok,
        ),
        (
            Op::Emit {
                name: "note_saved".into(),
                pad: MAX_EVENT_PAYLOAD_BYTES - 9,
            },
            1,
            false,
            Reason("the event payload has 65537 bytes"),
        ),
        (
            Op::Emit {
                name: "note_saved".into(),
                pad: 0,
            },
            1,
            true,
            Reason("events.emit is not available"),
        ),
        (
            Op::Emit {
                name: "note_saved".into(),
                pad: 0,
            },
            deepest,
            false,
            Reason("chain depth exceeded"),
        ),
        // agent.ask
        (Op::Ask { agent: None }, 1, false, Ok),
        (
            Op::Ask {
                agent: Some("writer".into()),
            },
            1,
            false,
            Ok,
        ),
        (
            Op::Ask {
                agent: Some("ghost".into()),
            },
            1,
            false,
            Reason("agent `ghost`"),
        ),
        (
            Op::Ask { agent: None },
            deepest,
            false,
            Reason("chain depth exceeded"),
        ),
        // commitments.add
        (
            commit("Call back", "lead", Some("2026-05-01T09:00:00Z")),
            1,
            false,
            Ok,
        ),
        (commit("Call back", "lead", None), 1, false, Ok),
        (
            commit(" ", "lead", None),
            1,
            false,
            Decision("invalid_arguments"),
        ),
        (
            commit("Call back", "", None),
            1,
            false,
            Decision("invalid_arguments"),
        ),
        (
            commit("Call back", "ghost", None),
            1,
            false,
            Decision("unknown_agent"),
        ),
        (
            commit("Call back", "lead", Some("next tuesday")),
            1,
            false,
            Decision("invalid_arguments"),
        ),
        (
            commit_with(&longest_title, &longest_content, "lead", None),
            1,
            false,
            Ok,
        ),
        (
            commit_with(&too_long_title, "", "lead", None),
            1,
            false,
            Decision("invalid_arguments"),
        ),
        (
            commit_with("Call back", &too_long_content, "lead", None),
            1,
            false,
            Decision("invalid_arguments"),
        ),
        // tools.call
        (
            Op::Tool {
                name: "notes.lookup".into(),
                args: json!({"id": 1}),
            },
            1,
            false,
            Ok,
        ),
        (
            Op::Tool {
                name: "notes.lookup".into(),
                args: json!([1]),
            },
            1,
            false,
            Decision("invalid_arguments"),
        ),
        (
            Op::Tool {
                name: "crm.export".into(),
                args: json!({}),
            },
            1,
            false,
            Decision("scope_denied"),
        ),
        // context.public-callback-url
        (
            Op::PublicUrl {
                path: "/hook/abc".into(),
            },
            1,
            false,
            Ok,
        ),
        (
            Op::PublicUrl {
                path: "/notes/1".into(),
            },
            1,
            false,
            Failed("`/notes/1` matches no public route"),
        ),
    ];
    for (op, depth, public_route, expect) in rows {
        let host = through_runtime(&op, depth, public_route, &[]).await;
        let sdk = through_sdk(&op, depth, public_route, &[]);
        assert_eq!(
            host, sdk,
            "the runtime and the SDK double disagree on {op:?} (depth {depth}, public {public_route})"
        );
        let matches = match (&expect, &host) {
            (Expect::Ok, Outcome::Ok) => true,
            (Expect::Decision(d), Outcome::Tool { decision, .. }) => decision == d,
            (Expect::Reason(r), Outcome::Agent(reason)) => reason.contains(r),
            (Expect::Failed(m), Outcome::Failed(message)) => message.contains(m),
            _ => false,
        };
        assert!(matches, "unexpected outcome for {op:?}: {host:?}");
    }
}
