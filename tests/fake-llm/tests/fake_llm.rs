//! The fake LLM through a real HTTP client: each protocol's wire, the script, failures and
//! request capture.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic, missing_docs)]

use std::time::Duration;

use atrium_fake_llm::{FakeLlm, Protocol, Reply, ToolCall};
use serde_json::{Value, json};

async fn post(url: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(url)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// The JSON payloads of an SSE body's `data:` lines (`[DONE]` as a string).
fn data(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap_or_else(|_| Value::String(d.to_owned())))
        .collect()
}

fn hello(stream: bool) -> Value {
    json!({"model": "m", "stream": stream, "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"}]})
}

#[tokio::test]
async fn chat_completions_answer_plain_and_streamed_with_usage_when_asked() {
    let llm = FakeLlm::start().await;
    let url = format!("{}/v1/chat/completions", llm.base_url("ovh"));
    let answer: Value = post(&url, &hello(false)).await.json().await.unwrap();
    assert_eq!(answer["object"], "chat.completion");
    assert_eq!(answer["choices"][0]["message"]["content"], "ovh says hi");
    assert_eq!(answer["usage"]["total_tokens"], 15);

    let response = post(&url, &hello(true)).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let events = data(&response.text().await.unwrap());
    assert_eq!(events.last().unwrap(), "[DONE]");
    let text: String = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "ovh says hi");
    assert!(events.iter().all(|e| e.get("usage").is_none()));

    let mut asked = hello(true);
    asked["stream_options"] = json!({"include_usage": true});
    let events = data(&post(&url, &asked).await.text().await.unwrap());
    assert_eq!(events[events.len() - 2]["usage"]["prompt_tokens"], 10);

    let mistral = llm.upstream("mistral");
    mistral.always_report_usage();
    mistral.usage(3, 4);
    let url = format!("{}/v1/chat/completions", llm.base_url("mistral"));
    let events = data(&post(&url, &hello(true)).await.text().await.unwrap());
    assert_eq!(
        events[events.len() - 2]["usage"],
        json!({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7})
    );
    assert_eq!((llm.calls("ovh"), llm.calls("mistral")), (3, 1));
}

#[tokio::test]
async fn scripted_texts_echoes_and_tool_calls_in_openai_shape() {
    let llm = FakeLlm::start().await;
    let upstream = llm.upstream("openai");
    upstream.script([
        Reply::text("first answer").finish_reason("length"),
        Reply::tool_calls([
            ToolCall::new("call_a", "search", json!({"q": "rent"})),
            ToolCall::new("call_b", "sum", json!({"of": [1, 2]})),
        ]),
        Reply::tool_call("search", json!({"q": "é"})),
    ]);
    upstream.answer_by_default(Reply::echo());
    assert_eq!(upstream.scripted(), 3);
    let url = format!("{}/v1/chat/completions", llm.base_url("openai"));

    let answer: Value = post(&url, &hello(false)).await.json().await.unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], "first answer");
    assert_eq!(answer["choices"][0]["finish_reason"], "length");

    let answer: Value = post(&url, &hello(false)).await.json().await.unwrap();
    let choice = &answer["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], Value::Null);
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1]["id"], "call_b");
    assert_eq!(calls[1]["type"], "function");
    assert_eq!(calls[1]["function"]["name"], "sum");
    let arguments: Value =
        serde_json::from_str(calls[1]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"of": [1, 2]}));

    // Streamed: the id and name first, then the arguments in pieces.
    let events = data(&post(&url, &hello(true)).await.text().await.unwrap());
    let mut id = None;
    let mut name = None;
    let mut arguments = String::new();
    for event in &events {
        for call in event["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            assert_eq!(call["index"], 0);
            id = id.or(call["id"].as_str().map(str::to_owned));
            name = name.or(call["function"]["name"].as_str().map(str::to_owned));
            arguments += call["function"]["arguments"].as_str().unwrap_or_default();
        }
    }
    assert_eq!(
        (id.as_deref(), name.as_deref()),
        (Some("call_1"), Some("search"))
    );
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"q": "é"})
    );
    assert!(
        events
            .iter()
            .any(|e| e["choices"][0]["finish_reason"] == "tool_calls")
    );
    assert_eq!(events.last().unwrap(), "[DONE]");

    // The script used up: the default, here the last user message.
    assert_eq!(upstream.scripted(), 0);
    let answer: Value = post(&url, &hello(false)).await.json().await.unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], "hello there");
    let events = data(&post(&url, &hello(true)).await.text().await.unwrap());
    let pieces: Vec<&str> = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(pieces, ["hello", " there"]);
}

