//! `agent` / `agents[]`: the app's agents, their vision and their heartbeats.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which agent block the manifest used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentForm {
    /// No agent block: a headless app.
    None,
    /// The singular `agent` block.
    Singular,
    /// The plural `agents` list.
    Plural,
}

/// An agent (from `agent` or `agents[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    /// Agent id (`default` for the singular form).
    pub id: String,
    /// Display name.
    pub name: String,
    /// System prompt.
    pub system_prompt: String,
    /// Allow-list of platform skills; `None` means no restriction.
    pub allowed_skills: Option<Vec<String>>,
    /// Allow-list of this app's tools; `None` means all.
    pub tools_allowed: Option<Vec<String>>,
    /// Routing target for `ctx.agent.ask` without an explicit agent.
    pub is_default: bool,
    /// Free text for the orchestrator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing_hints: Option<String>,
    /// Agent ids this agent may delegate to.
    pub team: Vec<String>,
    /// Recurring background routines.
    pub heartbeats: Vec<Heartbeat>,
    /// Autonomous goal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision: Option<Vision>,
}

/// `vision`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vision {
    /// The goal.
    pub text: String,
    /// Up to 20 criteria.
    pub success_criteria: Vec<String>,
    /// Autonomy mode (default supervised).
    pub autonomy_mode: AutonomyMode,
    /// Goal budget (default 50, at most 500).
    pub budget_max_goals: u32,
    /// Spend cap in cents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_max_cost_cents: Option<u64>,
}

/// `vision.autonomy_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutonomyMode {
    /// Pauses for user approval before major plans.
    Supervised,
    /// Runs without approval.
    FullAutonomy,
}

/// `agents[].heartbeats[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// Unique per agent.
    pub slug: String,
    /// Pre-filter source skill, or a sentinel.
    pub skill: String,
    /// The skill's tool (`query` for the sentinels).
    pub tool: String,
    /// Free-form parameters for the pre-filter.
    pub params: serde_json::Map<String, serde_json::Value>,
    /// When the heartbeat runs.
    #[serde(flatten)]
    pub schedule: HeartbeatSchedule,
    /// Window in which runs may happen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_hours: Option<ActiveHours>,
    /// Fire on every tick even without pre-filter records.
    pub invoke_always: bool,
    /// Minimum spacing between runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_seconds: Option<u64>,
    /// Conversation mode (default dedicated).
    pub conversation_mode: ConversationMode,
    /// Model tier (default cheap).
    pub model_tier: ModelTier,
    /// Per-tick instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

/// The heartbeat's schedule, by `schedule_type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "schedule_type", rename_all = "snake_case")]
pub enum HeartbeatSchedule {
    /// Every `interval_minutes`.
    Interval {
        /// 5 to 43200.
        interval_minutes: u32,
    },
    /// Every day at a time.
    Daily {
        /// `HH:MM`.
        time_of_day: TimeOfDay,
    },
    /// Every week on a day at a time.
    Weekly {
        /// `HH:MM`.
        time_of_day: TimeOfDay,
        /// 0 (Monday) to 6 (Sunday).
        day_of_week: u8,
    },
    /// A cron expression.
    Cron {
        /// Standard 5-field cron expression.
        cron_expression: String,
    },
}

/// A wall-clock time `HH:MM` (24 h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeOfDay {
    /// 0 to 23.
    pub hour: u8,
    /// 0 to 59.
    pub minute: u8,
}

impl TimeOfDay {
    /// Parses `HH:MM` (two digits each, 24 h).
    #[must_use]
    pub fn parse(text: &str) -> Option<TimeOfDay> {
        let b = text.as_bytes();
        if b.len() != 5 || b[2] != b':' || ![b[0], b[1], b[3], b[4]].iter().all(u8::is_ascii_digit)
        {
            return None;
        }
        let hour = (b[0] - b'0') * 10 + (b[1] - b'0');
        let minute = (b[3] - b'0') * 10 + (b[4] - b'0');
        (hour < 24 && minute < 60).then_some(TimeOfDay { hour, minute })
    }
}

impl fmt::Display for TimeOfDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}:{:02}", self.hour, self.minute)
    }
}

impl Serialize for TimeOfDay {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TimeOfDay {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        TimeOfDay::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("`{text}` is not a time HH:MM")))
    }
}

/// `heartbeats[].active_hours`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActiveHours {
    /// Window start.
    pub start: TimeOfDay,
    /// Window end; the window may cross midnight.
    pub end: TimeOfDay,
    /// IANA time-zone name, or `user` for the tenant's configured zone (default `user`).
    pub timezone: String,
}

impl ActiveHours {
    /// Whether the wall-clock time `time` lies in the window `[start, end)`, across midnight
    /// when the end is before the start. An empty window (start equal to end, which the
    /// validator refuses) holds nothing.
    #[must_use]
    pub fn contains(&self, time: TimeOfDay) -> bool {
        if self.start < self.end {
            self.start <= time && time < self.end
        } else if self.start > self.end {
            time >= self.start || time < self.end
        } else {
            false
        }
    }
}

/// `heartbeats[].conversation_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConversationMode {
    /// A separate thread per agent.
    Dedicated,
    /// A fresh single call each tick.
    Isolated,
    /// Posts into the user-facing conversation.
    Main,
}

/// `heartbeats[].model_tier`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelTier {
    /// The fast role.
    Cheap,
    /// The specialist role.
    Standard,
    /// The orchestrator role.
    Premium,
}
