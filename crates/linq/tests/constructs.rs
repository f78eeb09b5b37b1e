//! One test per construct: compile a definition, run it, check the values.

use std::collections::HashMap;

use corvid_linq::{DocumentLoader, ErrorKind, LinqIndex, NoDocuments, SpatialValue};
use serde_json::{json, Value};

fn map_with(def: &str, collection: &str, doc: Value, loader: &mut dyn DocumentLoader) -> Vec<Value> {
    let index = LinqIndex::compile(&[def], None).unwrap_or_else(|e| panic!("{e}"));
    let entries = index.map(0, "users/1", collection, &doc, &json!({"@collection": collection}), loader).unwrap_or_else(|e| panic!("{e}"));
    entries.into_iter().map(|e| Value::Object(e.fields)).collect()
}

fn map1(def: &str, doc: Value) -> Vec<Value> {
    map_with(def, "Users", doc, &mut NoDocuments)
}

/// Evaluates `expr` as the value of field `v` over the document.
fn eval(expr: &str, doc: Value) -> Value {
    let out = map1(&format!("from u in docs.Users select new {{ v = {expr} }}"), doc);
    out[0]["v"].clone()
}

fn compile_err(def: &str) -> (ErrorKind, String, usize, usize) {
    match LinqIndex::compile(&[def], None) {
        Ok(_) => panic!("expected an error for {def}"),
        Err(e) => (e.kind, e.message, e.line, e.column),
    }
}

#[test]
fn query_syntax_with_implicit_names() {
    let out = map1(
        "from u in docs.Users select new { u.Name, u.Address.City, Age = u.Age }",
        json!({"Name": "a", "Address": {"City": "x"}, "Age": 3}),
    );
    assert_eq!(out, vec![json!({"Name": "a", "City": "x", "Age": 3})]);
}

#[test]
fn collections_and_fields() {
    let i = LinqIndex::compile(
        &[
            "from u in docs.Users select new { u.Name }",
            "from d in docs[\"Dogs\"] select new { Name = d.N }",
            "from d in docs select new { d.X }",
        ],
        None,
    )
    .unwrap();
    assert_eq!(i.collections(0), Some(vec!["Users".to_string()]));
    assert_eq!(i.collections(1), Some(vec!["Dogs".to_string()]));
    assert_eq!(i.collections(2), None);
    assert_eq!(i.output_fields(0), ["Name"]);
    assert!(!i.is_map_reduce());
    // other collections produce nothing; matching is case-insensitive
    assert!(i.map(0, "dogs/1", "Dogs", &json!({}), &json!({}), &mut NoDocuments).unwrap().is_empty());
    assert_eq!(i.map(0, "users/1", "users", &json!({"Name": 1}), &json!({}), &mut NoDocuments).unwrap().len(), 1);
}

#[test]
fn where_let_and_fan_out() {
    let d = json!({"Name": "o", "Lines": [{"P": "a", "Q": 2}, {"P": "b", "Q": 0}, {"P": "c", "Q": 5}]});
    let out = map1("from o in docs.Users from l in o.Lines let q = l.Q * 10 where q > 0 select new { o.Name, l.P, q }", d);
    assert_eq!(out, vec![json!({"Name": "o", "P": "a", "q": 20}), json!({"Name": "o", "P": "c", "q": 50})]);
}

#[test]
fn method_syntax_chains() {
    let d = json!({"Active": true, "Name": "n", "Tags": ["x", "y"]});
    assert_eq!(map1("docs.Users.Where(u => u.Active).Select(u => new { u.Name })", d.clone()), vec![json!({"Name": "n"})]);
    assert_eq!(map1("docs.Users.Where(u => !u.Active).Select(u => new { u.Name })", d.clone()), Vec::<Value>::new());
    let out =
        map1("docs.Users.SelectMany(u => u.Tags, (u, t) => new { u = u, t = t }).Select(this0 => new { this0.u.Name, Tag = this0.t })", d);
    assert_eq!(out, vec![json!({"Name": "n", "Tag": "x"}), json!({"Name": "n", "Tag": "y"})]);
}

