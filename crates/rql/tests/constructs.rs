//! One test per construct, checking the tree the parser builds.

use corvid_rql::*;

fn q(text: &str) -> Query {
    parse(text).unwrap_or_else(|e| panic!("{text}\n  -> {e}"))
}

fn where_of(text: &str) -> Expr {
    q(text).where_clause.expect("a where clause")
}

fn field(p: &FieldPath) -> String {
    p.to_string()
}

fn param(name: &str) -> ValueKind {
    ValueKind::Parameter(name.into())
}

#[track_caller]
fn as_field(o: &Operand) -> String {
    match o {
        Operand::Field(p) => field(p),
        other => panic!("not a field: {other:?}"),
    }
}

#[track_caller]
fn as_call(e: &Expr) -> &Call {
    match e {
        Expr::Method(c) => c,
        other => panic!("not a method: {other:?}"),
    }
}

#[test]
fn from_sources_and_aliases() {
    let query = q("from Users");
    assert!(matches!(&query.from.source, FromSource::Collection { name, span } if name == "Users" && *span == Span::new(5, 10)));
    assert!(query.from.alias.is_none());

    let query = q("from 'Users' as u");
    assert!(matches!(&query.from.source, FromSource::Collection { name, .. } if name == "Users"));
    assert_eq!(query.from.alias.as_ref().unwrap().name, "u");
    assert_eq!(query.from.span, Span::new(0, 17));

    assert_eq!(q("from Users u where u.Age > 1").from.alias.unwrap().name, "u");
    assert!(matches!(q("from @all_docs").from.source, FromSource::AllDocs { .. }));
    assert!(matches!(q("from '@all_docs'").from.source, FromSource::AllDocs { .. }));
    assert!(matches!(q("from @ALL_DOCS").from.source, FromSource::AllDocs { .. }));

    let query = q("from index 'Orders/ByCompany' as o");
    assert!(matches!(&query.from.source, FromSource::Index { name, .. } if name == "Orders/ByCompany"));
    assert_eq!(query.from.alias.unwrap().name, "o");
    assert!(matches!(&q("from INDEX Simple").from.source, FromSource::Index { name, .. } if name == "Simple"));
}

#[test]
fn filter_is_an_alias_only_before_a_keyword() {
    let query = q("from Users filter Age > 5");
    assert!(query.from.alias.is_none());
    assert!(query.filter.is_some());
    let query = q("from Users filter where filter.Age > 5");
    assert_eq!(query.from.alias.unwrap().name, "filter");
    assert!(query.filter.is_none());
}

#[test]
fn keywords_are_case_insensitive() {
    let query = q("FROM Users AS u WHERE u.Name = 'x' AND NOT u.Age BETWEEN 1 AND 2 ORDER BY u.Name DESC SELECT u.Name LIMIT 5");
    assert!(matches!(query.where_clause, Some(Expr::And(..))));
    assert!(query.order_by[0].descending);
    assert_eq!(query.limit.unwrap().kind, ValueKind::Long(5));
}

#[test]
fn field_paths() {
    let e = where_of("from Orders where Lines[].Product = 'x' and Items[2].Name = 'y' and 'First Name' = 'z'");
    let Expr::And(left, third) = e else { panic!() };
    let Expr::And(first, second) = *left else { panic!() };
    let Expr::Compare { left: Operand::Field(p), .. } = *first else { panic!() };
    assert_eq!(
        p.segments,
        vec![
            PathSegment::Field { name: "Lines".into(), quoted: false },
            PathSegment::AllElements,
            PathSegment::Field { name: "Product".into(), quoted: false },
        ]
    );
    assert_eq!(p.dotted(), "Lines[].Product");
    assert_eq!(p.span, Span::new(18, 33));
    let Expr::Compare { left: Operand::Field(p), .. } = *second else { panic!() };
    assert_eq!(p.segments[1], PathSegment::Index(2));
    assert_eq!(p.dotted(), "Items[2].Name");
    let Expr::Compare { left: Operand::Field(p), right: Operand::Value(v), .. } = *third else { panic!() };
    assert_eq!(p.segments, vec![PathSegment::Field { name: "First Name".into(), quoted: true }]);
    assert_eq!(v.kind, ValueKind::String("z".into()));
}

