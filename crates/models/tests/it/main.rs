//! Integration tests of the model layer: the real local chat model (llama.cpp), the call
//! cache, the cross-encoder's mechanics on a tiny randomly initialised BERT, the crate's BERT
//! encoder against candle's ([`encoder`]), and the
//! OpenAI-compatible client against a misbehaving server ([`faults`]).

use metarag_core::{ChatRequest, Fault, FinishReason, Llm, Message, Reranker, chat_json};
use metarag_models::{CachedLlm, CallCache, CrossEncoder, LlmReranker, LocalLlm, LocalLlmConfig};
use metarag_testkit::{LLM, ScriptedLlm, local_llm, models_dir};
use serde::Deserialize;
use std::sync::{Arc, Mutex};

mod cross_encoder;
mod encoder;
mod faults;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct CapitalAnswer {
    /// The city.
    city: String,
    /// The country it is the capital of.
    country: String,
}

#[tokio::test]
async fn constrained_json_from_the_local_model_deserializes_into_a_struct() {
    let llm = local_llm();
    let request = ChatRequest::new(vec![
        Message::system("You answer geography questions as JSON."),
        Message::user("What is the capital of France?"),
    ])
    .max_tokens(64);
    let out = chat_json::<CapitalAnswer, _>(&*llm, request)
        .await
        .expect("grammar-constrained output parses");
    assert!(
        out.value.city.to_lowercase().contains("paris"),
        "{:?}",
        out.value
    );
    assert!(
        out.value.country.to_lowercase().contains("france"),
        "{:?}",
        out.value
    );
    assert!(out.completion.usage.completion_tokens > 0);
}

#[tokio::test]
async fn streamed_pieces_add_up_to_the_completion() {
    let llm = local_llm();
    let pieces = Mutex::new(Vec::<String>::new());
    let sink = |p: &str| pieces.lock().unwrap().push(p.to_string());
    let request = ChatRequest::user("Name three primary colours, comma separated.").max_tokens(24);
    let c = llm.chat_stream(&request, &sink).await.unwrap();
    let pieces = pieces.into_inner().unwrap();
    assert!(pieces.len() > 1, "expected several pieces, got {pieces:?}");
    assert_eq!(pieces.concat(), c.text);
    // The token count of a prompt is what the call then reports evaluating.
    let counted = llm.count_tokens(request.messages.clone()).await.unwrap();
    assert_eq!(counted as u64, c.usage.prompt_tokens);
}

#[tokio::test]
async fn a_generation_whose_caller_goes_away_is_stopped() {
    let llm = local_llm();
    let before = llm.cancelled_calls();
    let started = tokio::sync::Notify::new();
    let sink = |_: &str| started.notify_one();
    let long = ChatRequest::user("Count from 1 to 1000, separated by spaces.").max_tokens(1500);
    // The caller gives up after the first piece (a closed stream, an aborted run).
    tokio::select! {
        _ = llm.chat_stream(&long, &sink) => panic!("1,500 tokens cannot be done before the first one"),
        _ = started.notified() => {}
    }
    // The model serves calls in order: once this one is answered, the one given up on has
    // been stopped, not run to its 1,500 tokens.
    let next = llm
        .chat(&ChatRequest::user("Say OK.").max_tokens(4))
        .await
        .unwrap();
    assert!(!next.text.is_empty());
    assert!(
        llm.cancelled_calls() > before,
        "the abandoned generation was not stopped"
    );
}

#[tokio::test]
async fn max_tokens_and_stop_strings_end_generation() {
    let llm = local_llm();
    let c = llm
        .chat(&ChatRequest::user("Count from 1 to 50, separated by spaces.").max_tokens(5))
        .await
        .unwrap();
    assert_eq!(c.finish, FinishReason::Length);
    assert_eq!(c.usage.completion_tokens, 5);
    let c = llm
        .chat(
            &ChatRequest::user("Count from 1 to 20, separated by spaces.")
                .max_tokens(60)
                .stop(" 5"),
        )
        .await
        .unwrap();
    assert_eq!(c.finish, FinishReason::Stop);
    assert!(
        !c.text.contains(" 5") && c.text.contains('4'),
        "{:?}",
        c.text
    );
}