#[test]
fn literals() {
    assert_eq!(eval("1m + 2", json!({})), json!(3));
    assert_eq!(eval("2.5d", json!({})), json!(2.5));
    assert_eq!(eval(r#"@"a\b""c""#, json!({})), json!("a\\b\"c"));
    assert_eq!(eval("\"x\\ty\"", json!({})), json!("x\ty"));
    assert_eq!(eval("'/'", json!({})), json!("/"));
    assert_eq!(eval("null", json!({})), Value::Null);
    assert_eq!(eval("true && !false", json!({})), json!(true));
}

#[test]
fn arithmetic_keeps_ints() {
    let d = json!({"A": 7, "B": 2, "F": 1.5, "S": "s"});
    assert_eq!(eval("u.A + u.B * 3", d.clone()), json!(13));
    assert_eq!(eval("u.A / u.B", d.clone()), json!(3));
    assert_eq!(eval("u.A % u.B", d.clone()), json!(1));
    assert_eq!(eval("u.A + u.F", d.clone()), json!(8.5));
    assert_eq!(eval("u.S + u.A + u.Missing", d.clone()), json!("s7"));
    assert_eq!(eval("u.Missing + 1", d.clone()), Value::Null);
    assert_eq!(eval("u.Missing * u.A", d.clone()), Value::Null);
    // A null on the right of an integer is 0 (RavenDB's null object converts to int), of a double NaN (null).
    assert_eq!(eval("u.A + u.Missing", d.clone()), json!(7));
    assert_eq!(eval("5 - u.Missing", d.clone()), json!(5));
    assert_eq!(eval("u.A * u.Missing", d.clone()), json!(0));
    assert_eq!(eval("u.F * u.Missing", d.clone()), Value::Null);
    assert_eq!(eval("-u.A", d), json!(-7));
}

#[test]
fn comparison_logic_conditional_coalesce() {
    let d = json!({"A": 7, "S": "b", "N": null});
    assert_eq!(eval("u.A > 5 && u.A <= 7", d.clone()), json!(true));
    assert_eq!(eval("u.A == 7.0", d.clone()), json!(true));
    assert_eq!(eval("u.S == \"b\" || u.A != 7", d.clone()), json!(true));
    assert_eq!(eval("u.N > 1", d.clone()), json!(false));
    assert_eq!(eval("u.N == null", d.clone()), json!(true));
    assert_eq!(eval("u.A > 5 ? \"big\" : \"small\"", d.clone()), json!("big"));
    assert_eq!(eval("u.N ?? u.Missing ?? 4", d.clone()), json!(4));
    assert_eq!(eval("u.Missing?.Deep.Deeper", d), Value::Null);
}

#[test]
fn null_propagation_and_indexers() {
    let d = json!({"A": {"B": [10, 20]}, "Map": {"k": "v"}});
    assert_eq!(eval("u.X.Y.Z", d.clone()), Value::Null);
    assert_eq!(eval("u.A.B[1]", d.clone()), json!(20));
    assert_eq!(eval("u.A.B[5]", d.clone()), Value::Null);
    assert_eq!(eval("u[\"Map\"][\"k\"]", d.clone()), json!("v"));
    assert_eq!(eval("u.X.ToString()", d.clone()), Value::Null);
    assert_eq!(eval("u.X.Count()", d), json!(0));
}

#[test]
fn casts() {
    let d = json!({"F": 2.7, "I": 3, "S": "12"});
    assert_eq!(eval("(int)u.F", d.clone()), json!(2));
    assert_eq!(eval("((double ? ) u.I)", d.clone()), json!(3.0));
    assert_eq!(eval("(decimal)u.I", d.clone()), json!(3));
    assert_eq!(eval("(long)u.S", d.clone()), json!(12));
    assert_eq!(eval("(string)u.I", d.clone()), json!("3"));
    assert_eq!(eval("((object)u.I)", d), json!(3));
}

#[test]
fn anonymous_objects_and_arrays() {
    let d = json!({"A": 1, "B": "b"});
    assert_eq!(eval("new { u.A, X = new { u.B } }", d.clone()), json!({"A": 1, "X": {"B": "b"}}));
    assert_eq!(eval("new[] { u.A, 2 }", d.clone()), json!([1, 2]));
    assert_eq!(eval("new object[] { u.A, u.B }", d), json!([1, "b"]));
}

#[test]
fn string_methods() {
    let d = json!({"S": " Hello World ", "P": "a/b/c"});
    assert_eq!(eval("u.S.Trim().ToLower()", d.clone()), json!("hello world"));
    assert_eq!(eval("u.S.ToUpper()", d.clone()), json!(" HELLO WORLD "));
    assert_eq!(eval("u.S.Contains(\"World\")", d.clone()), json!(true));
    assert_eq!(eval("u.P.StartsWith(\"a/\") && u.P.EndsWith(\"/c\")", d.clone()), json!(true));
    assert_eq!(eval("u.P.Substring(2)", d.clone()), json!("b/c"));
    assert_eq!(eval("u.P.Substring(2, 1)", d.clone()), json!("b"));
    assert_eq!(eval("u.P.Split('/')", d.clone()), json!(["a", "b", "c"]));
    assert_eq!(eval("u.P.Length", d.clone()), json!(5));
    assert_eq!(eval("u.P.IndexOf('/')", d.clone()), json!(1));
    assert_eq!(eval("string.Join(\",\", u.P.Split('/'))", d.clone()), json!("a,b,c"));
    assert_eq!(eval("string.IsNullOrEmpty(u.Missing)", d.clone()), json!(true));
    assert_eq!(eval("string.Concat(u.P, \"!\")", d.clone()), json!("a/b/c!"));
    assert_eq!(eval("String.Format(\"x/{0}\", u.P)", d), json!("x/a/b/c"));
}

#[test]
fn enumerable_methods() {
    let d = json!({"N": [3, 1, 2, 3], "F": [1.5, 2], "L": [{"Q": 2, "P": "a"}, {"Q": 5, "P": "b"}]});
    assert_eq!(eval("u.N.Sum()", d.clone()), json!(9));
    assert_eq!(eval("u.F.Sum()", d.clone()), json!(3.5));
    assert_eq!(eval("u.N.Count()", d.clone()), json!(4));
    assert_eq!(eval("u.N.Count(x => x > 2)", d.clone()), json!(2));
    assert_eq!(eval("u.N.Min()", d.clone()), json!(1));
    assert_eq!(eval("u.N.Max()", d.clone()), json!(3));
    assert_eq!(eval("u.N.Average()", d.clone()), json!(2.25));
    assert_eq!(eval("u.L.Select(l => l.P)", d.clone()), json!(["a", "b"]));
    assert_eq!(eval("u.L.Where(l => l.Q > 3).Select(l => l.P).ToList()", d.clone()), json!(["b"]));
    assert_eq!(eval("u.L.Any(l => l.Q > 3)", d.clone()), json!(true));
    assert_eq!(eval("u.L.All(l => l.Q > 3)", d.clone()), json!(false));
    assert_eq!(eval("u.L.First().P", d.clone()), json!("a"));
    assert_eq!(eval("u.L.FirstOrDefault(l => l.Q > 9)", d.clone()), Value::Null);
    assert_eq!(eval("u.N.Distinct().ToArray()", d.clone()), json!([3, 1, 2]));
    assert_eq!(eval("u.N.OrderBy(x => x)", d.clone()), json!([1, 2, 3, 3]));
    assert_eq!(eval("u.N.Contains(2)", d.clone()), json!(true));
    assert_eq!(eval("u.L.Sum(l => l.Q)", d.clone()), json!(7));
    assert_eq!(eval("Enumerable.Sum(u.L, l => ((int) l.Q))", d.clone()), json!(7));
    assert_eq!(eval("u.N.Length", d), json!(4));
}

#[test]
fn dates() {
    let d = json!({"D": "2024-03-15T10:20:30.1234567Z"});
    assert_eq!(eval("u.D.Year", d.clone()), json!(2024));
    assert_eq!(eval("u.D.Month", d.clone()), json!(3));
    assert_eq!(eval("u.D.Date", d.clone()), json!("2024-03-15T00:00:00.0000000"));
    assert_eq!(eval("DateTime.Parse(\"2024-01-02\").Day", d.clone()), json!(2));
    assert_eq!(eval("new DateTime(u.D.Year, u.D.Month, 1)", d), json!("2024-03-01T00:00:00.0000000"));
}

#[test]
fn document_id_and_metadata() {
    let d = json!({"Name": "n"});
    assert_eq!(eval("Id(u)", d.clone()), json!("users/1"));
    assert_eq!(eval("u.Id", d.clone()), json!("users/1"));
    assert_eq!(eval("MetadataFor(u)[\"@collection\"]", d.clone()), json!("Users"));
    assert_eq!(eval("MetadataFor(u).Value<string>(\"@collection\")", d.clone()), json!("Users"));
    assert_eq!(eval("AsJson(u).Name", d.clone()), json!("n"));
    assert_eq!(eval("Id(u).ToString().Substring(Id(u).ToString().IndexOf('/') + 1)", d), json!("1"));
}

struct Loader(HashMap<String, Value>, Vec<String>);

impl DocumentLoader for Loader {
    fn load(&mut self, id: &str) -> Option<Value> {
        self.1.push(id.to_string());
        self.0.get(id).cloned()
    }
}

#[test]
fn load_document_records_ids() {
    let mut loader = Loader(HashMap::from([("companies/1".to_string(), json!({"Name": "Acme"}))]), Vec::new());
    let def = "from o in docs.Users let c = LoadDocument(o.Company, \"Companies\") select new { CompanyName = c.Name, CompanyId = Id(c), Missing = this.LoadDocument<Company>(o.Other).Name, Many = LoadDocument(o.All, \"X\").Select(x => x.Name) }";
    let out = map_with(def, "Users", json!({"Company": "companies/1", "Other": "companies/2", "All": ["companies/1"]}), &mut loader);
    assert_eq!(out, vec![json!({"CompanyName": "Acme", "CompanyId": "companies/1", "Missing": null, "Many": ["Acme"]})]);
    assert_eq!(loader.1, ["companies/1", "companies/2", "companies/1"]);
}

#[test]
fn created_and_spatial_fields() {
    let index = LinqIndex::compile(
        &["from u in docs.Users select new { u.Name, _ = u.Attrs.Select(a => CreateField(a.K, a.V, true, false)), Loc = CreateSpatialField(u.Lat, u.Lng), Shape = this.CreateSpatialField(u.Wkt) }"],
        None,
    )
    .unwrap();
    assert_eq!(index.output_fields(0), ["Name", "Loc", "Shape"]);
    let doc = json!({"Name": "n", "Attrs": [{"K": "color", "V": "red"}], "Lat": 1.5, "Lng": 2.5, "Wkt": "POINT(1 2)"});
    let e = index.map(0, "users/1", "Users", &doc, &json!({}), &mut NoDocuments).unwrap().remove(0);
    assert_eq!(Value::Object(e.fields), json!({"Name": "n"}));
    assert_eq!(e.created.len(), 1);
    assert_eq!(
        (e.created[0].name.as_str(), &e.created[0].value, e.created[0].stored, e.created[0].analyzed),
        ("color", &json!("red"), Some(true), Some(false))
    );
    assert_eq!(e.spatial[0], ("Loc".to_string(), SpatialValue::Point { lat: json!(1.5), lng: json!(2.5) }));
    assert_eq!(e.spatial[1], ("Shape".to_string(), SpatialValue::Wkt(json!("POINT(1 2)"))));
}

#[test]
fn query_syntax_reduce() {
    let index = LinqIndex::compile(
        &["from u in docs.Users select new { u.City, Count = 1 }"],
        Some("from result in results group result by result.City into g select new { City = g.Key, Count = g.Sum(x => x.Count) }"),
    )
    .unwrap();
    assert!(index.is_map_reduce());
    assert_eq!(index.group_by_fields(), ["City"]);
    assert_eq!(index.reduce_fields(), ["City", "Count"]);
    assert_eq!(index.group_key(&json!({"City": "Oslo", "Count": 1})).unwrap(), json!("Oslo"));
    let group = [json!({"City": "Oslo", "Count": 1}), json!({"City": "Oslo", "Count": 2}), json!({"City": "Rome", "Count": 1})];
    let out = index.reduce(&group).unwrap();
    assert_eq!(out, vec![json!({"City": "Oslo", "Count": 3}), json!({"City": "Rome", "Count": 1})]);
    // re-reducing its own output gives the same result
    assert_eq!(index.reduce(&out).unwrap(), out);
}

#[test]
fn composite_key_reduce() {
    let index = LinqIndex::compile(
        &["from o in docs.Orders select new { o.A, o.B, Total = o.T }"],
        Some("from r in results group r by new { r.A, r.B } into g select new { g.Key.A, g.Key.B, Total = g.Sum(x => x.Total) }"),
    )
    .unwrap();
    assert_eq!(index.group_by_fields(), ["A", "B"]);
    assert_eq!(index.group_key(&json!({"A": 1, "B": "x", "Total": 2})).unwrap(), json!({"A": 1, "B": "x"}));
    let out = index.reduce(&[json!({"A": 1, "B": "x", "Total": 2}), json!({"A": 1, "B": "x", "Total": 2.5})]).unwrap();
    assert_eq!(out, vec![json!({"A": 1, "B": "x", "Total": 4.5})]);
}

#[test]
fn method_syntax_reduce() {
    let index = LinqIndex::compile(
        &["docs.Users.Select(user => new {\n    Location = user.City,\n    Count = 1\n})"],
        Some("results.GroupBy(agg => agg.Location).Select(g => new {\n    Location = g.Key,\n    Count = Enumerable.Sum(g, x => ((int) x.Count))\n})"),
    )
    .unwrap();
    assert_eq!(index.group_by_fields(), ["Location"]);
    let out = index.reduce(&[json!({"Location": "a", "Count": 1}), json!({"Location": "a", "Count": 4})]).unwrap();
    assert_eq!(out, vec![json!({"Location": "a", "Count": 5})]);
}

#[test]
fn runtime_errors_do_not_panic() {
    let index = LinqIndex::compile(&["from doc in docs let x = 0 select new { Total = 3/x };"], None).unwrap();
    let e = index.map(0, "a/1", "A", &json!({}), &json!({}), &mut NoDocuments).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Runtime);
    assert_eq!(e.message, "Attempted to divide by zero");
    assert_eq!((e.line, e.column), (1, 49));
    // As in RavenDB, an integer divided by a missing member divides by zero.
    let index = LinqIndex::compile(&["from u in docs.Users select new { a = 5 / u.Age }"], None).unwrap();
    let e = index.map(0, "a/1", "Users", &json!({"age": 0}), &json!({}), &mut NoDocuments).unwrap_err();
    assert_eq!(e.message, "Attempted to divide by zero");
    let index = LinqIndex::compile(&["from u in docs.Users select new { v = u.S.Substring(10) }"], None).unwrap();
    assert!(index.map(0, "a/1", "Users", &json!({"S": "abc"}), &json!({}), &mut NoDocuments).is_err());
}

#[test]
fn step_budget_stops_pathological_expressions() {
    let def = "from u in docs.Users select new { v = u.N.SelectMany(a => u.N).SelectMany(b => u.N).SelectMany(c => u.N).Count() }";
    // Only the step budget: the memory budget would stop this map too.
    let budget = corvid_linq::Budget { steps: 10_000, bytes: u64::MAX, outputs: usize::MAX };
    let index = LinqIndex::compile(&[def], None).unwrap().with_budget(budget);
    let n: Vec<i64> = (0..100).collect();
    let e = index.map(0, "u/1", "Users", &json!({"N": n}), &json!({}), &mut NoDocuments).unwrap_err();
    assert!(e.message.contains("step budget"), "{e}");
    assert_eq!(e.kind, ErrorKind::LimitExceeded(corvid_linq::Limit::Steps));
}

#[test]
fn refused_constructs_have_positions() {
    assert_eq!(
        compile_err("from c in docs.C select new { Name = typeof(System.Xml.XmlNode).Name }"),
        (ErrorKind::Parse, "'typeof' is not supported".into(), 1, 38)
    );
    assert_eq!(
        compile_err("from c in docs.C\nselect new { N = c.Name.Frobnicate() }"),
        (ErrorKind::Compile, "Unsupported method 'Frobnicate'".into(), 2, 24)
    );
    assert_eq!(compile_err("from c in docs.C select new { N = foo }"), (ErrorKind::Compile, "Unknown name 'foo'".into(), 1, 35));
    assert_eq!(
        compile_err("from c in docs.C join d in docs.D on c.X equals d.Y select new { c.X }"),
        (ErrorKind::Parse, "'join' clauses are not supported".into(), 1, 18)
    );
    assert_eq!(compile_err("from c in docs.C select new { c.X + 1 }").1, "Anonymous object member needs a name: write 'Name = expression'");
    assert_eq!(compile_err("from c in docs.C select new { A = c.X & 1 }").1, "Bitwise operator '&' is not supported");
    assert_eq!(compile_err("from c in docs.C select new Foo { A = 1 }").1, "Creating objects of type 'Foo' is not supported");
    assert_eq!(compile_err("from c in docs.C select new { A = Frob(c) }").1, "Unsupported function 'Frob'");
    assert_eq!(compile_err("from c in docs.C select new { A = Math.Join(c) }").1, "Unsupported method 'Math.Join'");
    assert_eq!(
        compile_err("from c in docs.C select new { A = new TimeSpan(1) }").1,
        "Creating objects of type 'TimeSpan' is not supported"
    );
    assert_eq!(compile_err("from c in docs.C select new { A = \"x }"), (ErrorKind::Parse, "Unterminated string literal".into(), 1, 35));
    assert_eq!(compile_err("from users").1, "Expected 'in' but got end of text");
    assert_eq!(compile_err("new { A = 1 }").1, "A map must start from 'docs', 'docs.Collection', 'timeSeries' or 'counters'");
    let e = LinqIndex::compile(&["from c in docs.C select new { c.A }"], Some("from r in results select new { r.A }")).err().unwrap();
    assert_eq!(e.definition, "reduce");
    let e = LinqIndex::compile(&["from c in docs.C select new { c.A }"], Some("from r in docs group r by r.A into g select new { g.Key }"))
        .err()
        .unwrap();
    assert_eq!(e.message, "A reduce can only read 'results'");
    assert_eq!(compile_err("from r in results select new { r.A }").1, "'results' can only be used in a reduce");
    assert!(e.to_string().ends_with("of reduce"), "{e}");
}

#[test]
fn as_json_recurse_and_metadata_chain() {
    let d = json!({"A": 1, "B": "x", "Kids": [{"N": "k1", "Kids": [{"N": "k2"}]}]});
    assert_eq!(eval("AsJson(u).Select(x => x.Value)", d.clone()), json!([1, "x", [{"N": "k1", "Kids": [{"N": "k2"}]}]]));
    assert_eq!(eval("Recurse(u, x => x.Kids).Select(x => x.N)", d.clone()), json!([null, "k1", "k2"]));
    let out = map1(
        "docs.Users.Select(p => new { Product = p, Metadata = this.MetadataFor(p) }).Select(this_0 => new { Coll = this_0.Metadata.Value<string>(\"@collection\"), this_0.Product.B })",
        d,
    );
    assert_eq!(out, vec![json!({"Coll": "Users", "B": "x"})]);
}

#[test]
fn deepest_accepted_expressions_evaluate_without_overflow() {
    let sum = vec!["u.A"; 110].join(" + ");
    assert_eq!(eval(&sum, json!({"A": 1})), json!(110));
    let nested = format!("{}u.A{}", "(".repeat(55), " + 1)".repeat(55));
    assert_eq!(eval(&nested, json!({"A": 1})), json!(56));
    let chain = format!("u{}", ".A".repeat(110));
    assert_eq!(eval(&chain, json!({"A": 1})), Value::Null);
    let lambdas = format!("u.L{}", ".Select(x => x)".repeat(50));
    assert_eq!(eval(&lambdas, json!({"L": [1]})), json!([1]));
}

#[test]
fn edge_cases_fail_cleanly() {
    let d =
        json!({"S": "abc", "Big": [9223372036854775807i64, 1], "Z": "0000-01-01T00:00:00", "F": 3.0, "N": (0..3000).collect::<Vec<i64>>()});
    assert_eq!(eval("u.Z.DayOfWeek", d.clone()), json!(6));
    assert_eq!(eval("\"2024-03-15\".DayOfWeek", d.clone()), json!(5));
    assert_eq!(eval("u.F.ToString() + \"|\" + 2.5", d.clone()), json!("3|2.5"));
    let index = LinqIndex::compile(&["from u in docs.Users select new { v = u.S.Substring(9223372036854775807, 1) }"], None).unwrap();
    assert!(index.map(0, "u/1", "Users", &d, &json!({}), &mut NoDocuments).is_err());
    let index = LinqIndex::compile(&["from u in docs.Users select new { v = u.Big.Sum() }"], None).unwrap();
    let e = index.map(0, "u/1", "Users", &d, &json!({}), &mut NoDocuments).unwrap_err();
    assert_eq!(e.message, "Arithmetic operation resulted in an overflow");
    // quadratic work in Distinct counts against the budget
    let index =
        LinqIndex::compile(&["from u in docs.Users select new { v = u.N.Distinct().Count() }"], None).unwrap().with_step_budget(100_000);
    let e = index.map(0, "u/1", "Users", &d, &json!({}), &mut NoDocuments).unwrap_err();
    assert!(e.message.contains("step budget"), "{e}");
    assert_eq!(e.kind, ErrorKind::LimitExceeded(corvid_linq::Limit::Steps));
}

/// Callers may skip building metadata for maps that cannot read it; maps that can are told apart.
#[test]
fn maps_that_read_metadata_are_known() {
    let plain = LinqIndex::compile(&["from u in docs.Users select new { u.Name, Id = Id(u) }"], None).unwrap();
    assert!(!plain.reads_metadata());
    let e = plain.map_owned(0, "users/1", "Users", json!({"Name": "a"}), &Value::Null, &mut NoDocuments).unwrap().remove(0);
    assert_eq!(e.fields["Id"], json!("users/1"));
    for source in [
        "from u in docs.Users select new { C = MetadataFor(u)[\"@collection\"] }",
        "from u in docs.Users select new { C = u[\"@metadata\"][\"@collection\"] }",
        "from u in docs.Users select new { J = AsJson(u) }",
    ] {
        assert!(LinqIndex::compile(&[source], None).unwrap().reads_metadata(), "{source}");
    }
}

/// `DateTime - DateTime` is a TimeSpan, indexed as its .NET ticks (100 ns), the form clients send TimeSpan
/// query parameters in; across a leap day, a year boundary and with fractions of a second.
#[test]
fn date_subtraction_gives_timespan_ticks() {
    let doc = json!({"Shipped": "2024-03-01T01:00:00.0000000", "Ordered": "2024-02-28T23:00:00.0000000", "At": "2023-12-31T23:59:59.5Z"});
    assert_eq!(eval("u.Shipped - ((DateTime?)u.Ordered)", doc.clone()), json!(2 * 3600 * 10_000_000i64 + 24 * 3600 * 10_000_000i64));
    assert_eq!(eval("u.Ordered - u.Shipped", doc.clone()), json!(-(26 * 3600 * 10_000_000i64)));
    // 2024-01-01T00:00:00 minus 2023-12-31T23:59:59.5: half a second.
    assert_eq!(eval("DateTime.Parse(\"2024-01-01\") - u.At", doc.clone()), json!(5_000_000));
    // .NET: new DateTime(2000, 1, 1).Ticks == 630822816000000000.
    assert_eq!(eval("u.Ordered - \"0001-01-01T00:00:00\"", json!({"Ordered": "2000-01-01T00:00:00"})), json!(630_822_816_000_000_000i64));
    // Other strings still do not subtract.
    assert!(LinqIndex::compile(&["from u in docs.Users select new { v = u.A - u.B }"], None)
        .unwrap()
        .map(0, "users/1", "Users", &json!({"A": "x", "B": "y"}), &json!({}), &mut NoDocuments)
        .is_err());
}
