use serde_json::{Value, json};

use super::*;

fn state() -> Value {
    json!({
        "nuon": {
            "install": { "id": "inst1", "sandbox": { "outputs": { "region": "eu-west-1" } } },
            "components": {
                "db": { "outputs": { "port": 5432, "ok": true, "hosts": ["a", "b"], "tags": { "env": "prod", "team": "core" }, "none": [] } }
            },
            "inputs": { "inputs": { "name": "acme", "empty": "" } }
        }
    })
}

/// Parses and renders, whether or not the text names `.nuon` (the engine itself; `render` skips
/// strings that are not templates).
fn engine(src: &str) -> Result<String, TemplateError> {
    Template::parse(src)?.render(&state(), Mode::Strict)
}

fn r(src: &str) -> String {
    engine(src).unwrap_or_else(|e| panic!("{src}: {e}"))
}

fn err(src: &str) -> TemplateError {
    engine(src).expect_err(src)
}

#[test]
fn strings_without_nuon_pass_through_unparsed() {
    assert_eq!(
        render("role for {{nuon.install.id}}", &state()).unwrap(),
        "role for {{nuon.install.id}}"
    );
    assert_eq!(render("{{ nonsense", &state()).unwrap(), "{{ nonsense");
    assert_eq!(render("{{.nuon.install.id}}", &state()).unwrap(), "inst1");
    assert!(!is_template("{{ .install.id }}"));
}

#[test]
fn hostile_templates_stop_with_located_errors() {
    let nested = format!("{}x{}", "{{if .nuon}}".repeat(300), "{{end}}".repeat(300));
    let e = Template::parse(&nested).unwrap_err();
    assert!(e.to_string().contains("nested more than 100 deep"), "{e}");
    assert_eq!(e.offset(), 100 * "{{if .nuon}}".len());
    let parens = format!("{{{{ {}1{} }}}}", "(".repeat(200), ")".repeat(200));
    assert!(
        Template::parse(&parens)
            .unwrap_err()
            .to_string()
            .contains("parentheses nested")
    );
    let loops = "{{range 100000}}{{range 100000}}{{range 100000}}x{{end}}{{end}}{{end}}";
    let e = err(loops);
    assert!(e.to_string().contains("more than 200000 steps"), "{e}");
    // Lenient mode (validation) is bounded the same way.
    let e = Template::parse(loops)
        .unwrap()
        .render(&state(), Mode::Lenient)
        .unwrap_err();
    assert!(e.to_string().contains("steps"), "{e}");
    let doubling = "{{$x := \"0123456789abcdef\"}}{{range 40}}{{$x = print $x $x}}{{end}}";
    let e = err(doubling);
    assert!(e.to_string().contains("larger than 1048576 bytes"), "{e}");
    assert!(e.offset() > 0);
}

#[test]
fn fields_and_text() {
    assert_eq!(r("id={{.nuon.install.id}}"), "id=inst1");
    assert_eq!(r("{{ .nuon.components.db.outputs.port }}"), "5432");
    assert_eq!(r("{{.ferry.components.db.outputs.ok}}"), "true");
    assert_eq!(r("{{ $.ferry.install.id }}"), "inst1");
    assert_eq!(r("no templates"), "no templates");
    assert_eq!(r(""), "");
    // Go's printing of a list, as Nuon renders it (toJson gives JSON).
    assert_eq!(r("{{.nuon.components.db.outputs.hosts}}"), "[a b]");
    assert_eq!(
        r("{{ toJson .nuon.components.db.outputs.hosts }}"),
        r#"["a","b"]"#
    );
}

#[test]
fn trim_markers_and_comments() {
    assert_eq!(r("a  {{- .nuon.install.id -}}  b"), "ainst1b");
    assert_eq!(r("a {{/* a comment with }} inside */}} b"), "a  b");
    assert_eq!(r("a {{- /* gone */ -}} b"), "ab");
    assert_eq!(r("x\n  {{- \"y\" }}"), "xy");
}