#[tokio::test]
async fn an_overlong_prompt_is_a_user_error_and_the_model_keeps_working() {
    let llm = local_llm();
    let huge = "word ".repeat(5000);
    let err = llm
        .chat(&ChatRequest::user(huge).max_tokens(8))
        .await
        .unwrap_err();
    assert_eq!(err.fault(), Fault::User, "{err}");
    assert!(err.to_string().contains("context"), "{err}");
    // Typed, so a strategy can react (fewer sources) instead of failing.
    assert!(
        matches!(err, metarag_core::Error::ContextOverflow { .. }),
        "{err:?}"
    );
    let ok = llm.chat(&ChatRequest::user("Say hi.").max_tokens(4)).await;
    assert!(ok.is_ok());
}

#[tokio::test]
async fn the_local_model_gives_token_logprobs_and_distinct_samples() {
    let llm = local_llm();
    assert!(llm.capabilities().logprobs && llm.capabilities().samples);
    let c = llm
        .chat(
            &ChatRequest::user("Name the capital of France in one word.")
                .max_tokens(6)
                .logprobs(),
        )
        .await
        .unwrap();
    let lp = c
        .logprobs
        .as_ref()
        .expect("log-probabilities were asked for");
    assert_eq!(lp.len() as u64, c.usage.completion_tokens);
    assert!(lp.iter().all(|t| t.logprob <= 0.0 && t.logprob.is_finite()));
    // Greedy decoding picks the most likely token: an easy answer's first token is likely
    // (a log-probability read at the wrong position or token would not be).
    assert!(lp[0].logprob > 0.2f32.ln(), "{lp:?}");
    assert_eq!(
        lp.iter().map(|t| t.token.as_str()).collect::<String>(),
        c.text
    );
    // Several samples with distinct seeds from one prompt.
    let request = ChatRequest::user("Write one random English word.")
        .max_tokens(6)
        .samples(4, 1.2, 7);
    let c = llm.chat(&request).await.unwrap();
    assert_eq!(c.samples.len(), 3);
    let texts: std::collections::HashSet<&str> = c.texts().collect();
    assert!(texts.len() >= 2, "{texts:?}");
}

/// The test model's GGUF file (fetched by the shared instance if missing).
fn test_gguf() -> std::path::PathBuf {
    local_llm();
    metarag_models::ModelStore::new(models_dir(), "python3")
        .gguf_path(LLM)
        .unwrap()
}

/// A model instance of its own (its KV cache is what the test reads).
fn own_local_llm(context_size: u32) -> LocalLlm {
    LocalLlm::load(LocalLlmConfig::new(LLM, test_gguf()).context_size(context_size)).unwrap()
}

#[tokio::test]
async fn samples_decode_side_by_side_and_leave_one_sequence_in_the_cache() {
    let llm = own_local_llm(1024);
    let question = over_evidence("Who directed Jaws? Answer with the name only.");
    // Greedy samples decoded in one batch see the same prompt cells and the same tokens:
    // every sequence must write the same text (a sequence reading another's cells, or
    // logits read at the wrong batch index, would not).
    let greedy = llm
        .chat(&question.clone().samples(4, 0.0, 1).logprobs())
        .await
        .unwrap();
    assert_eq!(greedy.samples.len(), 3);
    for s in &greedy.samples {
        assert_eq!(s.text, greedy.text);
        assert_eq!(
            s.logprobs.as_ref().map(Vec::len),
            greedy.logprobs.as_ref().map(Vec::len)
        );
    }
    let tokens: usize = greedy.logprobs.as_ref().unwrap().len() * 4;
    assert_eq!(greedy.usage.completion_tokens as usize, tokens);
    assert!(greedy.text.contains("Spielberg"), "{:?}", greedy.text);
    // The other sequences are gone and the bookkeeping follows sequence 0: the same
    // prompt again reuses every prompt token but the last, and greedy decoding over the
    // reused cells gives the same answer.
    let again = llm.chat(&question).await.unwrap();
    assert_eq!(
        again.usage.cached_prompt_tokens + 1,
        again.usage.prompt_tokens,
        "{:?}",
        again.usage
    );
    assert_eq!(again.text, greedy.text);
    // Sampled sequences in one batch draw their own tokens.
    let sampled = llm
        .chat(
            &ChatRequest::user("Write one random English word.")
                .max_tokens(6)
                .samples(6, 1.2, 7),
        )
        .await
        .unwrap();
    let texts: std::collections::HashSet<&str> = sampled.texts().collect();
    assert!(texts.len() >= 2, "{texts:?}");
}