#[test]
fn metadata_paths_and_alias_stripping() {
    let e = where_of("from Users as u where u.'@metadata'.'@collection' = 'Users'");
    let Expr::Compare { left: Operand::Field(p), .. } = e else { panic!() };
    let stripped = p.strip_alias("u").unwrap();
    assert_eq!(stripped.dotted(), "@metadata.@collection");
    assert!(p.strip_alias("x").is_none());
    let e = where_of("from Users where @metadata.@id = 'a'");
    let Expr::Compare { left, .. } = e else { panic!() };
    assert_eq!(as_field(&left), "@metadata.@id");
}

#[test]
fn comparison_operators() {
    let cases = [("=", CompareOp::Eq), ("==", CompareOp::Eq), ("!=", CompareOp::NotEq), ("<>", CompareOp::NotEq)];
    let more = [("<", CompareOp::Lt), ("<=", CompareOp::Le), (">", CompareOp::Gt), (">=", CompareOp::Ge)];
    for (text, expected) in cases.into_iter().chain(more) {
        let Expr::Compare { left, op, right, span } = where_of(&format!("from U where Age {text} $p0")) else { panic!() };
        assert_eq!(op, expected, "{text}");
        assert_eq!(as_field(&left), "Age");
        assert!(matches!(right, Operand::Value(Value { kind: ValueKind::Parameter(ref p), .. }) if p == "p0"));
        assert_eq!(span.start, 13);
    }
}

#[test]
fn values() {
    let Expr::In { values, .. } = where_of("from U where X in ('a', \"b\", 1, -2, 3.5, true, false, null, $p, 10_000)") else { panic!() };
    let kinds: Vec<ValueKind> = values.into_iter().map(|v| v.kind).collect();
    assert_eq!(
        kinds,
        vec![
            ValueKind::String("a".into()),
            ValueKind::String("b".into()),
            ValueKind::Long(1),
            ValueKind::Long(-2),
            ValueKind::Double(3.5),
            ValueKind::Bool(true),
            ValueKind::Bool(false),
            ValueKind::Null,
            param("p"),
            ValueKind::Long(10_000),
        ]
    );
}

#[test]
fn right_side_can_be_a_field_or_a_call() {
    let Expr::Compare { right, .. } = where_of("from U where A = B.C") else { panic!() };
    assert_eq!(as_field(&right), "B.C");
    let Expr::Compare { right: Operand::Call(c), .. } = where_of("from U where Ref = cmpxchg($p0)") else { panic!() };
    assert!(c.is("CmpXchg"));
    assert_eq!(c.args, vec![Arg::Value(Value { kind: param("p0"), span: Span::new(27, 30) })]);
    let Expr::Compare { left: Operand::Call(c), .. } = where_of("from U where id() = 'users/1'") else { panic!() };
    assert_eq!(c.name, "id");
    assert!(c.args.is_empty());
    assert_eq!(c.span, Span::new(13, 17));
}

#[test]
fn between_and_in() {
    let Expr::Between { operand, low, high, span } = where_of("from U where Age between 1 and $p1") else { panic!() };
    assert_eq!(as_field(&operand), "Age");
    assert_eq!(low.kind, ValueKind::Long(1));
    assert_eq!(high.kind, param("p1"));
    assert_eq!(span, Span::new(13, 34));

    let Expr::In { all, values, .. } = where_of("from U where Tags in ($p0)") else { panic!() };
    assert!(!all);
    assert_eq!(values.len(), 1);
    let Expr::In { all, values, .. } = where_of("from U where Tags all in ('a', 'b')") else { panic!() };
    assert!(all);
    assert_eq!(values.len(), 2);
    let Expr::In { values, .. } = where_of("from U where Tags in ()") else { panic!() };
    assert!(values.is_empty());
}

