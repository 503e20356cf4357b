//! The chain context that travels with nested agent calls.
//!
//! Container apps carry it in the headers [`HEADER_CHAIN_DEPTH`] and [`HEADER_VISITED_AGENTS`]
//! and read it from the environment variables [`ENV_CHAIN_DEPTH`] and [`ENV_VISITED_AGENTS`]
//! (docs/wit.md); component apps read it from `context.current` and never set it: the host
//! advances it on every outbound team, apps and events call.

use super::AgentRefusal;

/// The deepest chain the platform allows; a call that would go deeper is rejected.
pub const MAX_CHAIN_DEPTH: u32 = 8;
/// Header carrying the chain depth on nested calls to and from container apps.
pub const HEADER_CHAIN_DEPTH: &str = "X-Service-Chain-Depth";
/// Header carrying the visited agents (comma-separated canonical keys).
pub const HEADER_VISITED_AGENTS: &str = "X-Service-Visited-Agents";
/// Environment variable from which a container app's SDK reads the chain depth.
pub const ENV_CHAIN_DEPTH: &str = "SERVICE_CHAIN_DEPTH";
/// Environment variable from which a container app's SDK reads the visited agents.
pub const ENV_VISITED_AGENTS: &str = "SERVICE_VISITED_AGENTS";

/// Depth and visited agents of a call chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainContext {
    /// 1 for a call the platform starts; each nested agent call adds one.
    pub depth: u32,
    /// Canonical keys (`<app>:<agent>`) of the agents on the chain, oldest first.
    pub visited: Vec<String>,
}

impl Default for ChainContext {
    fn default() -> Self {
        Self::root()
    }
}

impl ChainContext {
    /// The context of a call started by the platform itself (first hop).
    pub fn root() -> Self {
        ChainContext {
            depth: 1,
            visited: Vec::new(),
        }
    }

    /// The context of a nested call to `agent` (a canonical key, or none for a call that
    /// reaches no agent, like an event emit or a route fetch). Checks, in the documented order (docs/runtime.md), the
    /// depth limit and then the visited set.
    pub fn enter(&self, agent: Option<&str>) -> Result<ChainContext, AgentRefusal> {
        let depth = self.depth.saturating_add(1);
        if depth > MAX_CHAIN_DEPTH {
            return Err(AgentRefusal {
                reason: format!(
                    "chain depth exceeded: this call would be hop {depth}, the limit is {MAX_CHAIN_DEPTH}"
                ),
            });
        }
        let mut visited = self.visited.clone();
        if let Some(agent) = agent {
            if visited.iter().any(|v| v == agent) {
                return Err(AgentRefusal {
                    reason: format!(
                        "cycle detected: agent `{agent}` is already on this call chain ({})",
                        visited.join(" -> ")
                    ),
                });
            }
            visited.push(agent.to_owned());
        }
        Ok(ChainContext { depth, visited })
    }

    /// The header values for a nested call to a container app: (depth, visited).
    pub fn to_headers(&self) -> [(&'static str, String); 2] {
        [
            (HEADER_CHAIN_DEPTH, self.depth.to_string()),
            (HEADER_VISITED_AGENTS, self.visited.join(",")),
        ]
    }

    /// Reads the chain from header (or environment) values. A missing depth is the first hop.
    /// A depth that is not a whole number is malformed (the caller's mistake, a 400 naming
    /// the header); one above the limit is refused as the nested call it claims would be.
    pub fn from_headers(
        depth: Option<&str>,
        visited: Option<&str>,
    ) -> Result<Self, ChainHeaderError> {
        let depth = match depth.map(str::trim) {
            None | Some("") => 1,
            Some(text) => text
                .parse::<u32>()
                .map_err(|_| ChainHeaderError::Malformed {
                    header: HEADER_CHAIN_DEPTH,
                    message: format!(
                        "{HEADER_CHAIN_DEPTH} must be a whole number from 1 to {MAX_CHAIN_DEPTH}, got `{text}`"
                    ),
                })?,
        };
        if depth > MAX_CHAIN_DEPTH {
            return Err(ChainHeaderError::Refused(AgentRefusal {
                reason: format!(
                    "chain depth exceeded: {depth} is above the limit of {MAX_CHAIN_DEPTH}"
                ),
            }));
        }
        let visited = visited
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        Ok(ChainContext {
            depth: depth.max(1),
            visited,
        })
    }
}

/// Why chain headers were not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainHeaderError {
    /// A header's value is not what it must be.
    Malformed {
        /// The header.
        header: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The chain it claims goes past a limit.
    Refused(AgentRefusal),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_above_eight_is_rejected() {
        let mut chain = ChainContext::root();
        for _ in 0..7 {
            chain = chain.enter(None).unwrap();
        }
        assert_eq!(chain.depth, 8);
        let err = chain.enter(None).unwrap_err();
        assert!(
            err.reason.starts_with("chain depth exceeded"),
            "{}",
            err.reason
        );
    }

    #[test]
    fn revisiting_an_agent_is_a_cycle() {
        let chain = ChainContext::root()
            .enter(Some("a:x"))
            .unwrap()
            .enter(Some("b:y"))
            .unwrap();
        let err = chain.enter(Some("a:x")).unwrap_err();
        assert!(err.reason.starts_with("cycle detected"), "{}", err.reason);
        assert!(chain.enter(Some("a:z")).is_ok());
    }

    #[test]
    fn headers_round_trip() {
        let chain = ChainContext {
            depth: 3,
            visited: vec!["a:x".into(), "b:y".into()],
        };
        let [(_, depth), (_, visited)] = chain.to_headers();
        assert_eq!(
            ChainContext::from_headers(Some(&depth), Some(&visited)).unwrap(),
            chain
        );
        assert_eq!(
            ChainContext::from_headers(None, None).unwrap(),
            ChainContext::root()
        );
        assert!(matches!(
            ChainContext::from_headers(Some("9"), None),
            Err(ChainHeaderError::Refused(_))
        ));
        for malformed in ["x", "-1", "2.5"] {
            assert!(matches!(
                ChainContext::from_headers(Some(malformed), None),
                Err(ChainHeaderError::Malformed {
                    header: HEADER_CHAIN_DEPTH,
                    ..
                })
            ));
        }
    }
}
