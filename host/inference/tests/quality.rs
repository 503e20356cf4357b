//! Retrieval quality of the built-in embedders without a provider: hit@1 and hit@5 of exact-term
//! and paraphrase queries on a corpus written for this test, for the lexical embedder
//! (`atrium-local-lexical`) and the semantic one (`all-minilm-l6-v2`), ranked by cosine
//! similarity. A paraphrase shares no content word with its document (checked below), which
//! is what a lexical embedder cannot match. The figures are printed (`--nocapture`) and
//! recorded in docs/benchmarks.md.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeSet;

use atrium_inference::embed::semantic::{self, SemanticEmbedder};
use atrium_inference::embed::{Embedder, Embedders, LocalEmbedder};

/// A document, a query that uses its terms, and one that says the same with other words.
struct Case {
    document: &'static str,
    exact: &'static str,
    paraphrase: &'static str,
}

const CORPUS: &[Case] = &[
    Case {
        document: "Invoices are paid within thirty days of the invoice date; late invoices accrue a two percent penalty each month.",
        exact: "late invoice penalty",
        paraphrase: "what happens if a bill is settled after the deadline",
    },
    Case {
        document: "Employees accrue twenty-five days of annual leave, and unused leave expires at the end of March.",
        exact: "annual leave expires",
        paraphrase: "how much vacation does staff receive annually",
    },
    Case {
        document: "To reset your password, open the account settings page and choose the security tab.",
        exact: "reset password account settings",
        paraphrase: "I forgot my login credentials, how do I change them",
    },
    Case {
        document: "The warehouse ships orders from Monday to Friday; parcels leave the dock at four in the afternoon.",
        exact: "warehouse ships orders",
        paraphrase: "on which weekdays are packages dispatched",
    },
    Case {
        document: "Travel expenses must be submitted with receipts within two weeks of returning from the trip.",
        exact: "travel expenses receipts",
        paraphrase: "deadline for claiming reimbursement for a business journey",
    },
    Case {
        document: "The office heating is switched off on weekends to save energy; the thermostat is locked at nineteen degrees.",
        exact: "office heating thermostat",
        paraphrase: "why is the building cold on Saturday",
    },
    Case {
        document: "Customer data is stored in Frankfurt and never leaves the European Union.",
        exact: "customer data stored Frankfurt",
        paraphrase: "where are client records kept, geographically",
    },
    Case {
        document: "New hires receive a laptop, a badge and a mentor during their first week.",
        exact: "new hires laptop badge mentor",
        paraphrase: "what equipment does a recently recruited colleague get on arrival",
    },
    Case {
        document: "The quarterly revenue grew by twelve percent, driven by subscriptions in Spain and Italy.",
        exact: "quarterly revenue subscriptions",
        paraphrase: "how much did sales increase over the last three months",
    },
    Case {
        document: "Backups of the database run every night at two and are kept for ninety days.",
        exact: "database backups every night",
        paraphrase: "how long do we retain copies of our stored records",
    },
    Case {
        document: "Parking spaces in the garage are assigned by seniority; visitors park on the street.",
        exact: "parking spaces garage",
        paraphrase: "where can I leave my car at work",
    },
    Case {
        document: "The cafeteria serves vegetarian lunch options daily and closes at half past two.",
        exact: "cafeteria vegetarian lunch",
        paraphrase: "is there meat-free food available at midday",
    },
    Case {
        document: "Security incidents must be reported to the response team within one hour of discovery.",
        exact: "security incidents reported",
        paraphrase: "whom should I tell when I notice a breach or hack",
    },
    Case {
        document: "The printer on the third floor jams often; use the one near the kitchen instead.",
        exact: "printer third floor jams",
        paraphrase: "the copier upstairs keeps getting stuck with paper",
    },
    Case {
        document: "Contracts above fifty thousand euros require approval from the legal department.",
        exact: "contracts approval legal department",
        paraphrase: "who must sign off on large agreements with suppliers",
    },
    Case {
        document: "Remote work is allowed three days a week, provided the team agrees on core hours.",
        exact: "remote work three days",
        paraphrase: "can I do my job from home, and how often",
    },
    Case {
        document: "The fire alarm is tested every Tuesday morning at ten; no evacuation is needed.",
        exact: "fire alarm tested Tuesday",
        paraphrase: "the loud siren that rings weekly, should we leave the premises",
    },
    Case {
        document: "Sick employees should call their manager before nine and bring a doctor's note after three days.",
        exact: "sick employees doctor's note",
        paraphrase: "what to do when I am ill and cannot come in",
    },
    Case {
        document: "Our support line answers customer calls in English, French and German from eight to six.",
        exact: "support line customer calls",
        paraphrase: "at what times can clients phone the helpdesk",
    },
    Case {
        document: "Shipping to Norway and Switzerland takes longer because parcels go through customs.",
        exact: "shipping Norway Switzerland customs",
        paraphrase: "why do deliveries outside the EU arrive late",
    },
];