#[test]
fn pipelines_and_functions() {
    assert_eq!(r(r#"{{ .nuon.inputs.inputs.name | upper }}"#), "ACME");
    assert_eq!(
        r(r#"{{ .nuon.inputs.inputs.empty | default "fallback" }}"#),
        "fallback"
    );
    assert_eq!(
        r(r#"{{ .nuon.inputs.inputs.name | default "fallback" }}"#),
        "acme"
    );
    assert_eq!(
        r(r#"{{ .nuon.components.db.outputs.hosts | join "," }}"#),
        "a,b"
    );
    assert_eq!(
        r(r#"{{ index .nuon.components.db.outputs.tags "env" }}"#),
        "prod"
    );
    assert_eq!(r(r#"{{ index .nuon.components.db.outputs.hosts 1 }}"#), "b");
    assert_eq!(r(r#"{{ .nuon.install.id | quote }}"#), r#""inst1""#);
    assert_eq!(r(r#"{{ "hi" | b64enc }}"#), "aGk=");
    assert_eq!(r(r#"{{ "aGk=" | b64dec }}"#), "hi");
    assert_eq!(
        r(r#"{{ .nuon.components.db.outputs.tags | toJson }}"#),
        r#"{"env":"prod","team":"core"}"#
    );
    assert_eq!(r(r#"{{ "MiXeD" | lower }}"#), "mixed");
    assert_eq!(r(r#"{{ printf "%s-%d" .nuon.install.id 7 }}"#), "inst1-7");
    assert_eq!(
        r(r#"{{ (index .nuon.components.db.outputs.hosts 0) | upper }}"#),
        "A"
    );
    assert_eq!(r(r#"{{ (.nuon.components.db.outputs).port }}"#), "5432");
    assert_eq!(r(r#"{{ len .nuon.components.db.outputs.hosts }}"#), "2");
    assert_eq!(r(r#"{{ replace "-" "_" "a-b-c" }}"#), "a_b_c");
    assert_eq!(r(r#"{{ "a,b" | splitList "," | join "+" }}"#), "a+b");
    assert_eq!(r(r#"{{ `raw \n` }}"#), r"raw \n");
    assert_eq!(r(r#"{{ "esc\t\"q\"" }}"#), "esc\t\"q\"");
}

#[test]
fn control_structures() {
    assert_eq!(
        r(r#"{{ if .nuon.components.db.outputs.ok }}yes{{ else }}no{{ end }}"#),
        "yes"
    );
    assert_eq!(
        r(
            r#"{{ if eq .nuon.install.id "x" }}x{{ else if eq .nuon.install.id "inst1" }}one{{ else }}other{{ end }}"#
        ),
        "one"
    );
    assert_eq!(
        r(r#"{{ if not .nuon.inputs.inputs.empty }}empty{{ end }}"#),
        "empty"
    );
    assert_eq!(
        r(
            r#"{{ if and .nuon.components.db.outputs.ok (gt .nuon.components.db.outputs.port 1000.0) }}big{{ end }}"#
        ),
        "big"
    );
    assert_eq!(
        r(r#"{{ range .nuon.components.db.outputs.hosts }}[{{ . }}]{{ end }}"#),
        "[a][b]"
    );
    assert_eq!(
        r(r#"{{ range $i, $h := .nuon.components.db.outputs.hosts }}{{ $i }}={{ $h }};{{ end }}"#),
        "0=a;1=b;"
    );
    assert_eq!(
        r(r#"{{ range $k, $v := .nuon.components.db.outputs.tags }}{{ $k }}:{{ $v }} {{ end }}"#),
        "env:prod team:core "
    );
    assert_eq!(
        r(r#"{{ range .nuon.components.db.outputs.none }}x{{ else }}none{{ end }}"#),
        "none"
    );
    assert_eq!(
        r(r#"{{ with .nuon.components.db.outputs }}{{ .port }}{{ end }}"#),
        "5432"
    );
    assert_eq!(
        r(r#"{{ with .nuon.inputs.inputs.empty }}set{{ else }}unset{{ end }}"#),
        "unset"
    );
    assert_eq!(
        r(r#"{{ $x := .nuon.install.id }}{{ $x }}-{{ $x = "y" }}{{ $x }}"#),
        "inst1-y"
    );
    assert_eq!(
        r(r#"{{ range .nuon.components.db.outputs.hosts }}{{ $.nuon.install.id }}{{ end }}"#),
        "inst1inst1"
    );
}

#[test]
fn errors_carry_offsets() {
    assert_eq!(
        err("ab{{.nuon.nope}}"),
        TemplateError::Missing {
            offset: 4,
            path: ".nuon.nope".into()
        }
    );
    assert_eq!(err("x {{ .nuon.install.id").offset(), 2);
    assert!(
        matches!(err("{{ frobnicate .x }}"), TemplateError::Syntax { offset: 3, ref message } if message == "unknown function `frobnicate`")
    );
    assert!(
        matches!(err("{{ uper .x }}"), TemplateError::Syntax { ref message, .. } if message.contains("did you mean `upper`"))
    );
    assert!(
        matches!(err("{{ if .x }}"), TemplateError::Syntax { ref message, .. } if message.contains("without `end`"))
    );
    assert!(
        matches!(err("{{ end }}"), TemplateError::Syntax { ref message, .. } if message.contains("`end` without"))
    );
    assert!(
        matches!(err(r#"{{ join "," }}"#), TemplateError::Syntax { ref message, .. } if message == "`join` takes 2 arguments, got 1")
    );
    // A field may be a method, so Go parses this and fails running it.
    assert!(
        matches!(err("{{ .nuon.a | .nuon.b }}"), TemplateError::Eval { ref message, .. } if message.contains("cannot be invoked"))
            || matches!(
                err("{{ .nuon.a | .nuon.b }}"),
                TemplateError::Missing { .. }
            )
    );
    assert!(matches!(err("{{ 1 | 2 }}"), TemplateError::Syntax { .. }));
    assert!(
        matches!(err("{{ define \"x\" }}{{ .nuon }}"), TemplateError::Syntax { ref message, .. } if message.contains("without `end`"))
    );
    assert!(matches!(
        err(r#"{{ index .nuon.install.id "k" }}"#),
        TemplateError::Eval { .. }
    ));
    assert!(
        matches!(err("{{ range .nuon.install.id }}{{ end }}"), TemplateError::Eval { ref message, .. } if message.contains("cannot iterate over a string"))
    );
    assert!(
        matches!(err("{{ .nuon.install.id.deeper }}"), TemplateError::Eval { ref message, .. } if message.contains("cannot read field `deeper` of a string"))
    );
    assert!(
        matches!(err("{{ $nope }}"), TemplateError::Eval { ref message, .. } if message.contains("undefined variable"))
    );
}

#[test]
fn functions_named_as_arguments_are_checked_too() {
    // Found by the fuzzer: a function named as an argument is called with no arguments.
    assert_eq!(
        err("{{ print index }}"),
        TemplateError::Eval {
            offset: 9,
            message: "`index` takes at least 1 argument, got 0".into()
        }
    );
    assert_eq!(r("{{ print true }}"), "true");
}

#[test]
fn references_are_the_root_paths() {
    let t = Template::parse(
        r#"{{ .nuon.a.b }}{{ with .nuon.components.db.outputs }}{{ .port }}{{ $.nuon.install.id }}{{ end }}{{ index .nuon.c "k" | upper }}"#,
    )
    .unwrap();
    let refs: Vec<String> = t.references().iter().map(|r| r.path.join(".")).collect();
    assert_eq!(
        refs,
        vec![
            "nuon.a.b",
            "nuon.components.db.outputs",
            "nuon.install.id",
            "nuon.c"
        ]
    );
}

#[test]
fn lenient_mode_checks_every_branch_against_unknowns() {
    let partial = json!({ "nuon": { "install": { "id": "fake" } } });
    let t = Template::parse(r#"{{ if .nuon.components.x.outputs.on }}{{ .nuon.components.x.outputs.v | upper }}{{ else }}{{ .nuon.install.id }}{{ end }}"#).unwrap();
    assert_eq!(t.render(&partial, Mode::Lenient).unwrap(), "<unknown>");
    assert!(t.render(&partial, Mode::Strict).is_err());
    // A misuse inside a branch that would not run is still found.
    let t = Template::parse(r#"{{ if false }}{{ index .nuon.install.id 1 }}{{ end }}"#).unwrap();
    assert!(t.render(&partial, Mode::Lenient).is_err());
    let t = Template::parse(r#"{{ range .nuon.components.x.outputs.list }}{{ .name }}{{ end }}"#)
        .unwrap();
    assert!(t.render(&partial, Mode::Lenient).is_ok());
}

/// Sprig's functions, each with the output Go + Sprig give (Sprig's documentation and source).
#[test]
fn sprig_functions_match_go() {
    let cases: &[(&str, &str)] = &[
        (r#"{{ default "foo" "" }}"#, "foo"),
        (r#"{{ "" | default "foo" }}"#, "foo"),
        (r#"{{ default "foo" .nuon.inputs.inputs.name }}"#, "acme"),
        (
            r#"{{ required "x is required" .nuon.inputs.inputs.name }}"#,
            "acme",
        ),
        (
            r#"{{ empty "" }} {{ empty 0 }} {{ empty (list) }} {{ empty "a" }}"#,
            "true true true false",
        ),
        (r#"{{ coalesce "" .nuon.inputs.inputs.empty "c" }}"#, "c"),
        (
            r#"{{ ternary "yes" "no" true }} {{ true | ternary "yes" "no" }}"#,
            "yes yes",
        ),
        (r#"{{ toString 42 }} {{ toString nil }}"#, "42 <nil>"),
        (r#"{{ list 1 "a" true | toJson }}"#, r#"[1,"a",true]"#),
        (r#"{{ (fromJson "{\"a\": [1, 2]}").a | toJson }}"#, "[1,2]"),
        (r#"{{ fromJson "not json" | toJson }}"#, "null"),
        (r#"{{ dict "a" 1 | toPrettyJson }}"#, "{\n  \"a\": 1\n}"),
        (
            r#"{{ dict "name" "web" "ports" (list 80 443) | toYaml }}"#,
            "name: web\nports:\n- 80\n- 443",
        ),
        (
            r#"{{ dict "v" "true" "e" "" | toYaml }}"#,
            "e: ''\nv: 'true'",
        ),
        (r#"{{ "a\nb" | indent 2 }}"#, "  a\n  b"),
        (r#"{{ "a\nb" | nindent 2 }}"#, "\n  a\n  b"),
        (r#"{{ trim "  x  " }}|{{ trimAll "$" "$5.00$" }}"#, "x|5.00"),
        (
            r#"{{ trimPrefix "-" "-hello" }} {{ trimSuffix "-" "hello-" }}"#,
            "hello hello",
        ),
        (
            r#"{{ $p := split "$" "foo$bar$baz" }}{{ $p._0 }} {{ $p._2 }}"#,
            "foo baz",
        ),
        (r#"{{ splitList "," "a,b,c" | join "+" }}"#, "a+b+c"),
        (
            r#"{{ substr 0 5 "hello world" }}|{{ substr 6 -1 "hello world" }}"#,
            "hello|world",
        ),
        (
            r#"{{ title "hello world" }} {{ upper "ab" }} {{ lower "AB" }}"#,
            "Hello World AB ab",
        ),
        (r#"{{ replace " " "-" "a b c" }}"#, "a-b-c"),
        (
            r#"{{ contains "cat" "catch" }} {{ hasPrefix "cat" "catch" }} {{ hasSuffix "ch" "catch" }}"#,
            "true true true",
        ),
        (
            r#"{{ regexMatch "^[a-z]+@example\\.com$" "me@example.com" }}"#,
            "true",
        ),
        (
            r#"{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }}"#,
            "-W-xxW-",
        ),
        (
            r#"{{ $d := dict "a" 1 "b" 2 }}{{ get $d "a" }} {{ hasKey $d "b" }} {{ hasKey $d "c" }}"#,
            "1 true false",
        ),
        (
            r#"{{ $d := dict "a" 1 }}{{ $_ := set $d "b" 2 }}{{ $d = set $d "c" 3 }}{{ keys $d | sortAlpha | join "," }}"#,
            "a,b,c",
        ),
        (r#"{{ values (dict "a" "x" "b" "y") | join "," }}"#, "x,y"),
        (r#"{{ first (list 1 2 3) }} {{ last (list 1 2 3) }}"#, "1 3"),
        (
            r#"{{ has 4 (list 1 2 3 4) }} {{ has "x" (list "y") }}"#,
            "true false",
        ),
        (r#"{{ list 1 1 2 3 3 | uniq | toJson }}"#, "[1,2,3]"),
        (
            r#"{{ list "b" "a" "c" | sortAlpha | toJson }}"#,
            r#"["a","b","c"]"#,
        ),
        (
            r#"{{ int "42" }} {{ int 4.9 }} {{ int "abc" }} {{ atoi "12" }} {{ atoi "1.5" }}"#,
            "42 4 0 12 0",
        ),
        (
            r#"{{ float64 "1.5" }} {{ add 1 2 3 }} {{ sub 10 3 }} {{ mul 2 3 4 }}"#,
            "1.5 6 7 24",
        ),
        (
            r#"{{ div 7 2 }} {{ mod 7 2 }} {{ max 1 9 3 }} {{ min 4 2 8 }} {{ add 1 2.7 }}"#,
            "3 1 9 2 3",
        ),
        (
            r#"{{ b64enc "hello" }} {{ b64dec "aGVsbG8=" }}"#,
            "aGVsbG8= hello",
        ),
        (
            r#"{{ sha256sum "hello" }}"#,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
        ),
        (r#"{{ quote "a" 1 }} {{ squote "b" }}"#, r#""a" "1" 'b'"#),
        (r#"{{ printf "%s-%d" "web" 3 }}"#, "web-3"),
        (
            r#"{{ date "2006-01-02 15:04:05" 0 }}"#,
            "1970-01-01 00:00:00",
        ),
        (
            r#"{{ toDate "2006-01-02T15:04:05Z07:00" "2024-03-05T14:07:09Z" | date "Jan 2, 2006 at 3:04pm (MST)" }}"#,
            "Mar 5, 2024 at 2:07pm (UTC)",
        ),
        (
            r#"{{ semverCompare ">=1.2.0" "1.4.3" }} {{ semverCompare "^1.2" "2.0.0" }}"#,
            "true false",
        ),
        (
            r#"{{ semverCompare ">= 1.2, < 2" "v1.9" }} {{ semverCompare "~1.2 || ^3" "3.1.0" }}"#,
            "true true",
        ),
    ];
    let mut failures = Vec::new();
    for (src, want) in cases {
        match engine(src) {
            Ok(got) if got == *want => {}
            Ok(got) => failures.push(format!("{src}\n  want {want:?}\n  got  {got:?}")),
            Err(e) => failures.push(format!("{src}\n  error: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(
        err(r#"{{ required "replicas is required" .nuon.inputs.inputs.empty }}"#).to_string(),
        "replicas is required"
    );
    assert!(err("{{ div 1 0 }}").to_string().contains("divide by zero"));
    assert!(
        engine("{{ now | date \"2006\" }}")
            .unwrap()
            .starts_with("20")
    );
}

/// `break` leaves its `range`, `continue` goes on with the next item, both from inside `if`s;
/// outside a `range` they are syntax errors, as Go's parser says.
#[test]
fn break_and_continue_end_or_skip_an_iteration() {
    let l = "{{ $l := list 1 2 3 4 }}{{/* .nuon */}}";
    assert_eq!(
        r(&format!(
            "{l}{{{{ range $l }}}}{{{{ if eq . 3 }}}}{{{{ break }}}}{{{{ end }}}}{{{{ . }}}}{{{{ end }}}}"
        )),
        "12"
    );
    assert_eq!(
        r(&format!(
            "{l}{{{{ range $l }}}}{{{{ if eq . 2 }}}}{{{{ continue }}}}{{{{ end }}}}{{{{ . }}}}{{{{ end }}}}|"
        )),
        "134|"
    );
    // The inner range's break leaves only the inner range.
    assert_eq!(
        r(&format!(
            "{l}{{{{ range $l }}}}{{{{ range $l }}}}{{{{ break }}}}{{{{ end }}}}{{{{ . }}}}{{{{ end }}}}"
        )),
        "1234"
    );
    for bad in [
        "{{ break }}{{/* .nuon */}}",
        "{{ if true }}{{ continue }}{{ end }}{{/* .nuon */}}",
    ] {
        assert!(
            matches!(err(bad), TemplateError::Syntax { ref message, .. } if message.contains("outside {{range}}")),
            "{bad}"
        );
    }
}

/// `define` names a template, `template` runs it with a value as its dot and `$` (the caller's
/// variables out of sight), `block` defines and runs in one place; an unknown name fails.
#[test]
fn named_templates_are_defined_once_and_called_with_their_own_dot() {
    assert_eq!(
        r(
            r#"{{ define "t" }}[{{ . }}|{{ $ }}]{{ end }}{{ template "t" .nuon.install.id }}{{ template "t" 2 }}"#
        ),
        "[inst1|inst1][2|2]"
    );
    assert_eq!(
        r(r#"{{ block "b" .nuon.install.id }}<{{ . }}>{{ end }}"#),
        "<inst1>"
    );
    assert_eq!(
        r(r#"{{ define "t" }}{{ . }}{{ end }}{{ template "t" }}{{/* .nuon */}}"#),
        "<no value>"
    );
    let e = err(r#"{{ $x := 1 }}{{ define "t" }}{{ $x }}{{ end }}{{ template "t" .nuon }}"#);
    assert!(e.to_string().contains("$x"), "{e}");
    let e = err(r#"{{ template "nope" .nuon }}"#);
    assert!(e.to_string().contains("no template \"nope\""), "{e}");
    let e = err(r#"{{ define "t" }}a{{ end }}{{ define "t" }}b{{ end }}{{ .nuon }}"#);
    assert!(e.to_string().contains("multiple definition"), "{e}");
    let e = err(r#"{{ define "t" }}{{ template "t" . }}{{ end }}{{ template "t" .nuon }}"#);
    assert!(e.to_string().contains("deep"), "{e}");
}

#[test]
fn values_keep_their_go_types() {
    // Slices and maps sprig returns typed, and what names or prints the type.
    assert_eq!(
        r(
            r#"{{ typeOf (splitList "," "a,b") }}|{{ typeOf (until 2) }}|{{ typeOf (split "," "a") }}|{{ typeOf (chunk 1 (list 1)) }}"#
        ),
        "[]string|[]int|map[string]string|[][]interface {}"
    );
    assert_eq!(
        r(
            r#"{{ printf "%#v" (splitList "," "a,b") }}|{{ printf "%#v" (until 2) }}|{{ printf "%#v" (split "," "a") }}"#
        ),
        r#"[]string{"a", "b"}|[]int{0, 1}|map[string]string{"_0":"a"}"#
    );
    assert_eq!(
        r(
            r#"{{ kindOf (splitList "," "a") }}|{{ kindIs "slice" (until 1) }}|{{ typeIs "[]string" (keys (dict "a" 1)) }}"#
        ),
        "slice|true|true"
    );
    // A nil slice is not an empty one: `%#v` and JSON tell them apart.
    assert_eq!(
        r(
            r#"{{ printf "%#v" (rest (list)) }}|{{ toJson (regexFindAll "x" "abc" -1) }}|{{ toJson (until 0) }}"#
        ),
        "[]interface {}(nil)|null|[]"
    );
    // Slicing keeps the type; sprig's list functions build `[]interface {}`.
    assert_eq!(
        r(
            r#"{{ slice (splitList "," "a,b") 1 | typeOf }}|{{ append (splitList "," "a") "b" | typeOf }}"#
        ),
        "[]string|[]interface {}"
    );
    // DeepEqual sees the type, `eq` compares an int64 with an int.
    assert_eq!(
        r(
            r#"{{ deepEqual (list "a") (splitList "," "a") }}|{{ deepEqual (add 0 1) 1 }}|{{ eq (add 1 2) 3 }}"#
        ),
        "false|false|true"
    );
}

#[test]
fn integers_keep_their_go_types() {
    assert_eq!(
        r(
            r#"{{ typeOf (add 1 2) }}|{{ typeOf (len "ab") }}|{{ typeOf (atoi "3") }}|{{ typeOf (int64 3) }}|{{ kindOf (mul 2 2) }}"#
        ),
        "int64|int|int|int64|int64"
    );
    // sprig's arithmetic gives an int64, which a function taking an int refuses, as in Go.
    let e = err(r#"{{ trunc (sub 5 2) "hello" }}"#).to_string();
    assert!(
        e.contains("wrong type for value; expected int; got int64"),
        "{e}"
    );
    assert_eq!(r(r#"{{ trunc (len "abc") "hello" }}"#), "hel");
    // `duration` reads an int64 (or a string) as seconds, an int as nothing.
    assert_eq!(r("{{ duration (add 90 0) }}|{{ duration 90 }}"), "1m30s|0s");
    // A version's fields are uint64: `%#v` prints them in hex.
    assert_eq!(
        r(
            r#"{{ $v := semver "1.2.10" }}{{ typeOf $v.Minor }}|{{ printf "%#v %v" $v.Patch $v.Patch }}"#
        ),
        "uint64|0xa 10"
    );
}

#[test]
fn a_times_month_and_weekday_print_as_names_and_compare_as_numbers() {
    let t = r#"(toDate "2006-01-02" "2024-03-05")"#;
    assert_eq!(
        r(&format!(
            "{{{{ {t}.Month }}}}|{{{{ {t}.Weekday }}}}|{{{{ eq {t}.Month 3 }}}}|{{{{ typeOf {t}.Month }}}}"
        )),
        "March|Tuesday|true|time.Month"
    );
    assert_eq!(
        r(&format!(
            "{{{{ $m := {t}.Month }}}}{{{{ printf \"%d %s %q %#v %5.2f\" $m $m $m $m $m }}}}"
        )),
        "3 March \"March\" 3 %!f(time.Month=   03)"
    );
    assert_eq!(
        r(&format!(
            "{{{{ typeOf {t}.Unix }}}}|{{{{ toJson {t}.Month }}}}"
        )),
        "int64|3"
    );
}

#[test]
fn maps_of_strings_are_refused_where_sprig_takes_a_map_of_anything() {
    for t in [
        r#"{{ keys (split "," "a,b") }}"#,
        r#"{{ hasKey (split "," "a,b") "_0" }}"#,
        r#"{{ dig "_0" "d" (split "," "a,b") }}"#,
    ] {
        let e = err(t).to_string();
        assert!(e.contains("map[string]string"), "{t}: {e}");
    }
    assert_eq!(r(r#"{{ (split "," "a,b")._1 }}"#), "b");
}
