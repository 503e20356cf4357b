//! Ranking with the local embedder: in a small corpus, the relevant document comes first for
//! queries in the document's own words and for paraphrases.

use atrium_inference::embed::Embedders;

use super::{add, json_call, rag_state, top};
use crate::{stores, unique};

/// A small corpus written for this test: each document is about one thing.
const CORPUS: &[(&str, &str)] = &[
    (
        "Expense reports",
        "Submit expense reports within thirty days. Attach every receipt; the finance team reimburses approved expenses with the next salary payment.",
    ),
    (
        "Parental leave",
        "Parents receive sixteen weeks of paid parental leave after a birth or an adoption. Tell your manager at least two months before the leave starts.",
    ),
    (
        "Password rules",
        "Passwords need at least fourteen characters. Change your password when a breach is suspected; the password manager generates strong ones.",
    ),
    (
        "Office heating",
        "The heating in the Lyon office runs from October to April. Report a cold radiator to facilities through the building portal.",
    ),
    (
        "Security incidents",
        "Report a phishing email or a lost laptop to the security team at once. The incident hotline answers day and night.",
    ),
    (
        "Company cars",
        "Company cars are booked in the fleet calendar. Refuel before returning the car and log the mileage in the car's booklet.",
    ),
    (
        "Remote work",
        "Employees may work from home up to three days a week. Agree the remote days with your team and keep your calendar current.",
    ),
    (
        "Onboarding",
        "New hires receive a laptop, a badge and a buddy on their first day. The onboarding checklist lists the trainings to finish in the first month.",
    ),
];

#[tokio::test]
async fn the_relevant_document_ranks_first_for_exact_and_paraphrased_queries() {
    let (store, _keep) = stores().await.remove(0);
    let dir = tempfile::tempdir().unwrap();
    let state = rag_state(&store, dir.path(), Embedders::default()).await;
    let key = store.create_key(&unique("acme"), "k").await.unwrap().secret;
    json_call(&state, "POST", "/v1/rag/handbook", &key, "t", None).await;
    let mut ids = std::collections::HashMap::new();
    for (title, text) in CORPUS {
        ids.insert(
            *title,
            add(&state, &key, "t", "handbook", title, text).await,
        );
    }
    // Exact terms from the document.
    for (query, expected) in [
        ("expense reports receipt", "Expense reports"),
        ("parental leave", "Parental leave"),
        ("password manager", "Password rules"),
        ("radiator Lyon office", "Office heating"),
        ("phishing email", "Security incidents"),
        ("fleet calendar mileage", "Company cars"),
        ("onboarding checklist", "Onboarding"),
    ] {
        let matches = top(&state, &key, "t", "handbook", query).await;
        assert_eq!(
            matches[0]["document_id"],
            ids[expected].as_str(),
            "`{query}` should find {expected}: {matches:?}"
        );
    }
    // The same needs, said another way: other word forms, other order, other words around.
    for (query, expected) in [
        (
            "how do I get reimbursed for what I expensed?",
            "Expense reports",
        ),
        (
            "how many weeks off do parents get when adopting a child",
            "Parental leave",
        ),
        ("how long must my passwords be", "Password rules"),
        (
            "who do I tell when the heater is cold in winter",
            "Office heating",
        ),
        (
            "I lost my work laptop, whom should I report it to",
            "Security incidents",
        ),
        ("booking a car from the company fleet", "Company cars"),
        ("can I work from home on some days", "Remote work"),
        ("what do new hires get on their first day", "Onboarding"),
    ] {
        let matches = top(&state, &key, "t", "handbook", query).await;
        assert_eq!(
            matches[0]["document_id"],
            ids[expected].as_str(),
            "`{query}` should find {expected}: {matches:?}"
        );
    }
}