#[test]
fn precedence_not_and_or() {
    // a or b and not c  ==  a or (b and (not c))
    let Expr::Or(a, rest) = where_of("from U where A = 1 or B = 2 and not C = 3") else { panic!() };
    assert!(matches!(*a, Expr::Compare { .. }));
    let Expr::And(b, not_c) = *rest else { panic!() };
    assert!(matches!(*b, Expr::Compare { .. }));
    assert!(matches!(*not_c, Expr::Not { .. }));

    // a and b or c  ==  (a and b) or c
    let Expr::Or(ab, c) = where_of("from U where A = 1 and B = 2 or C = 3") else { panic!() };
    assert!(matches!(*ab, Expr::And(..)));
    assert!(matches!(*c, Expr::Compare { .. }));

    // and not applies to the left-most operand only
    let Expr::And(not_b, c) = where_of("from U where exists(A) and not B = 2 and C = 3").clone() else { panic!() };
    let Expr::And(_, not_b) = *not_b else { panic!() };
    assert!(matches!(*not_b, Expr::Not { .. }));
    assert!(matches!(*c, Expr::Compare { .. }));

    // parentheses
    let Expr::And(ab, _) = where_of("from U where (A = 1 or B = 2) and C = 3") else { panic!() };
    assert!(matches!(*ab, Expr::Or(..)));

    // left-assoc chains
    let Expr::Or(left, _) = where_of("from U where A = 1 or B = 2 or C = 3") else { panic!() };
    assert!(matches!(*left, Expr::Or(..)));
}

#[test]
fn true_and_not() {
    let Expr::And(t, n) = where_of("from U where true and not Name = $p0") else { panic!() };
    assert!(matches!(*t, Expr::True(s) if s == Span::new(13, 17)));
    let Expr::Not { expr, span } = *n else { panic!() };
    assert_eq!(span, Span::new(22, 36));
    assert!(matches!(*expr, Expr::Compare { .. }));
    // A field called `true` still compares.
    assert!(matches!(where_of("from U where true = 1"), Expr::Compare { .. }));
}

#[test]
fn methods_with_nested_predicates() {
    let e = where_of("from U where boost(search(Name, $p0, and), 10)");
    let boost = as_call(&e);
    assert!(boost.is("boost"));
    let Arg::Call(search) = &boost.args[0] else { panic!("{:?}", boost.args[0]) };
    assert_eq!(search.args.len(), 3);
    assert_eq!(search.args[2].as_field().unwrap().dotted(), "and");
    assert_eq!(boost.args[1], Arg::Value(Value { kind: ValueKind::Long(10), span: Span::new(43, 45) }));

    let e = where_of("from U where boost(Name = $p0 or Name = $p1, 2)");
    assert!(matches!(&as_call(&e).args[0], Arg::Expr(Expr::Or(..))));

    let e = where_of("from U where boost((A = 1 or B = 2), $p1)");
    assert!(matches!(&as_call(&e).args[0], Arg::Expr(Expr::Or(..))));

    let e = where_of("from U where exact(Name in ($p0))");
    assert!(matches!(&as_call(&e).args[0], Arg::Expr(Expr::In { .. })));

    let e = where_of("from U where intersect(A = $p0, B between 1 and 2, exists(C))");
    let args = &as_call(&e).args;
    assert!(matches!(&args[0], Arg::Expr(Expr::Compare { .. })));
    assert!(matches!(&args[1], Arg::Expr(Expr::Between { .. })));
    assert!(matches!(&args[2], Arg::Call(c) if c.is("exists")));

    let e = where_of("from U where moreLikeThis(id() = $p0, $p1)");
    assert!(matches!(&as_call(&e).args[0], Arg::Expr(Expr::Compare { left: Operand::Call(_), .. })));

    let e = where_of("from U where search('First Name', $p0)");
    let first = &as_call(&e).args[0];
    assert!(matches!(first, Arg::Value(_)));
    assert_eq!(first.as_field().unwrap().segments, vec![PathSegment::Field { name: "First Name".into(), quoted: true }]);
}

#[test]
fn spatial_calls() {
    let e = where_of("from U where spatial.within(spatial.point(Lat, Lng), spatial.circle($p0, $p1, $p2, 'Miles'))");
    let within = as_call(&e);
    assert_eq!(within.name, "spatial.within");
    assert_eq!(within.name_span, Span::new(13, 27));
    let Arg::Call(point) = &within.args[0] else { panic!() };
    assert_eq!(point.name, "spatial.point");
    assert_eq!(point.args.len(), 2);
    let Arg::Call(circle) = &within.args[1] else { panic!() };
    assert_eq!(circle.args.len(), 4);
    let e = where_of("from U where spatial.intersects(WKT, spatial.wkt($p0), 0)");
    assert_eq!(as_call(&e).args.len(), 3);
}

#[test]
fn methods_combined_with_and_or_inside_arguments() {
    let e = where_of("from U where boost(exists(A) and B = 1, 2)");
    let Arg::Expr(Expr::And(a, _)) = &as_call(&e).args[0] else { panic!() };
    assert!(matches!(**a, Expr::Method(_)));
}