#[tokio::test]
async fn a_forgotten_context_is_evaluated_again_in_full() {
    let llm = own_local_llm(1024);
    let question = over_evidence("Who directed Jaws? Answer with the name only.");
    let first = llm.chat(&question).await.unwrap();
    let again = llm.chat(&question).await.unwrap();
    assert!(again.usage.cached_prompt_tokens > 60, "{:?}", again.usage);
    llm.forget_context().await;
    let cold = llm.chat(&question).await.unwrap();
    assert_eq!(cold.usage.cached_prompt_tokens, 0, "{:?}", cold.usage);
    assert_eq!(cold.usage.prompt_tokens, first.usage.prompt_tokens);
    assert_eq!(cold.text, first.text);
}

#[tokio::test]
async fn samples_that_do_not_fit_the_window_together_are_drawn_one_by_one() {
    // 4 x 120 completion tokens beside the prompt do not fit in 384: one at a time, each
    // reusing the prompt.
    let llm = own_local_llm(384);
    let request = over_evidence("Describe Steven Spielberg at length.")
        .max_tokens(120)
        .samples(4, 0.8, 3);
    let c = llm.chat(&request).await.unwrap();
    assert_eq!(c.samples.len(), 3);
    assert!(c.texts().all(|t| !t.is_empty()));
    assert!(c.usage.completion_tokens > 4, "{:?}", c.usage);
}

const EVIDENCE: &str = "Evidence:\n[1] Jaws is a 1975 American thriller film directed by Steven \
Spielberg, based on the 1974 novel by Peter Benchley.\n[2] Steven Spielberg (born December 18, \
1946) is an American film director, producer and screenwriter.\n[3] Peter Benchley was an American \
author and screenwriter, known for the novel Jaws.";

fn over_evidence(question: &str) -> ChatRequest {
    ChatRequest::new(vec![
        Message::system(format!("Answer briefly from the evidence.\n\n{EVIDENCE}")),
        Message::user(question.to_string()),
    ])
    .max_tokens(16)
}

#[tokio::test]
async fn a_prompt_set_aside_for_an_unrelated_call_is_found_again() {
    let llm = own_local_llm(2048);
    // A call over the evidence, a short unrelated one, then another over the evidence:
    // the third finds the first's prompt parked and evaluates only its own question.
    let first = llm
        .chat(&over_evidence("Who directed Jaws?"))
        .await
        .unwrap();
    assert!(first.usage.prompt_tokens > 100, "{:?}", first.usage);
    let aside = llm
        .chat(&ChatRequest::user("Name a primary colour.").max_tokens(4))
        .await
        .unwrap();
    assert!(aside.usage.cached_prompt_tokens < 10, "{:?}", aside.usage);
    let third = over_evidence("Is the director of Jaws American? Answer yes or no.");
    let (p_parked, again) = llm.yes_probability(third.messages.clone()).await.unwrap();
    assert!(
        again.cached_prompt_tokens + 20 >= first.usage.prompt_tokens,
        "the evidence should be served from the parked prompt: {again:?} after {:?}",
        first.usage
    );
    // The same distribution as with nothing cached (see the test below for the bound).
    let (p_fresh, _) = own_local_llm(2048)
        .yes_probability(third.messages)
        .await
        .unwrap();
    assert!(
        (p_parked - p_fresh).abs() < 0.03,
        "parked {p_parked} vs fresh {p_fresh}"
    );
    // The two swapped: the unrelated prompt is parked now and is found again in turn.
    let back = llm
        .chat(&ChatRequest::user("Name a primary colour.").max_tokens(4))
        .await
        .unwrap();
    assert!(
        back.usage.cached_prompt_tokens + 1 >= back.usage.prompt_tokens,
        "{:?}",
        back.usage
    );
    assert_eq!(back.text, aside.text);
}

#[tokio::test]
async fn a_kept_prefix_outlives_the_unrelated_calls_between_two_requests() {
    let llm = own_local_llm(2048);
    let plan = |q: &str| {
        ChatRequest::new(vec![
            Message::system(format!(
                "Name the film each question is about.\n\n{EVIDENCE}"
            )),
            Message::user(q.to_string()),
        ])
        .max_tokens(8)
        .keeping_prefix()
    };
    let first = llm.chat(&plan("Who directed Jaws?")).await.unwrap();
    // Two unrelated prompts, each long enough to be parked in place of the other: without
    // the kept prefix, the first prompt is gone from both sequence 0 and the parked slot.
    for q in ["Who wrote the novel?", "When was the director born?"] {
        let other = ChatRequest::new(vec![
            Message::system(format!("{q} Answer in one word.\n\n{EVIDENCE}")),
            Message::user("Go.".to_string()),
        ])
        .max_tokens(4);
        let c = llm.chat(&other).await.unwrap();
        assert!(c.usage.cached_prompt_tokens < 10, "{:?}", c.usage);
    }
    // Forgetting the context between questions (the benchmark runner's fairness between
    // strategies) keeps the shared prefix, which holds no question's content.
    llm.forget_context().await;
    let again = llm
        .chat(&plan("Which film did Benchley write?"))
        .await
        .unwrap();
    assert!(
        again.usage.cached_prompt_tokens + 20 >= first.usage.prompt_tokens,
        "the shared start should be kept: {:?} after {:?}",
        again.usage,
        first.usage
    );
}

