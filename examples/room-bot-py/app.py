"""Room Bot (Python): the twin of examples/room-bot. When a room message mentions one of its
agents, the mentioned agent answers in the same room, addressing the sender:

- `@room-bot-py:concierge summarize ...`: the concierge delegates to the scribe (its team)
  and posts the scribe's summary;
- `@room-bot-py:concierge remind me ...`: the concierge records a commitment and confirms;
- anything else: the concierge acknowledges the message.

Messages from the bot's own agents are ignored, so two of its agents never answer each other
forever. Posting needs the scope `rooms.write`.
"""

from __future__ import annotations

from atrium_sdk import App, SenderType

app = App.from_manifest("atrium.app.yaml")


def strip_mentions(content: str) -> str:
    """The text without `@app:agent` and `@user:id` mentions."""
    words = []
    for word in content.split():
        bare = word.strip("*_`[]().,;!?")
        if bare.startswith("@") and ":" in bare:
            continue
        words.append(word)
    return " ".join(words)


@app.on_message
async def on_message(ctx, agent_slug, message):
    if message.sender_type == SenderType.AGENT and message.sender_ref.startswith(
        f"{ctx.app_id}:"
    ):
        return
    sender = f"@{message.sender_ref}"
    text = strip_mentions(message.content)
    lower = text.lower()
    if lower.startswith("summarize"):
        topic = text[len("summarize"):].strip()
        summary = await ctx.team.delegate("scribe", f"Summarize: {topic}", from_agent=agent_slug)
        reply = f"{sender} here is the summary: {summary}"
    elif lower.startswith("remind me"):
        what = text[len("remind me"):].strip()
        commitment = await ctx.commitments.add(
            f"Remind {message.sender_display}", what, from_agent=agent_slug
        )
        reply = f"{sender} noted ({commitment}): I will remind you to {what}"
    else:
        reply = f"{sender} thanks, {agent_slug} read: {text}"
    await ctx.rooms.post(message.room_id, reply, from_agent=agent_slug)
    ctx.logger.info(f"answered {message.sender_ref} in room {message.room_id}")