#[test]
fn group_by() {
    let query = q("from Orders group by Company, array(Lines[].Product) as P, ShipTo.Country");
    assert_eq!(query.group_by.len(), 3);
    assert_eq!(as_field(&query.group_by[0].expr), "Company");
    let Operand::Call(c) = &query.group_by[1].expr else { panic!() };
    assert!(c.is("array"));
    assert_eq!(c.args[0].as_field().unwrap().dotted(), "Lines[].Product");
    assert_eq!(query.group_by[1].alias.as_ref().unwrap().name, "P");
}

#[test]
fn filter_after_where_and_load_with_parameters() {
    let query = q("from Employees as e where e.Title = $t load e.Manager as m filter m.Age > $a and startsWith(e.Name, 'A') \
        select e.Name limit 5 filter_limit $n");
    assert!(query.where_clause.is_some() && query.load.len() == 1 && query.select.is_some());
    let Some(Expr::And(left, right)) = &query.filter else { panic!("{:?}", query.filter) };
    let Expr::Compare { left: Operand::Field(path), right: Operand::Value(v), .. } = &**left else { panic!() };
    assert_eq!(path.dotted(), "m.Age");
    assert_eq!(v.kind, param("a"));
    assert!(matches!(&**right, Expr::Method(c) if c.is("startsWith")));
    assert_eq!(query.filter_limit.unwrap().kind, param("n"));
    let query = q("from index 'Orders/ByCompany' filter Count > 10");
    assert!(matches!(query.from.source, FromSource::Index { .. }) && query.filter.is_some());
}