#[tokio::test]
async fn a_parked_prompt_gives_way_when_a_call_needs_its_cells() {
    // A 512-token window: the parked prompt and a long unrelated call with its longest
    // completion cannot both fit, so the parked one is dropped first (kept, a completion
    // run to its limit would find no free KV cell).
    let llm = own_local_llm(512);
    let first = llm
        .chat(&over_evidence("Who directed Jaws?"))
        .await
        .unwrap();
    let held = (first.usage.prompt_tokens + first.usage.completion_tokens) as u32;
    let long: Vec<String> = (0..120).map(|i| format!("item{i}")).collect();
    let request =
        ChatRequest::user(format!("Which of these is last? {}", long.join(" "))).max_tokens(24);
    let aside = llm.chat(&request).await.unwrap();
    assert!(
        aside.usage.prompt_tokens as u32 + 24 + held > 512,
        "the test needs a call that cannot fit beside the parked prompt: {:?} after {held}",
        aside.usage
    );
    // The evidence was dropped, not kept: it is evaluated again.
    let again = llm
        .chat(&over_evidence("Is the director of Jaws American?"))
        .await
        .unwrap();
    assert!(again.usage.cached_prompt_tokens < 10, "{:?}", again.usage);
}

#[tokio::test]
async fn prefix_reuse_skips_the_shared_prefix_and_keeps_the_distribution() {
    let path = test_gguf();
    let with = own_local_llm(1024);
    let without = LocalLlm::load(
        LocalLlmConfig::new(LLM, &path)
            .context_size(1024)
            .prefix_reuse(false),
    )
    .unwrap();
    let first = over_evidence("Who directed Jaws?");
    let second = over_evidence("Is the director of Jaws American? Answer yes or no.");
    with.chat(&first).await.unwrap();
    let (p_reused, reused) = with.yes_probability(second.messages.clone()).await.unwrap();
    without.chat(&first).await.unwrap();
    let (p_fresh, fresh) = without
        .yes_probability(second.messages.clone())
        .await
        .unwrap();
    // The system prompt with the evidence is shared: well over 60 tokens.
    assert!(reused.cached_prompt_tokens > 60, "{reused:?}");
    assert_eq!(fresh.cached_prompt_tokens, 0);
    assert_eq!(reused.prompt_tokens, fresh.prompt_tokens);
    // Same tokens, same model: the next-token distribution must agree. Not bit for bit
    // (llama.cpp's kernels accumulate in a different order for a different batch split,
    // which can flip a near-tie in greedy decoding) but far closer than any misplaced or
    // stale KV entry would leave it.
    assert!(
        (p_reused - p_fresh).abs() < 0.03,
        "reused {p_reused} vs fresh {p_fresh}"
    );
}

#[tokio::test]
async fn hidden_states_are_read_per_completion_and_the_model_still_chats() {
    let llm = LocalLlm::load(
        LocalLlmConfig::new(LLM, test_gguf())
            .context_size(1024)
            .hidden_states(true),
    )
    .unwrap();
    let request = over_evidence("Who directed Jaws?");
    // Chat works on a context that outputs hidden states.
    let c = llm.chat(&request).await.unwrap();
    assert!(!c.text.trim().is_empty());
    let right = llm
        .hidden_state(request.messages.clone(), "Steven Spielberg")
        .await
        .unwrap();
    let wrong = llm
        .hidden_state(request.messages.clone(), "Ridley Scott")
        .await
        .unwrap();
    assert!(right.tokens >= 2 && right.prompt_tokens > 60, "{right:?}");
    assert_eq!(right.last.len(), right.mean.len());
    assert!(right.last.len() >= 512);
    assert!(right.last.iter().all(|v| v.is_finite()));
    // Different completions leave different states; the same one, read again after
    // another, the same state (the cached prompt is reused, not stale).
    assert_ne!(right.mean, wrong.mean);
    let again = llm
        .hidden_state(request.messages.clone(), "Steven Spielberg")
        .await
        .unwrap();
    let cos = |a: &[f32], b: &[f32]| {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let n = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / (n(a) * n(b))
    };
    assert!(cos(&right.mean, &again.mean) > 0.999);
    // A model loaded without the output says how to get it.
    let plain = own_local_llm(512);
    let err = plain
        .hidden_state(request.messages.clone(), "Steven Spielberg")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("hidden"), "{err}");
}

