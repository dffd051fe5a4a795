//! The readme's escaping, context by context (the differential test checks the same against Go;
//! these name the context that broke).

use serde_json::{Value, json};

use super::render_readme;

fn state() -> Value {
    json!({"nuon": {
        "s": "a<b> & \"c\" 'd' + e",
        "url": "https://h.example.com/p?q=1",
        "bad": "javascript:alert(1)",
        "n": 5432,
        "nul": null,
        "word": "red",
    }})
}

fn r(src: &str) -> String {
    render_readme(src, &state()).unwrap_or_else(|e| panic!("{src}: {e}"))
}

fn refused(src: &str) -> String {
    render_readme(src, &state()).expect_err(src).to_string()
}

#[test]
fn text_and_attribute_values_get_entities() {
    assert_eq!(
        r("<p>{{ .nuon.s }}</p>"),
        "<p>a&lt;b&gt; &amp; &#34;c&#34; &#39;d&#39; &#43; e</p>"
    );
    assert_eq!(
        r("<a title=\"{{ .nuon.s }}\">x</a>"),
        "<a title=\"a&lt;b&gt; &amp; &#34;c&#34; &#39;d&#39; &#43; e\">x</a>"
    );
    // Unquoted, a space or `=` would end or split the value: they are entities too.
    assert_eq!(
        r("<a title={{ \"x y=z\" }}>x</a>"),
        "<a title=x&#32;y&#61;z>x</a>"
    );
    assert_eq!(r("<p>{{ .nuon.nul }}</p>"), "<p></p>");
}

#[test]
fn urls_are_filtered_to_safe_schemes_and_percent_encoded() {
    assert_eq!(
        r("<a href=\"{{ .nuon.url }}\">x</a>"),
        "<a href=\"https://h.example.com/p?q=1\">x</a>"
    );
    assert_eq!(
        r("<a href=\"{{ .nuon.bad }}\">x</a>"),
        "<a href=\"#ZgotmplZ\">x</a>"
    );
    assert_eq!(
        r("<a href=\"/p?q={{ .nuon.url }}\">x</a>"),
        "<a href=\"/p?q=https%3a%2f%2fh.example.com%2fp%3fq%3d1\">x</a>"
    );
    assert_eq!(
        r("<img srcset=\"{{ .nuon.url }} 2x\">"),
        "<img srcset=\"https://h.example.com/p?q=1 2x\">"
    );
}

#[test]
fn scripts_get_json_and_js_string_escapes() {
    assert_eq!(
        r("<script>var a = {{ .nuon.s }}, n = {{ .nuon.n }};</script>"),
        "<script>var a = \"a\\u003cb\\u003e \\u0026 \\\"c\\\" 'd' + e\", n =  5432 ;</script>"
    );
    assert_eq!(
        r("<script>var a = '{{ .nuon.s }}';</script>"),
        "<script>var a = 'a\\u003cb\\u003e \\u0026 \\u0022c\\u0022 \\u0027d\\u0027 \\u002b e';</script>"
    );
    assert_eq!(
        r("<button onclick=\"f({{ .nuon.word }})\">b</button>"),
        "<button onclick=\"f(&#34;red&#34;)\">b</button>"
    );
    assert_eq!(
        r("<script>var r = /{{ \"a.b\" }}/;</script>"),
        "<script>var r = /a\\.b/;</script>"
    );
}

#[test]
fn css_values_that_could_break_out_are_refused() {
    assert_eq!(
        r("<p style=\"color: {{ .nuon.word }}\">x</p>"),
        "<p style=\"color: red\">x</p>"
    );
    assert_eq!(
        r("<p style=\"color: {{ \"expression(x)\" }}\">x</p>"),
        "<p style=\"color: ZgotmplZ\">x</p>"
    );
    assert_eq!(
        r("<style>p { font-family: \"{{ .nuon.s }}\"; }</style>"),
        "<style>p { font-family: \"a\\3c b\\3e  \\26  \\22 c\\22  \\27 d\\27  \\2b  e\"; }</style>"
    );
}

#[test]
fn rcdata_comments_and_the_text_itself() {
    assert_eq!(
        r("<textarea>{{ .nuon.word }}<b></textarea>"),
        "<textarea>red&lt;b></textarea>"
    );
    assert_eq!(r("a <!-- {{ .nuon.s }} --> b"), "a  b");
    assert_eq!(r("1 < 2 <!DOCTYPE html>"), "1 &lt; 2 <!DOCTYPE html>");
    assert_eq!(r("<p {{ .nuon.word }}=\"x\">"), "<p red=\"x\">");
    assert_eq!(r("<p {{ \"onclick\" }}=\"x\">"), "<p ZgotmplZ=\"x\">");
}

#[test]
fn gos_own_escapers_stand_in_for_their_equivalent_at_the_end_only() {
    // `html` escapes no `+`, unlike html/template's own escaper it replaces.
    assert_eq!(
        r("<p>{{ .nuon.s | html }}</p>"),
        "<p>a&lt;b&gt; &amp; &#34;c&#34; &#39;d&#39; + e</p>"
    );
    assert!(refused("{{ html .nuon.s | upper }}").contains("predefined escaper"));
}

#[test]
fn templates_go_refuses_before_running_are_refused_whatever_the_data() {
    for t in [
        "{{ if .nuon.n }}<script>{{ end }}x",
        "{{ if .nuon.nul }}<script>{{ end }}x",
        "<a href=\"{{ if .nuon.n }}/a?{{ else }}/b{{ end }}{{ .nuon.s }}\">x</a>",
        "<script>var a = 1{{ if .nuon.n }}+{{ end }}/{{ .nuon.s }}/</script>",
        "<script>var a = {{ .nuon.s }};",
        "{{ if .nuon.nul }}{{ html .nuon.s | upper }}{{ end }}",
    ] {
        assert!(render_readme(t, &state()).is_err(), "{t}");
    }
    // A JS template literal escapes what would end it or start a `${`.
    assert_eq!(
        r("<script>var t = `{{ \"`${x}\" }} ${ {{ .nuon.n }} }`;</script>"),
        "<script>var t = `\\u0060\\u0024\\u007bx\\u007d ${  5432  }`;</script>"
    );
    // Branches that end in the same place are fine, and so is a loop that comes back to it.
    assert_eq!(
        r("{{ range $i, $x := list 1 2 }}<a href=\"/{{ $x }}\">{{ $i }}</a>{{ end }}"),
        "<a href=\"/1\">0</a><a href=\"/2\">1</a>"
    );
}

#[test]
fn deeply_nested_ranges_stop_at_the_step_budget_instead_of_walking_for_ever() {
    // Each range's body is checked twice (its first turn and the next), so 40 nested ranges would
    // be 2^40 walks.
    let depth = 40;
    let t = format!(
        "{}x{}",
        "{{ range .nuon.l }}".repeat(depth),
        "{{ end }}".repeat(depth)
    );
    let started = std::time::Instant::now();
    let e = render_readme(&t, &json!({"nuon": {"l": []}})).expect_err("refused");
    assert!(e.to_string().contains("steps"), "{e}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}