#[tokio::test]
async fn messages_and_ollama_carry_texts_and_tool_calls() {
    let llm = FakeLlm::start().await;
    let anthropic = llm.upstream("anthropic");
    anthropic.push(Reply::tool_call("search", json!({"q": "rent"})));
    anthropic.push(Reply::tool_call("search", json!({"q": "rent"})));
    let url = format!("{}/v1/messages", llm.base_url("anthropic"));
    let answer: Value = post(&url, &hello(false)).await.json().await.unwrap();
    assert_eq!(answer["stop_reason"], "tool_use");
    assert_eq!(
        answer["content"][0],
        json!({"type": "tool_use", "id": "call_1", "name": "search", "input": {"q": "rent"}})
    );
    let text = post(&url, &hello(true)).await.text().await.unwrap();
    let partial: String = data(&text)
        .iter()
        .filter_map(|e| e["delta"]["partial_json"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&partial).unwrap(),
        json!({"q": "rent"})
    );
    assert!(text.contains("event: message_stop"), "{text}");
    let answer: Value = post(&url, &hello(false)).await.json().await.unwrap();
    assert_eq!(answer["content"][0]["text"], "anthropic says hi");
    assert_eq!(
        answer["usage"],
        json!({"input_tokens": 20, "output_tokens": 8})
    );

    let ollama = llm.upstream("ollama");
    ollama.push(Reply::tool_call("search", json!({"q": "rent"})));
    let url = format!("{}/api/chat", llm.base_url("ollama"));
    let answer: Value = post(&url, &hello(false)).await.json().await.unwrap();
    assert_eq!(
        answer["message"]["tool_calls"][0]["function"],
        json!({"name": "search", "arguments": {"q": "rent"}})
    );
    let response = post(&url, &hello(true)).await;
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    let lines: Vec<Value> = response
        .text()
        .await
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let text: String = lines
        .iter()
        .filter_map(|l| l["message"]["content"].as_str())
        .collect();
    assert_eq!(text, "ollama says hi");
    assert_eq!(lines.last().unwrap()["done"], true);
    assert_eq!(lines.last().unwrap()["eval_count"], 3);
}

#[tokio::test]
async fn failures_come_in_each_protocols_shape() {
    let llm = FakeLlm::start().await;
    for (name, endpoint, message) in [
        ("openai", "/v1/chat/completions", "/error/message"),
        ("anthropic", "/v1/messages", "/error/message"),
        ("ollama", "/api/chat", "/error"),
    ] {
        let upstream = llm.upstream(name);
        upstream.push(Reply::status(429));
        let url = format!("{}{endpoint}", llm.base_url(name));
        let response = post(&url, &hello(false)).await;
        assert_eq!(response.status(), 429, "{name}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body.pointer(message).unwrap(), "injected 429", "{name}");

        upstream.fail(503);
        upstream.push(Reply::text("kept for later"));
        let response = post(&url, &hello(true)).await;
        assert_eq!(response.status(), 503, "{name}");
        upstream.recover();
        assert_eq!(
            upstream.scripted(),
            1,
            "a failing upstream keeps its script"
        );
        let kept = post(&url, &hello(false)).await.text().await.unwrap();
        assert!(kept.contains("kept for later"), "{name}: {kept}");
    }
    let anthropic: Value = {
        llm.upstream("anthropic").push(Reply::error(529, "busy"));
        let url = format!("{}/v1/messages", llm.base_url("anthropic"));
        post(&url, &hello(false)).await.json().await.unwrap()
    };
    assert_eq!(
        anthropic,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
    );

    // An unknown path, and another protocol than the one an upstream speaks only.
    let response = post(&format!("{}/v1/completions", llm.url()), &hello(false)).await;
    assert_eq!(response.status(), 404);
    llm.upstream("ovh").only(Protocol::ChatCompletions);
    let response = post(&format!("{}/api/chat", llm.base_url("ovh")), &hello(false)).await;
    assert_eq!(response.status(), 404);
    assert_eq!(llm.upstream("ovh").last().unwrap().path, "/ovh/api/chat");
}

#[tokio::test]
async fn streams_stall_and_drop_and_replies_hang_or_come_late() {
    let llm = FakeLlm::start().await;
    let upstream = llm.upstream("ovh");
    let url = format!("{}/v1/chat/completions", llm.base_url("ovh"));
    upstream.script([
        Reply::text("one two three").cut_after(2),
        Reply::text("cut plain").cut_after(1),
        Reply::hang(),
        Reply::greeting().stall_after(1, Duration::from_secs(30)),
        Reply::greeting().after(Duration::from_millis(300)),
    ]);

    // The connection drops after the role's chunk and the first word.
    let mut response = post(&url, &hello(true)).await;
    assert_eq!(response.status(), 200);
    let mut received = String::new();
    let error = loop {
        match response.chunk().await {
            Ok(Some(bytes)) => received += &String::from_utf8_lossy(&bytes),
            Ok(None) => panic!("the stream ended cleanly: {received}"),
            Err(e) => break e,
        }
    };
    assert!(received.contains("\"one\""), "{received}");
    assert!(!received.contains("two"), "{received}");
    assert!(error.is_body() || error.is_decode(), "{error:?}");

    let cut = post(&url, &hello(false)).await.json::<Value>().await;
    assert!(cut.is_err(), "{cut:?}");

    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let hung = client.post(&url).json(&hello(false)).send().await;
    assert!(hung.unwrap_err().is_timeout());

    let mut stalled = post(&url, &hello(true)).await;
    let first = stalled.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("\"role\":\"assistant\""));
    let next = tokio::time::timeout(Duration::from_millis(300), stalled.chunk()).await;
    assert!(next.is_err(), "the stream went on: {next:?}");
    drop(stalled);

    let started = std::time::Instant::now();
    let late: Value = post(&url, &hello(false)).await.json().await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(late["choices"][0]["message"]["content"], "ovh says hi");
    assert_eq!(upstream.calls(), 5);
}