#[tokio::test]
async fn the_local_model_as_reranker_prefers_the_passage_that_answers() {
    let reranker = LlmReranker::new(local_llm(), 1000);
    let passages = vec![
        "The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889.".to_string(),
        "Jaws is a 1975 American thriller film directed by Steven Spielberg.".to_string(),
        "Bananas are rich in potassium and grow in tropical climates.".to_string(),
    ];
    let scores = reranker
        .score("Who directed the film Jaws?", &passages)
        .await
        .unwrap();
    assert_eq!(scores.len(), 3);
    assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)), "{scores:?}");
    assert!(scores[1] > scores[0] && scores[1] > scores[2], "{scores:?}");
}

#[tokio::test]
async fn a_cache_hit_returns_the_stored_completion_without_calling_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.sqlite");
    let fake = Arc::new(ScriptedLlm::new().on(&["capital"], "Paris"));
    let request = ChatRequest::user("What is the capital of France?");
    {
        let cached = CachedLlm::new(fake.clone(), Arc::new(CallCache::open(&path).unwrap()));
        let first = cached.chat(&request).await.unwrap();
        assert!(!first.cached);
        assert_eq!(first.usage.original_ms, None);
        let second = cached.chat(&request).await.unwrap();
        assert!(second.cached);
        // A replay keeps what the call took when it was computed.
        assert_eq!(second.usage.original_ms, Some(first.usage.compute_ms()));
        assert_eq!(second.text, "Paris");
        assert_eq!(fake.call_count(), 1, "the hit must not reach the model");
    }
    // Persisted: a new process (a reopened cache) is served from disk too.
    let cache = Arc::new(CallCache::open(&path).unwrap());
    let cached = CachedLlm::new(fake.clone(), cache.clone());
    assert!(cached.chat(&request).await.unwrap().cached);
    assert_eq!(fake.call_count(), 1);
    // Anything that changes the answer is a different key.
    let other = request.clone().max_tokens(7);
    assert!(!cached.chat(&other).await.unwrap().cached);
    assert_eq!(fake.call_count(), 2);
    let stats = cache.stats().unwrap();
    assert_eq!((stats.entries, stats.hits), (2, 2));
    assert_eq!(cache.clear(None).unwrap(), 2);
    assert!(!cached.chat(&request).await.unwrap().cached);
    // Failures are not stored.
    let failing = CachedLlm::new(Arc::new(ScriptedLlm::new()), cache.clone());
    assert!(failing.chat(&ChatRequest::user("x")).await.is_err());
    assert_eq!(cache.stats().unwrap().entries, 1);
}

#[test]
fn cross_encoder_loading_names_the_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = CrossEncoder::load(dir.path(), "x").unwrap_err().to_string();
    assert!(err.contains("config.json"), "{err}");
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Quoted {
    /// The sentence copied from the evidence.
    quote: String,
    /// The answer alone.
    answer: String,
}

/// A read that copies a sentence of the evidence, then the answer, in JSON under a grammar.
fn quoting_read() -> ChatRequest {
    over_evidence(
        "Copy, word for word, the sentence of the evidence that says who directed Jaws, then \
         give the name alone. Reply in JSON: {\"quote\": \"...\", \"answer\": \"...\"}",
    )
    .max_tokens(96)
    .json_schema::<Quoted>()
}

