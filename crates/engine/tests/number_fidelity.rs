//! Property: a random JSON document (numbers of every form, unicode and escapes, nesting, key order) reads
//! back as written through the storage paths: a parsed PUT or batch, bulk insert's unparsed documents, and a
//! patch that touches another field.

use corvid_engine::{BatchCommand, Database, DatabaseOptions, ExpectedChangeVector, IncomingDocument, PatchCommand, PatchScript};
use proptest::prelude::*;
use serde_json::value::RawValue;
use serde_json::Value;

fn open(dir: &std::path::Path) -> Database {
    let mut options = DatabaseOptions::default();
    options.store.map_size = 1 << 30;
    options.store.max_readers = 126;
    Database::open("fidelity", dir, &options).unwrap()
}

/// A number's text as clients write them: integers of any size, decimals with their scale, exponents in
/// either case and with or without a sign, negative zero.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        "-?(0|[1-9][0-9]{0,40})",
        "-?(0|[1-9][0-9]{0,20})\\.[0-9]{1,30}",
        "-?[1-9](\\.[0-9]{1,17})?[eE][+-]?[0-9]{1,2}",
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| format!("{f:?}")),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| format!("{f:.16e}")),
        Just("-0".to_owned()),
        Just("-0.0".to_owned()),
        Just("-99.15168890000001".to_owned()),
        Just("79228162514264337593543950335".to_owned()),
    ]
}

/// A string literal: any unicode (controls and NUL included), written with serde_json's escapes or with
/// every non-ASCII character as `\u` escapes (surrogate pairs beyond the BMP).
fn string_literal() -> impl Strategy<Value = String> {
    (any::<String>(), any::<bool>()).prop_map(|(s, escape_all)| {
        if !escape_all {
            return serde_json::to_string(&s).unwrap();
        }
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
                c => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{unit:04X}"));
                    }
                }
            }
        }
        out.push('"');
        out
    })
}

fn json_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        4 => number(),
        2 => string_literal(),
        1 => prop_oneof![Just("true".to_owned()), Just("false".to_owned()), Just("null".to_owned())],
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![prop::collection::vec(inner.clone(), 0..6).prop_map(|items| format!("[{}]", items.join(", "))), object(inner),]
    })
}

fn object(values: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    prop::collection::vec(("[a-zA-Zé😀_][a-zA-Z0-9é_]{0,8}", values), 0..8).prop_map(|fields| {
        let mut seen = std::collections::HashSet::new();
        let members: Vec<String> = fields
            .into_iter()
            .filter(|(k, _)| seen.insert(k.clone()))
            .map(|(k, v)| format!("{}:\n {v}", serde_json::to_string(&k).unwrap()))
            .collect();
        format!("{{{}}}", members.join(" , "))
    })
}

fn document() -> impl Strategy<Value = String> {
    object(json_value()).prop_map(|body| {
        let metadata = r#""@metadata": {"@collection": "Things", "Client-Number": 1.50}"#;
        match body.strip_suffix('}') {
            Some(rest) if rest.len() > 1 => format!("{rest}, {metadata}}}"),
            _ => format!("{{{metadata}}}"),
        }
    })
}

/// The body a read answers, without `@metadata`, as compact text (numbers keep their text when parsed).
fn read_body(db: &Database, id: &str) -> (String, Value) {
    let text = db.load(&[id.to_owned()], &[], false).unwrap().results[0].clone().expect("stored");
    let mut value: Value = corvid_types::json::parse(&text).unwrap();
    let metadata = value.as_object_mut().unwrap().shift_remove("@metadata").unwrap();
    (value.to_string(), metadata)
}

fn expected_body(text: &str) -> String {
    let mut value: Value = corvid_types::json::parse(text).unwrap();
    value.as_object_mut().unwrap().shift_remove("@metadata");
    value.to_string()
}

fn put(id: &str, document: IncomingDocument) -> BatchCommand {
    BatchCommand::Put { id: id.to_owned(), expected: ExpectedChangeVector::Any, document }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn documents_read_back_as_written(text in document()) {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let expected = expected_body(&text);

        let parsed = IncomingDocument::from_value(corvid_types::json::parse(&text).unwrap()).unwrap();
        let raw: Box<RawValue> = serde_json::from_str(&text).unwrap();
        let unparsed = IncomingDocument::from_raw(&raw).unwrap();
        db.batch_blocking(vec![put("things/parsed", parsed), put("things/raw", unparsed)]).unwrap();
        let (parsed_body, metadata) = read_body(&db, "things/parsed");
        prop_assert_eq!(&parsed_body, &expected);
        prop_assert_eq!(metadata["Client-Number"].to_string(), "1.50");
        let (raw_body, _) = read_body(&db, "things/raw");
        prop_assert_eq!(corvid_types::json::parse::<Value>(&raw_body).unwrap().to_string(), expected.clone());

        // A patch that sets one field leaves every other number's digits alone.
        let patch = PatchCommand {
            id: "things/parsed".into(),
            expected: ExpectedChangeVector::Any,
            patch: PatchScript { script: "this.touched_by_patch = 0.1 + 0.2;".into(), values: Default::default() },
            patch_if_missing: None,
            create_if_missing: None,
            skip_if_change_vector_mismatch: false,
            debug: false,
            return_document: false,
        };
        db.batch_blocking(vec![BatchCommand::Patch(Box::new(patch))]).unwrap();
        let (patched, _) = read_body(&db, "things/parsed");
        let mut with_field: Value = corvid_types::json::parse(&expected).unwrap();
        with_field.as_object_mut().unwrap().insert("touched_by_patch".into(), corvid_types::json::parse("0.30000000000000004").unwrap());
        prop_assert_eq!(patched, with_field.to_string());
    }
}