#[tokio::test]
async fn a_closed_upstream_holds_requests_until_opened() {
    let llm = FakeLlm::start().await;
    let upstream = llm.upstream("ovh");
    upstream.close();
    let url = format!("{}/v1/chat/completions", llm.base_url("ovh"));
    let held = tokio::spawn(async move { post(&url, &hello(false)).await.status() });
    while upstream.calls() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!held.is_finished());
    upstream.open();
    assert_eq!(held.await.unwrap(), 200);
}

#[tokio::test]
async fn requests_are_kept_with_their_headers_path_and_body() {
    let llm = FakeLlm::start().await;
    let url = format!("{}/v1/chat/completions", llm.base_url("openai"));
    reqwest::Client::new()
        .post(&url)
        .bearer_auth("sk-test")
        .json(&hello(false))
        .send()
        .await
        .unwrap();
    reqwest::Client::new()
        .post(&url)
        .body("not json")
        .send()
        .await
        .unwrap();
    let upstream = llm.upstream("openai");
    let requests = upstream.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/openai/v1/chat/completions");
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(requests[0].body["model"], "m");
    assert_eq!(requests[0].last_user_text().as_deref(), Some("hello there"));
    assert_eq!(requests[1].body, Value::Null);
    upstream.keep_requests(false);
    post(&url, &hello(false)).await;
    assert_eq!((upstream.calls(), upstream.requests().len()), (3, 2));
    upstream.forget_requests();
    assert_eq!((upstream.calls(), upstream.last().is_none()), (0, true));
}

#[tokio::test]
async fn embeddings_in_both_protocols() {
    let llm = FakeLlm::start().await;
    let inputs = json!({"model": "e", "input": ["a", "b", "c"]});
    let mistral = llm.upstream("mistral");
    mistral.dimensions(8);
    let url = format!("{}/v1/embeddings", llm.base_url("mistral"));
    let answer: Value = post(&url, &inputs).await.json().await.unwrap();
    let data = answer["data"].as_array().unwrap();
    assert_eq!(data.len(), 3);
    assert_eq!(data[0]["index"], 2, "answered in reverse order");
    let expected: Vec<f32> = atrium_fake_llm::embedding("c", 8);
    assert_eq!(
        serde_json::from_value::<Vec<f32>>(data[0]["embedding"].clone()).unwrap(),
        expected
    );
    assert_eq!(answer["usage"]["prompt_tokens"], 21);
    mistral.push(Reply::embeddings_missing(1));
    let answer: Value = post(&url, &inputs).await.json().await.unwrap();
    assert_eq!(answer["data"].as_array().unwrap().len(), 2);

    let url = format!("{}/api/embed", llm.base_url("ollama"));
    let answer: Value = post(&url, &json!({"model": "e", "input": "a"}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(answer["embeddings"][0].as_array().unwrap().len(), 1024);
    assert_eq!(answer["prompt_eval_count"], 5);
}

#[test]
fn a_fake_on_its_own_thread_serves_blocking_tests() {
    let llm = FakeLlm::start_in_thread();
    llm.upstream("ollama").delay(Duration::from_millis(20));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let url = format!("{}/api/chat", llm.base_url("ollama"));
    let answer: Value =
        runtime.block_on(async { post(&url, &hello(false)).await.json().await.unwrap() });
    assert_eq!(answer["message"]["content"], "ollama says hi");
    assert_eq!(llm.calls("ollama"), 1);
}