/// Words that carry no content; a paraphrase may share these with its document.
const STOP: &[&str] = &[
    "a", "am", "an", "and", "are", "at", "be", "by", "can", "do", "does", "for", "from", "get",
    "how", "i", "if", "in", "is", "it", "much", "my", "of", "on", "or", "our", "should", "that",
    "the", "their", "them", "there", "this", "to", "we", "what", "when", "where", "which", "who",
    "whom", "why", "with", "your",
];

fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOP.contains(&w.as_str()))
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// hit@1 and hit@5 (fractions) of `queries`, query `i` being about document `i`.
fn hits(documents: &[Vec<f32>], queries: &[Vec<f32>]) -> (f64, f64) {
    let (mut at1, mut at5) = (0usize, 0usize);
    for (i, query) in queries.iter().enumerate() {
        let mut ranked: Vec<(usize, f32)> = documents
            .iter()
            .enumerate()
            .map(|(d, doc)| (d, cosine(query, doc)))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        let rank = ranked.iter().position(|(d, _)| *d == i).unwrap();
        at1 += usize::from(rank == 0);
        at5 += usize::from(rank < 5);
    }
    #[allow(clippy::cast_precision_loss)]
    let n = queries.len() as f64;
    (at1 as f64 / n, at5 as f64 / n)
}

/// (exact hit@1, exact hit@5, paraphrase hit@1, paraphrase hit@5) of an embedder.
async fn measure(embedder: &dyn Embedder) -> [f64; 4] {
    let texts = |f: fn(&Case) -> &'static str| -> Vec<String> {
        CORPUS.iter().map(|c| f(c).to_owned()).collect()
    };
    let documents = embedder
        .embed(&texts(|c| c.document))
        .await
        .unwrap()
        .vectors;
    let exact = embedder.embed(&texts(|c| c.exact)).await.unwrap().vectors;
    let paraphrase = embedder
        .embed(&texts(|c| c.paraphrase))
        .await
        .unwrap()
        .vectors;
    let (e1, e5) = hits(&documents, &exact);
    let (p1, p5) = hits(&documents, &paraphrase);
    [e1, e5, p1, p5]
}

#[tokio::test]
async fn the_semantic_embedder_finds_paraphrases_the_lexical_one_misses() {
    for case in CORPUS {
        let shared: Vec<_> = words(case.document)
            .intersection(&words(case.paraphrase))
            .cloned()
            .collect();
        assert!(
            shared.is_empty(),
            "the paraphrase `{}` shares {shared:?} with its document",
            case.paraphrase
        );
        assert!(
            words(case.exact).is_subset(&words(case.document)),
            "the exact-term query `{}` uses a word its document lacks",
            case.exact
        );
    }
    let dir = semantic::default_dir(&|name: &str| std::env::var(name).ok())
        .expect("the build step fetched the model (see build.rs's warning)");
    let semantic = SemanticEmbedder::load(&dir).unwrap();
    let lexical = measure(&LocalEmbedder).await;
    let meaning = measure(&semantic).await;
    println!(
        "{} cases | exact hit@1 | exact hit@5 | paraphrase hit@1 | paraphrase hit@5",
        CORPUS.len()
    );
    for (name, m) in [
        ("atrium-local-lexical", lexical),
        (semantic::MODEL, meaning),
    ] {
        println!(
            "{name} | {:.2} | {:.2} | {:.2} | {:.2}",
            m[0], m[1], m[2], m[3]
        );
    }
    // Exact terms: both find them.
    assert!(
        lexical[0] >= 0.9 && meaning[0] >= 0.9,
        "{lexical:?} {meaning:?}"
    );
    // Paraphrases: the semantic embedder finds most, far more than the lexical one.
    assert!(meaning[2] >= 0.7 && meaning[3] >= 0.9, "{meaning:?}");
    assert!(meaning[2] >= lexical[2] + 0.3, "{lexical:?} {meaning:?}");

    // With its files there, it is the host's default embedder, ahead of the lexical one;
    // `ATRIUM_EMBEDDER` still picks the lexical one by its model name.
    let dir_text = dir.display().to_string();
    let vars = |name: &str| (name == semantic::MODEL_DIR_VAR).then(|| dir_text.clone());
    let embedders = Embedders::from_config(&atrium_inference::InferenceConfig::default(), &vars);
    assert_eq!(embedders.default_embedder().model(), semantic::MODEL);
    assert_eq!(embedders.all().len(), 2);
    let chosen =
        Embedders::from_config(
            &atrium_inference::InferenceConfig::default(),
            &|name| match name {
                "ATRIUM_EMBEDDER" => Some("atrium-local-lexical".to_owned()),
                _ => vars(name),
            },
        );
    assert_eq!(chosen.default_embedder().model(), "atrium-local-lexical");
    let off = Embedders::from_config(&atrium_inference::InferenceConfig::default(), &|name| {
        (name == semantic::MODEL_DIR_VAR).then(|| "off".to_owned())
    });
    assert_eq!(off.default_embedder().model(), "atrium-local-lexical");
}
