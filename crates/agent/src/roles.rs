//! Role models (seed `004`): the parts a run's model calls play, each of which may have
//! its own model, temperature, token limit and concurrency.
//!
//! Every call through the [`Gateway`](crate::Gateway) names its purpose ("decompose",
//! "extract", "check", ...); [`Role::of`] maps the purpose to the role it plays, so every
//! strategy routes its calls without knowing which roles are configured. A role that is
//! not configured uses the run's default model and the request's own settings.

use metarag_core::{ChatRequest, DynLlm, Llm};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The part a model call plays.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Proposes: plans, sub-questions, tree expansions, drafts and the written answer.
    Generator,
    /// Reads a passage for one fact: a sub-question's answer, one option's value.
    Extractor,
    /// Judges what others wrote: facts checks, critics, relevance grades, screens.
    Evaluator,
}

impl Role {
    /// Every role, in the order the config lists them.
    pub const ALL: [Role; 3] = [Role::Generator, Role::Extractor, Role::Evaluator];

    /// The role's name in config files and traces.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Generator => "generator",
            Role::Extractor => "extractor",
            Role::Evaluator => "evaluator",
        }
    }

    /// The role a call made for `purpose` plays. Purposes not listed here propose text,
    /// so they are the generator's: a new strategy's calls fall there unless it uses one
    /// of the extracting or judging purposes.
    pub fn of(purpose: &str) -> Role {
        match purpose {
            // One fact read from given passages.
            "extract" | "intermediate_answer" | "parts" | "compare" | "measure" => Role::Extractor,
            // A verdict on text someone else wrote.
            "check" | "critic" | "grade" | "screen" | "judge" | "facts" | "verify" => {
                Role::Evaluator
            }
            _ => Role::Generator,
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("unknown role `{s}` (generator, extractor, evaluator)"))
    }
}

/// One role's model and settings; each unset setting keeps what the request asks.
#[derive(Clone, Default)]
pub struct RoleModel {
    /// The role's own model; `None`: the run's default model.
    pub llm: Option<Arc<dyn DynLlm>>,
    /// Sampling temperature of every call of the role (a sampler's own temperature
    /// included).
    pub temperature: Option<f32>,
    /// Completion token limit of every call of the role.
    pub max_tokens: Option<u32>,
    /// Calls of the role run at once where a strategy makes several (samples drawn one
    /// by one, a batch of expansions): an API endpoint gains from more, a local model
    /// answers one call at a time whatever this says. At least 1.
    pub concurrency: usize,
}

impl RoleModel {
    /// The default model with the request's settings, one call at a time.
    pub fn new() -> Self {
        RoleModel {
            concurrency: 1,
            ..RoleModel::default()
        }
    }

    /// Calls of this role go to `llm`.
    pub fn llm(mut self, llm: Arc<dyn DynLlm>) -> Self {
        self.llm = Some(llm);
        self
    }

    /// Every call of this role samples at `t`.
    pub fn temperature(mut self, t: f32) -> Self {
        self.temperature = Some(t);
        self
    }

    /// Every call of this role stops after `n` completion tokens.
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// Up to `n` calls of this role at once.
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n;
        self
    }

    /// Why these settings cannot be used, naming the field.
    pub fn check(&self) -> Result<(), String> {
        if self.concurrency == 0 {
            return Err("concurrency must be at least 1".into());
        }
        if let Some(t) = self.temperature
            && !(0.0..=2.0).contains(&t)
        {
            return Err(format!("temperature {t} is not in [0, 2]"));
        }
        if self.max_tokens == Some(0) {
            return Err("max_tokens must be at least 1".into());
        }
        Ok(())
    }

    /// `request` with this role's settings in place of its own.
    pub fn apply(&self, mut request: ChatRequest) -> ChatRequest {
        if let Some(t) = self.temperature {
            request.params.temperature = t;
        }
        if let Some(n) = self.max_tokens {
            request.params.max_tokens = n;
        }
        request
    }
}

impl std::fmt::Debug for RoleModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoleModel")
            .field(
                "llm",
                &self.llm.as_ref().map(|l| Llm::model_id(l).to_string()),
            )
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("concurrency", &self.concurrency)
            .finish()
    }
}

/// The configured roles; a role missing here uses the default model and settings.
pub type Roles = BTreeMap<Role, RoleModel>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purposes_map_to_the_role_they_play() {
        assert_eq!(Role::of("extract"), Role::Extractor);
        assert_eq!(Role::of("intermediate_answer"), Role::Extractor);
        assert_eq!(Role::of("check"), Role::Evaluator);
        assert_eq!(Role::of("critic"), Role::Evaluator);
        assert_eq!(Role::of("decompose"), Role::Generator);
        assert_eq!(Role::of("expand"), Role::Generator);
        assert_eq!(Role::of("write"), Role::Generator);
        assert_eq!(Role::of("a purpose no strategy has yet"), Role::Generator);
    }

    #[test]
    fn names_round_trip_and_an_unknown_one_is_named() {
        for r in Role::ALL {
            assert_eq!(r.as_str().parse::<Role>(), Ok(r));
        }
        let e = "writer".parse::<Role>().unwrap_err();
        assert!(e.contains("`writer`"), "{e}");
    }

    #[test]
    fn settings_replace_the_requests_own_and_bad_ones_are_refused() {
        let r = RoleModel::new().temperature(0.2).max_tokens(64);
        let req = r.apply(ChatRequest::new(vec![]).temperature(0.9).max_tokens(512));
        assert_eq!(req.params.temperature, 0.2);
        assert_eq!(req.params.max_tokens, 64);
        let unset = RoleModel::new().apply(ChatRequest::new(vec![]).temperature(0.9));
        assert_eq!(unset.params.temperature, 0.9);
        assert!(RoleModel::new().concurrency(0).check().is_err());
        assert!(RoleModel::new().temperature(3.0).check().is_err());
        assert!(RoleModel::new().max_tokens(0).check().is_err());
        assert!(RoleModel::new().check().is_ok());
    }
}