/// Prompt-lookup drafting changes how many tokens one decode evaluates, not how a token is
/// chosen: on these prompts the greedy replies (free text, and JSON under a grammar that
/// copies a sentence of the prompt) and a seeded sample are the same with it as without,
/// also over a reused prefix (a rejected draft's cells are gone), and the copied sentence
/// is drafted. Not in general: logits of a batch can differ from one token's in the last
/// bits, so near ties may flip (2 of 10 quoting reads on the 1.5B model,
/// docs/results/llm-local.md).
#[tokio::test]
async fn lookup_drafting_writes_what_plain_decoding_writes() {
    let plain = own_local_llm(1024);
    let drafting = LocalLlm::load(
        LocalLlmConfig::new(LLM, test_gguf())
            .context_size(1024)
            .lookup_draft(8),
    )
    .unwrap();
    let quoting = quoting_read();
    let free = over_evidence("Repeat the second sentence of the evidence exactly.").max_tokens(48);
    for request in [&quoting, &free] {
        let a = plain.chat(request).await.unwrap();
        let b = drafting.chat(request).await.unwrap();
        assert_eq!(a.text, b.text);
        assert_eq!(a.usage.completion_tokens, b.usage.completion_tokens);
        assert!(a.usage.completion_tokens > 8, "{a:?}");
        // The same call again, now over a reused prefix: still the same.
        let c = drafting.chat(request).await.unwrap();
        assert_eq!(a.text, c.text);
    }
    let (drafted, accepted) = drafting.drafted_tokens();
    assert!(accepted > 0 && accepted <= drafted, "{drafted} {accepted}");
    assert_eq!(plain.drafted_tokens(), (0, 0));
    // Sampled replies draw from the same distribution: a seeded sample is the same too.
    let sampled = free.clone().samples(1, 0.8, 11);
    let a = plain.chat(&sampled).await.unwrap();
    let b = drafting.chat(&sampled).await.unwrap();
    assert_eq!(a.text, b.text);
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Year {
    year: u32,
}

/// Checking only the chosen token against the grammar (the default) writes what filtering
/// every candidate first writes, greedily: on a reply the model writes in the grammar's
/// shape anyway (the quote) and on one it would not (prose asked for, an integer field
/// required, so its first choices are refused and the vocabulary is filtered). Samples
/// under the grammar parse whichever way they were drawn.
#[tokio::test]
async fn checking_the_chosen_token_writes_what_filtering_every_candidate_writes() {
    let chosen = own_local_llm(1024);
    let first = LocalLlm::load(
        LocalLlmConfig::new(LLM, test_gguf())
            .context_size(1024)
            .grammar_first(true),
    )
    .unwrap();
    let quoting = quoting_read();
    let prose = over_evidence("In a full sentence of prose, when was Jaws released?")
        .max_tokens(24)
        .json_schema::<Year>();
    for request in [&quoting, &prose] {
        let a = first.chat(request).await.unwrap();
        let b = chosen.chat(request).await.unwrap();
        assert_eq!(a.text, b.text);
        assert!(a.usage.completion_tokens > 4, "{a:?}");
    }
    let year: Year = serde_json::from_str(&chosen.chat(&prose).await.unwrap().text).unwrap();
    assert_eq!(year.year, 1975);
    let sampled = chosen
        .chat(&prose.clone().samples(4, 1.0, 7))
        .await
        .unwrap();
    assert_eq!(sampled.samples.len(), 3);
    for text in std::iter::once(&sampled.text).chain(sampled.samples.iter().map(|s| &s.text)) {
        serde_json::from_str::<Year>(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    }
}

/// llama-bench's two tests on the engine: both rates are measured over the tokens asked
/// for, a test larger than the context is refused by name, and the model still answers
/// after (the cache the tests filled is emptied).
#[tokio::test]
async fn throughput_times_the_prompt_and_generation_tests_and_leaves_the_model_usable() {
    let llm = own_local_llm(1024);
    let t = llm.throughput(64, 8).await.unwrap();
    assert_eq!((t.prompt_tokens, t.generated_tokens), (64, 8));
    assert!(t.prompt_s > 0.0 && t.generate_s > 0.0, "{t:?}");
    assert!(t.prompt_per_s() > 0.0 && t.generated_per_s() > 0.0, "{t:?}");
    let only_generation = llm.throughput(0, 4).await.unwrap();
    assert_eq!(only_generation.prompt_tokens, 0);
    let err = llm.throughput(4096, 0).await.unwrap_err().to_string();
    assert!(err.contains("4096") && err.contains("1024"), "{err}");
    let err = llm.throughput(0, 0).await.unwrap_err().to_string();
    assert!(err.contains("above 0"), "{err}");
    let answer = llm
        .chat(&over_evidence("Who directed Jaws? The name alone.").max_tokens(12))
        .await
        .unwrap();
    assert!(answer.text.contains("Spielberg"), "{answer:?}");
}
