//! What a heartbeat's reply asks for (Appendix A, rules 4 and 5), as pure functions of its
//! text.
//!
//! - `HEARTBEAT_OK` (a whole word) at the start or the end of the reply (white space around
//!   it aside), with
//!   at most [`MAX_OK_REMAINDER`] characters of other content, suppresses the reply: it is not
//!   stored, and only the row's last-ok time moves. Anywhere else it has no effect.
//! - `<escalate-to-vision/>` anywhere keeps the reply as a normal message and brings the
//!   agent's vision loop forward to 30 seconds later; it wins over the token.

/// The token of a routine check that found nothing worth saying.
pub const OK_TOKEN: &str = "HEARTBEAT_OK";
/// The marker that escalates to the vision loop.
pub const ESCALATE_MARKER: &str = "<escalate-to-vision/>";
/// The most characters of other content a suppressed reply may have.
pub const MAX_OK_REMAINDER: usize = 300;
/// How long after an escalation the vision's next phase is due, in seconds.
pub const ESCALATION_DELAY_SECONDS: i64 = 30;

/// What to do with a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Not stored; only last-ok is updated.
    Suppressed,
    /// Stored as a normal message; `escalate`: the vision's next phase is due 30 s later.
    Kept {
        /// Whether the marker was present.
        escalate: bool,
    },
}

/// The verdict on `reply`.
#[must_use]
pub fn verdict(reply: &str) -> Verdict {
    if reply.contains(ESCALATE_MARKER) {
        return Verdict::Kept { escalate: true };
    }
    let text = reply.trim();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let remainder = match (text.strip_prefix(OK_TOKEN), text.strip_suffix(OK_TOKEN)) {
        (Some(rest), _) if !rest.starts_with(word) => Some(rest),
        (_, Some(rest)) if !rest.ends_with(word) => Some(rest),
        _ => None,
    };
    match remainder {
        Some(rest) if rest.trim().chars().count() <= MAX_OK_REMAINDER => Verdict::Suppressed,
        _ => Verdict::Kept { escalate: false },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEPT: Verdict = Verdict::Kept { escalate: false };

    #[test]
    fn the_token_at_the_start_or_the_end_suppresses_a_short_reply() {
        assert_eq!(verdict("HEARTBEAT_OK"), Verdict::Suppressed);
        assert_eq!(verdict("  HEARTBEAT_OK\n"), Verdict::Suppressed);
        assert_eq!(
            verdict("HEARTBEAT_OK nothing new in the queue"),
            Verdict::Suppressed
        );
        assert_eq!(
            verdict("Checked the queue: nothing new. HEARTBEAT_OK"),
            Verdict::Suppressed
        );
    }

    #[test]
    fn the_token_in_the_middle_has_no_effect() {
        assert_eq!(
            verdict("Three invoices are overdue; HEARTBEAT_OK does not apply; act now."),
            KEPT
        );
        assert_eq!(verdict("Three invoices are overdue."), KEPT);
        // The token is a whole word, in capitals.
        assert_eq!(verdict("HEARTBEAT_OKAY, all good"), KEPT);
        assert_eq!(verdict("all good: NOT_HEARTBEAT_OK"), KEPT);
        assert_eq!(verdict("heartbeat_ok"), KEPT);
    }

    #[test]
    fn three_hundred_characters_of_other_content_are_the_limit() {
        let body = "x".repeat(300);
        assert_eq!(
            verdict(&format!("HEARTBEAT_OK {body}")),
            Verdict::Suppressed
        );
        assert_eq!(
            verdict(&format!("{body} HEARTBEAT_OK")),
            Verdict::Suppressed
        );
        let longer = "x".repeat(301);
        assert_eq!(verdict(&format!("HEARTBEAT_OK {longer}")), KEPT);
        assert_eq!(verdict(&format!("{longer} HEARTBEAT_OK")), KEPT);
        // Characters, not bytes.
        let wide = "é".repeat(300);
        assert_eq!(
            verdict(&format!("HEARTBEAT_OK {wide}")),
            Verdict::Suppressed
        );
    }

    #[test]
    fn the_escalation_marker_keeps_the_reply_wherever_it_is() {
        let escalate = Verdict::Kept { escalate: true };
        assert_eq!(
            verdict("<escalate-to-vision/> the backlog doubled"),
            escalate
        );
        assert_eq!(
            verdict("the backlog doubled <escalate-to-vision/>"),
            escalate
        );
        assert_eq!(verdict("HEARTBEAT_OK <escalate-to-vision/>"), escalate);
        assert_eq!(
            verdict("the backlog <escalate-to-vision/> doubled"),
            escalate
        );
    }
}