#[test]
fn order_by() {
    let query = q(
        "from U order by Name, Age as long desc, Price as DOUBLE ascending, Code as alphanumeric, Title as string descending nulls first",
    );
    let o = &query.order_by;
    assert_eq!(o.len(), 5);
    assert_eq!((o[0].ordering, o[0].descending, o[0].nulls), (None, false, None));
    assert_eq!((o[1].ordering, o[1].descending), (Some(OrderingType::Long), true));
    assert_eq!(o[1].span, Span::new(22, 38));
    assert_eq!((o[2].ordering, o[2].descending), (Some(OrderingType::Double), false));
    assert_eq!(o[3].ordering, Some(OrderingType::AlphaNumeric));
    assert_eq!((o[4].ordering, o[4].descending, o[4].nulls), (Some(OrderingType::String), true, Some(NullsOrder::First)));

    let query = q("from U order by score() desc, random('seed'), random(), spatial.distance(C, spatial.point($a, $b), $r)");
    let names: Vec<String> = query
        .order_by
        .iter()
        .map(|o| match &o.expr {
            Operand::Call(c) => c.name.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(names, ["score", "random", "random", "spatial.distance"]);
    assert!(query.order_by[0].descending);
}

#[test]
fn load() {
    let query = q("from Orders as o load o.Company as c, o.Employee e select c.Name");
    assert_eq!(query.load.len(), 2);
    assert_eq!(query.load[0].path.dotted(), "o.Company");
    assert_eq!(query.load[0].alias.name, "c");
    assert_eq!(query.load[1].alias.name, "e");
    assert_eq!(query.load[1].span, Span::new(38, 50));
}

#[test]
fn select_fields() {
    let select = q("from U select distinct Name, Address.City as City, count(), key() as 'Company Key', 5 as Five").select.unwrap();
    assert!(select.distinct);
    let Projection::Fields(fields) = select.projection else { panic!() };
    assert_eq!(fields.len(), 5);
    assert!(matches!(&fields[0].expr, SelectExpr::Field(p) if p.dotted() == "Name"));
    assert_eq!(fields[1].alias.as_ref().unwrap().name, "City");
    assert!(matches!(&fields[2].expr, SelectExpr::Call(c) if c.is("count")));
    assert_eq!(fields[3].alias.as_ref().unwrap().name, "Company Key");
    assert!(matches!(&fields[4].expr, SelectExpr::Value(Value { kind: ValueKind::Long(5), .. })));
    assert_eq!(select.span, Span::new(7, 93));
}

#[test]
fn select_star_and_js() {
    assert!(matches!(q("from U select *").select.unwrap().projection, Projection::All));
    let s = q("from U select distinct *").select.unwrap();
    assert!(s.distinct && matches!(s.projection, Projection::All));

    let text = "from Employees as e select { Name: e.FirstName + ' }' , Nested: { A: 1 } } limit 5";
    let query = q(text);
    let Projection::Js(js) = query.select.unwrap().projection else { panic!() };
    assert_eq!(js.source, "{ Name: e.FirstName + ' }' , Nested: { A: 1 } }");
    assert_eq!(js.span.text(text), js.source);
    assert_eq!(query.limit.unwrap().kind, ValueKind::Long(5));
}

#[test]
fn declared_functions() {
    let text =
        "declare function output(e, x) {\n  var s = '{'; // }\n  return { N: e.Name + s };\n}\nfrom Employees as e select output(e, 1)";
    let query = q(text);
    let d = &query.declared_functions[0];
    assert_eq!(d.kind, DeclarationKind::Function);
    assert_eq!(d.name.name, "output");
    assert_eq!(d.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["e", "x"]);
    assert!(d.body.source.starts_with('{') && d.body.source.ends_with('}'));
    assert_eq!(d.body.span.text(text), d.body.source);
    let q2 = q("declare function noArgs() { return 1; } from U select noArgs()");
    assert!(q2.declared_functions[0].params.is_empty());
    let q3 = q("declare timeseries ts(x) { from x.HR last 1 hour } from U as u select ts(u)");
    assert_eq!(q3.declared_functions[0].kind, DeclarationKind::TimeSeries);
}

#[test]
fn select_timeseries_subquery_is_raw() {
    let text = "from U select timeseries(from HeartRate between $a and $b group by '1 hour' select max()) as HR, Name";
    let query = q(text);
    let Projection::Fields(fields) = query.select.unwrap().projection else { panic!() };
    let SelectExpr::TimeSeries(raw) = &fields[0].expr else { panic!() };
    assert!(raw.source.starts_with("(from HeartRate") && raw.source.ends_with("max())"));
    assert_eq!(fields[0].alias.as_ref().unwrap().name, "HR");
    assert_eq!(fields[0].span.start, 14);
    assert!(matches!(&fields[1].expr, SelectExpr::Field(_)));
}

#[test]
fn facets_and_suggestions() {
    let query = q("from Cameras select facet(Brand, sum(Units) as Total, avg(Price)) as 'Camera Brand', facet(Price < $p0, Price >= $p1 and Price < $p2)");
    let Projection::Fields(fields) = query.select.unwrap().projection else { panic!() };
    let SelectExpr::Call(f0) = &fields[0].expr else { panic!() };
    assert!(matches!(&f0.args[1], Arg::Aliased { alias, .. } if alias.name == "Total"));
    let SelectExpr::Call(f1) = &fields[1].expr else { panic!() };
    assert!(matches!(&f1.args[0], Arg::Expr(Expr::Compare { op: CompareOp::Lt, .. })));
    assert!(matches!(&f1.args[1], Arg::Expr(Expr::And(..))));
    let query = q("from P select suggest(Name, $p0, $p1) as Alt");
    let Projection::Fields(fields) = query.select.unwrap().projection else { panic!() };
    assert!(matches!(&fields[0].expr, SelectExpr::Call(c) if c.is("suggest") && c.args.len() == 3));
}

#[test]
fn includes() {
    let query = q("from U as u include Company, 'Lines[].Product', counters(u, 'Likes'), timeseries(u, 'HR', last(10)), cmpxchg('Ref'), revisions($p0), highlight(Body, 128, 1, $p1), explanations(), timings()");
    let inc = &query.include;
    assert_eq!(inc.len(), 9);
    assert!(matches!(&inc[0], IncludeItem::Path(p) if p.dotted() == "Company"));
    assert!(
        matches!(&inc[1], IncludeItem::Path(p) if p.segments == vec![PathSegment::Field { name: "Lines[].Product".into(), quoted: true }])
    );
    let names: Vec<&str> = inc[2..]
        .iter()
        .map(|i| match i {
            IncludeItem::Call(c) => c.name.as_str(),
            _ => panic!(),
        })
        .collect();
    assert_eq!(names, ["counters", "timeseries", "cmpxchg", "revisions", "highlight", "explanations", "timings"]);
}

#[test]
fn include_before_or_after_paging() {
    let a = q("from U select Name include Company limit 5");
    let b = q("from U select Name limit 5 include Company");
    assert_eq!(a.include.len(), 1);
    assert_eq!(b.include.len(), 1);
    assert_eq!(a.limit.unwrap().kind, b.limit.unwrap().kind);
}

#[test]
fn paging() {
    let query = q("from U limit $p0, $p1");
    assert_eq!(query.offset.unwrap().kind, param("p0"));
    assert_eq!(query.limit.unwrap().kind, param("p1"));
    let query = q("from U limit 10 offset 20");
    assert_eq!(query.limit.unwrap().kind, ValueKind::Long(10));
    assert_eq!(query.offset.unwrap().kind, ValueKind::Long(20));
    let query = q("from U offset 3");
    assert!(query.limit.is_none());
    assert_eq!(query.offset.unwrap().kind, ValueKind::Long(3));
    let query = q("from U filter A = 1 filter_limit 50");
    assert_eq!(query.filter_limit.unwrap().kind, ValueKind::Long(50));
    let query = q("from U limit 0");
    assert_eq!(query.limit.unwrap().span, Span::new(13, 14));
}

#[test]
fn update() {
    let text = "from Users as u where u.Age > 30 update { this.Flag = true; this.S = \"}\"; }";
    let query = q(text);
    let u = query.update.unwrap();
    assert_eq!(u.source, "{ this.Flag = true; this.S = \"}\"; }");
    assert_eq!(u.span.text(text), u.source);
    assert!(query.select.is_none());
    let query = q("from U update { } limit 5");
    assert_eq!(query.limit.unwrap().kind, ValueKind::Long(5));
}

#[test]
fn full_clause_order() {
    let query = q("declare function f(x) { return x; }
        from Orders as o
        group by Company
        where count() > 5
        order by count() as long desc
        load o.Company as c
        filter c.Name != null
        select f(o) as R
        include Company
        limit 10 offset 2
        filter_limit 100");
    assert_eq!(query.declared_functions.len(), 1);
    assert_eq!(query.group_by.len(), 1);
    assert!(query.where_clause.is_some() && query.filter.is_some() && query.select.is_some());
    assert_eq!(query.order_by.len(), 1);
    assert_eq!(query.load.len(), 1);
    assert_eq!(query.include.len(), 1);
    assert!(query.limit.is_some() && query.offset.is_some() && query.filter_limit.is_some());
}

#[test]
fn comments_and_whitespace() {
    let query = q("from Users\n\t// where is commented out\r\n/* where X = 1 */ where Name = 'a'");
    assert!(query.where_clause.is_some());
}

#[test]
fn display_is_canonical_rql() {
    let query = q("FROM 'Users' u WHERE u.Name == 'O''Neil' AND NOT (A = 1 OR B <> 2) ORDER BY Age AS LONG DESCENDING LIMIT 5, 10");
    assert_eq!(
        query.to_string(),
        "from 'Users' as u where u.Name = 'O\\'Neil' and not (A = 1 or B != 2) order by Age as long desc limit 10 offset 5"
    );
    let query = q("from U where A = 1 and (B = 2 or C = 3)");
    assert_eq!(query.to_string(), "from 'U' where A = 1 and (B = 2 or C = 3)");
    let query = q("from U where Ratio > 2.0 and Big < 1.5");
    assert_eq!(query.to_string(), "from 'U' where Ratio > 2.0 and Big < 1.5");
}

#[test]
fn nesting_up_to_the_limit_is_accepted() {
    let depth = 100;
    let text = format!("from U where {}A = 1{}", "(".repeat(depth), ")".repeat(depth));
    assert!(matches!(parse(&text).unwrap().where_clause, Some(Expr::Compare { .. })));
    let text = format!("from U where {}A = 1", "not ".repeat(depth));
    assert!(parse(&text).is_ok());
    let text = format!("from U where {}x{}", "f(".repeat(depth), ")".repeat(depth));
    assert!(parse(&text).is_ok());
}

#[test]
fn a_trailing_comma_closes_an_argument_list() {
    // What the clients write for `include_time_series(name, from, to)`.
    let query = q("from U include timeseries('HR', '2024-01-01T00:00:00.0000000', '2024-01-02T00:00:00.0000000', )");
    let IncludeItem::Call(call) = &query.include[0] else { panic!() };
    assert_eq!(call.args.len(), 3);
    assert!(corvid_rql::parse("from U include timeseries('HR', , )").is_err(), "an empty argument is still an error");
    assert!(corvid_rql::parse("from U include timeseries(,)").is_err());
}
