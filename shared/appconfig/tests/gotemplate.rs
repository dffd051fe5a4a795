//! Ferry's template engine against real Go: every case renders through Ferry and through Go's
//! `text/template` with sprig as Nuon renders a config field (`tests/fixtures/gotemplate/
//! render.go`, built by `scripts/install-go-sprig` from Debian's Go 1.23 and sprig 3.2.3), and
//! the two must agree: the same output, or both an error. Clock- and randomness-dependent
//! functions are compared by the form of their output.
//!
//! Every case must agree, except those tagged [`Check::Deliberate`], where Ferry differs from
//! Nuon on purpose (validation warns of each; each must still differ). The readme's cases render
//! through Go's `html/template` and Ferry's contextual escaping: text, attributes, URLs, scripts,
//! CSS, and the templates Go refuses. Disagreements are written to
//! `target/gotemplate-disagreements.txt`. A second test requires Ferry to have every
//! function Go and sprig give Nuon's templates, and a case to call each.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// How a case's two outputs are compared.
#[derive(Clone, Copy)]
enum Check {
    Exact,
    /// Only the form (a regular expression the whole output matches), for the clock and chance.
    Form(&'static str),
    /// Go or sprig newer than Debian's 1.23 and 3.2.3 (Nuon's are 1.25 and 3.3.0): `range` over
    /// an integer (Go 1.24), `sha512sum` (sprig 3.3). Ferry's output must be this, what Nuon
    /// renders.
    Newer(&'static str),
    /// Ferry differs from Nuon on purpose, and validation warns where a template does this.
    Deliberate,
}

struct Case {
    template: String,
    check: Check,
    /// Rendered as the app readme is (html/template), not as a config field.
    html: bool,
}

fn exact(t: impl Into<String>) -> Case {
    Case {
        template: t.into(),
        check: Check::Exact,
        html: false,
    }
}

/// The state every case renders against (as `.nuon`).
fn state() -> Value {
    json!({
        "s": "hello World", "e": "", "ws": "  padded  ", "csv": "a,b,c", "n": 5432, "f": 1.5,
        "big": 12345678901_i64, "neg": -3, "zero": 0, "t": true, "fl": false, "nul": null,
        "l": ["a", "b"], "nums": [3, 1, 2], "m": {"b": 1, "a": "x"}, "nested": {"a": {"b": {"c": 7}}},
        "json": "{\"a\":1,\"b\":[true,null]}", "b64": "aGVsbG8=", "path": "/a/b/c.txt",
        "url": "https://u:p@h.example.com:8/p/q?x=1#f", "ver": "1.2.3", "words": "the quick brown fox",
        "camel": "HelloWorldFoo", "snake": "hello_world_foo", "num_s": "42", "float_s": "3.75",
        "empty_l": [], "empty_m": {}, "mixed": [1, "a", true, null, 1.5, {"k": "v"}],
        "date": "2026-11-27T10:00:00Z", "unix": 1795000000,
    })
}

/// Values a function's argument may be: literals of each kind, and the state's.
const ARGS: &[&str] = &[
    ".nuon.s",
    ".nuon.e",
    ".nuon.ws",
    ".nuon.csv",
    ".nuon.n",
    ".nuon.f",
    ".nuon.big",
    ".nuon.neg",
    ".nuon.zero",
    ".nuon.t",
    ".nuon.fl",
    ".nuon.nul",
    ".nuon.l",
    ".nuon.nums",
    ".nuon.m",
    ".nuon.mixed",
    ".nuon.empty_l",
    "\"lit\"",
    "3",
    "-2",
    "2.5",
    "true",
    "nil",
    "'a'",
    // Values of Go's other types, as sprig and Go's methods return them.
    "(splitList \",\" \"a,b\")",
    "(until 3)",
    "(split \",\" \"a,b\")",
    "(chunk 2 (list 1 2 3))",
    "(add 1 2)",
    "(semver \"1.2.3\").Minor",
    "(toDate \"2006-01-02\" \"2024-03-05\").Month",
    "(toDate \"2006-01-02\" \"2024-03-05\").Weekday",
];

/// Functions of one argument (or whose last argument is the piped one), with every kind of value.
/// (`keys` and `values` are not among them: Go gives a map's keys in a random order; the
/// language cases sort them.)
const UNARY: &[&str] = &[
    "len",
    "not",
    "print",
    "println",
    "html",
    "js",
    "urlquery",
    "upper",
    "lower",
    "title",
    "untitle",
    "trim",
    "trimAll \"a\"",
    "trimPrefix \"h\"",
    "trimSuffix \"d\"",
    "quote",
    "squote",
    "b64enc",
    "b64dec",
    "b32enc",
    "b32dec",
    "toJson",
    "toPrettyJson",
    "toRawJson",
    "toString",
    "toStrings",
    "int",
    "int64",
    "float64",
    "atoi",
    "default \"d\"",
    "empty",
    "kindOf",
    "typeOf",
    "kindIs \"string\"",
    "kindIs \"slice\"",
    "typeIs \"string\"",
    "first",
    "last",
    "rest",
    "initial",
    "reverse",
    "uniq",
    "compact",
    "sortAlpha",
    "len",
    "add1",
    "ceil",
    "floor",
    "round 1",
    "nospace",
    "snakecase",
    "camelcase",
    "kebabcase",
    "swapcase",
    "initials",
    "abbrev 5",
    "trunc 4",
    "repeat 2",
    "wrap 5",
    "indent 2",
    "nindent 2",
    "plural \"one\" \"many\"",
    "sha1sum",
    "sha256sum",
    "adler32sum",
    "base",
    "dir",
    "ext",
    "clean",
    "isAbs",
    "splitList \",\"",
    "split \",\"",
    "join \"-\"",
    "fromJson",
    "toDate \"2006-01-02\"",
    "semver",
    "urlParse",
    "deepCopy",
    "coalesce",
    "ternary \"y\" \"n\"",
    "list",
    "tuple",
    "has \"a\"",
    "without \"a\"",
    "append \"z\"",
    "prepend \"z\"",
    "concat (list 9)",
    "chunk 2",
    "slice",
    "hasKey \"a\"",
    "pluck \"a\"",
    "dig \"a\" \"d\"",
    "pick \"a\"",
    "omit \"a\"",
    "regexQuoteMeta",
    "mustFirst",
    "mustLast",
    "mustToJson",
    "toDecimal",
    "duration",
    "durationRound",
    "cat \"x\"",
    "contains \"l\"",
    "hasPrefix \"he\"",
    "hasSuffix \"ld\"",
    "substr 1 3",
    "replace \"l\" \"L\"",
    "regexMatch \"^h\"",
    "regexFind \"[a-z]+\"",
    "regexFindAll \"[a-z]\" 2",
    "regexReplaceAll \"o\" \"0\"",
    "regexSplit \"o\" -1",
    "splitn \",\" 2",
    "max 1",
    "min 100",
    "maxf 1.5",
    "minf 100",
    "add 1",
    "sub 1",
    "mul 2",
    "div 2",
    "mod 5",
    "addf 0.5",
    "subf 0.5",
    "mulf 2",
    "divf 2",
    "biggest 1",
    "until",
    "seq",
    "printf \"%v\"",
    "printf \"%d\"",
    "printf \"%s\"",
    "printf \"%q\"",
    "printf \"%x\"",
    "printf \"%T\"",
    "printf \"%5.2f\"",
    "printf \"%t\"",
    "printf \"%#v\"",
    "printf \"%+v\"",
    "printf \"%-6v|\"",
    "printf \"%08.3f\"",
    "printf \"%e\"",
    "printf \"%g\"",
    "printf \"%c\"",
    "printf \"%U\"",
    "printf \"%o\"",
    "printf \"%b\"",
    "printf \"%X\"",
    "printf \"%3d|\"",
    "printf \"%v %v\" 1",
];

/// Templates about Go's language itself: printing, literals, comparison, control, variables.
fn language() -> Vec<Case> {
    let mut out: Vec<Case> = [
        "{{ 1 }}|{{ 1.5 }}|{{ 0x1F }}|{{ 0o17 }}|{{ 017 }}|{{ 0b101 }}|{{ 1e3 }}|{{ 1_000 }}",
        "{{ 'a' }}|{{ '\\n' }}|{{ \"a\\tb\" }}|{{ `raw\\n` }}|{{ true }}|{{ false }}",
        "{{ nil }}", "{{ .nuon.nul }}", "{{ .nuon.missing }}", "{{ .nuon.m.missing }}",
        "{{ .nuon.l }}", "{{ .nuon.m }}", "{{ .nuon.mixed }}", "{{ .nuon.nested }}",
        "{{ .nuon.n }}", "{{ .nuon.f }}", "{{ .nuon.big }}", "{{ .nuon.unix }}", "{{ .nuon }}",
        "{{ eq .nuon.n 5432 }}", "{{ eq .nuon.n 5432.0 }}", "{{ eq .nuon.s \"hello World\" }}",
        "{{ eq 1 1 }}", "{{ eq 1 2 3 1 }}", "{{ ne 1 2 }}", "{{ lt 1 2 }}", "{{ lt 1.5 2.5 }}",
        "{{ lt \"a\" \"b\" }}", "{{ lt 1 2.5 }}", "{{ eq .nuon.t true }}", "{{ eq .nuon.nul nil }}",
        "{{ eq .nuon.l .nuon.l }}", "{{ ge .nuon.f 1.5 }}", "{{ le .nuon.neg -3.0 }}",
        "{{ and 1 0 2 }}", "{{ or 0 \"\" 3 }}", "{{ and 0 (fail \"x\") }}", "{{ or 1 (fail \"x\") }}",
        "{{ not 0 }}", "{{ not .nuon.l }}", "{{ and }}", "{{ len .nuon.m }}", "{{ len 3 }}",
        "{{ index .nuon.l 1 }}", "{{ index .nuon.l 5 }}", "{{ index .nuon.m \"a\" }}",
        "{{ index .nuon.m \"zz\" }}", "{{ index .nuon.nested \"a\" \"b\" \"c\" }}",
        "{{ slice .nuon.s 1 3 }}", "{{ slice .nuon.l 1 }}", "{{ slice .nuon.s 3 1 }}",
        "{{ print 1 2 \"a\" \"b\" 3 }}", "{{ println 1 \"a\" }}", "{{ print nil }}",
        "{{ html \"<a href='x'>&</a>\" }}", "{{ js \"it's <b>\" }}", "{{ urlquery \"a b&c\" }}",
        "{{ if .nuon.t }}yes{{ else }}no{{ end }}", "{{ if .nuon.zero }}yes{{ else }}no{{ end }}",
        "{{ if .nuon.e }}a{{ else if .nuon.s }}b{{ else }}c{{ end }}",
        "{{ with .nuon.m }}{{ .a }}{{ end }}", "{{ with .nuon.empty_m }}x{{ else }}empty{{ end }}",
        "{{ range .nuon.l }}[{{ . }}]{{ end }}", "{{ range $i, $v := .nuon.l }}{{ $i }}={{ $v }};{{ end }}",
        "{{ range $k, $v := .nuon.m }}{{ $k }}={{ $v }};{{ end }}",
        "{{ range .nuon.empty_l }}x{{ else }}none{{ end }}",
        "{{ range .nuon.nums }}{{ if eq . 1.0 }}{{ break }}{{ end }}{{ . }}{{ end }}",
        "{{ range .nuon.nums }}{{ if eq . 1.0 }}{{ continue }}{{ end }}{{ . }}{{ end }}",
        "{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}",
        "{{ $x := 1 }}{{ if true }}{{ $x := 2 }}{{ end }}{{ $x }}",
        "{{ $x := .nuon.s }}{{ range .nuon.l }}{{ $x }}{{ . }}{{ end }}",
        "{{ range .nuon.l }}{{ $.nuon.s }}{{ end }}",
        "{{ define \"t\" }}[{{ . }}]{{ end }}{{ template \"t\" .nuon.s }}",
        "{{ block \"b\" .nuon.n }}<{{ . }}>{{ end }}", "{{ template \"nope\" }}",
        "a  {{- .nuon.s -}}  b", "a {{- /* c */ -}} b", "{{/* only a comment */}}x",
        "{{ .nuon.s | printf \"%s!\" | upper }}", "{{ (.nuon.m).a }}", "{{ (index .nuon.nested \"a\").b.c }}",
        "{{ .nuon.s.x }}", "{{ .nuon.l.x }}", "{{ .nuon.n.x }}", "{{ $ := 1 }}",
        "{{ }}", "{{ end }}", "{{ if }}{{ end }}", "{{ .nuon.s", "{{ nosuchfunc 1 }}",
        "{{ printf }}", "{{ printf \"%d %d\" 1 }}", "{{ printf \"%d\" 1 2 }}", "{{ printf \"%!\" }}",
        "{{ printf \"%[2]d %[1]d\" 1 2 }}", "{{ printf \"%*d\" 5 3 }}", "{{ printf \"%v\" .nuon.m }}",
        "{{ printf \"%v\" .nuon.mixed }}", "{{ printf \"%s\" .nuon.l }}", "{{ printf \"%d\" .nuon.l }}",
        "{{ printf \"%6.2f|%-8s|%+d|%x|%X|%o|%b|%e|%E|%g|%G\" 3.14159 \"ab\" 5 255 255 8 5 1234.5678 1234.5678 0.000012 1e21 }}",
        "{{ printf \"%q %v %d\" 'x' 'x' 'x' }}", "{{ printf \"%05d|%-5d|%5s|%.2s\" 42 42 \"ab\" \"abcdef\" }}",
        "{{ printf \"%t %v\" true nil }}", "{{ printf \"%T %T %T %T %T\" 1 1.5 \"s\" .nuon.l .nuon.m }}",
        "{{ printf \"%v\" 1e21 }}|{{ printf \"%v\" 1e20 }}|{{ printf \"%v\" 0.000001 }}|{{ printf \"%v\" 0.0000001 }}",
        "{{ 12345678901.0 }}|{{ 1e21 }}|{{ 100000000000000000000.0 }}|{{ 0.1 }}|{{ -0.0 }}",
        "{{ .nuon.n | int }}|{{ .nuon.n | int64 }}|{{ .nuon.f | int }}|{{ \"12\" | int }}",
        "{{ add 1 2 }}|{{ add .nuon.n 1 }}|{{ add 1.5 1 }}|{{ sub 5 7 }}|{{ mul 2 3 4 }}|{{ div 7 2 }}|{{ mod 7 3 }}",
        "{{ addf 1 2 }}|{{ divf 1 3 }}|{{ mulf 1.5 2 }}|{{ subf 1 0.25 }}|{{ round 3.14159 2 }}",
        "{{ max 1 5 3 }}|{{ min 4 2 8 }}|{{ maxf 1 5.5 }}|{{ minf 2.5 1 }}|{{ ceil 1.2 }}|{{ floor 1.8 }}",
        "{{ until 3 }}|{{ untilStep 0 10 3 }}|{{ seq 3 }}|{{ seq 2 5 }}|{{ seq 5 2 }}",
        "{{ list 1 \"a\" nil }}|{{ dict \"a\" 1 \"b\" \"x\" }}|{{ tuple 1 2 }}",
        "{{ $d := dict \"a\" 1 }}{{ $_ := set $d \"b\" 2 }}{{ $d }}|{{ unset $d \"a\" }}",
        "{{ merge (dict \"a\" 1) (dict \"a\" 2 \"b\" 3) }}|{{ mergeOverwrite (dict \"a\" 1) (dict \"a\" 2) }}",
        "{{ dig \"a\" \"b\" \"c\" \"none\" .nuon.nested }}|{{ dig \"a\" \"x\" \"none\" .nuon.nested }}",
        "{{ get .nuon.m \"a\" }}|{{ get .nuon.m \"zz\" }}|{{ hasKey .nuon.m \"b\" }}|{{ keys .nuon.m | sortAlpha }}",
        "{{ pluck \"a\" (dict \"a\" 1) (dict \"a\" 2) (dict \"b\" 3) }}",
        "{{ .nuon.csv | splitList \",\" | join \"+\" }}|{{ split \",\" .nuon.csv }}|{{ (split \",\" .nuon.csv)._1 }}",
        "{{ \"a b c\" | splitList \" \" | last }}|{{ list 3 1 2 | sortAlpha }}|{{ list 1 1 2 | uniq }}",
        "{{ default \"d\" .nuon.e }}|{{ default \"d\" .nuon.s }}|{{ default \"d\" .nuon.zero }}|{{ default \"d\" .nuon.nul }}",
        "{{ empty .nuon.e }}|{{ empty .nuon.l }}|{{ empty 0 }}|{{ empty .nuon.m }}|{{ coalesce .nuon.e .nuon.zero \"c\" }}",
        "{{ ternary \"y\" \"n\" true }}|{{ ternary \"y\" \"n\" .nuon.fl }}",
        "{{ toJson .nuon.m }}|{{ toJson .nuon.mixed }}|{{ toPrettyJson .nuon.nested }}|{{ toRawJson \"<&>\" }}|{{ toJson \"<&>\" }}",
        "{{ fromJson .nuon.json }}|{{ (fromJson .nuon.json).a }}|{{ fromJson \"bad\" }}|{{ mustFromJson \"bad\" }}",
        "{{ b64enc \"hello\" }}|{{ b64dec .nuon.b64 }}|{{ b64dec \"!!\" }}|{{ b32enc \"hi\" }}|{{ b32dec \"NBUQ====\" }}",
        "{{ sha256sum \"a\" }}|{{ sha1sum \"a\" }}|{{ adler32sum \"a\" }}",
        "{{ upper .nuon.s }}|{{ lower .nuon.s }}|{{ title .nuon.words }}|{{ untitle \"Hello World\" }}|{{ swapcase .nuon.s }}",
        "{{ snakecase .nuon.camel }}|{{ camelcase .nuon.snake }}|{{ kebabcase .nuon.camel }}|{{ initials .nuon.words }}",
        "{{ trunc 5 .nuon.words }}|{{ trunc -3 .nuon.words }}|{{ abbrev 8 .nuon.words }}|{{ abbrevboth 5 10 \"1234 5678 9123 4567\" }}",
        "{{ wrap 10 .nuon.words }}|{{ wrapWith 10 \"\\n\" .nuon.words }}|{{ indent 4 \"a\\nb\" }}|{{ nindent 2 \"a\" }}",
        "{{ replace \" \" \"-\" .nuon.words }}|{{ nospace .nuon.words }}|{{ repeat 3 \"ab\" }}|{{ substr 0 5 .nuon.s }}|{{ substr 4 100 .nuon.s }}",
        "{{ contains \"quick\" .nuon.words }}|{{ hasPrefix \"the\" .nuon.words }}|{{ hasSuffix \"x\" .nuon.words }}",
        "{{ quote \"a\" 1 nil }}|{{ squote \"a\" }}|{{ cat \"a\" 1 nil \"b\" }}",
        "{{ regexMatch \"^[a-z]+$\" \"abc\" }}|{{ regexFindAll \"[0-9]+\" \"a1b22c333\" -1 }}|{{ regexReplaceAll \"(a)(b)\" \"ab\" \"${2}${1}\" }}|{{ regexReplaceAllLiteral \"a\" \"aa\" \"$1\" }}|{{ regexSplit \",\" \"a,b\" -1 }}",
        "{{ regexMatch \"(\" \"a\" }}", "{{ mustRegexMatch \"(\" \"a\" }}",
        "{{ base .nuon.path }}|{{ dir .nuon.path }}|{{ ext .nuon.path }}|{{ clean \"/a/../b\" }}|{{ isAbs .nuon.path }}",
        "{{ (urlParse .nuon.url).host }}|{{ (urlParse .nuon.url).path }}|{{ (urlParse .nuon.url).query }}|{{ (urlParse .nuon.url).userinfo }}",
        "{{ urlJoin (dict \"scheme\" \"https\" \"host\" \"x.io\" \"path\" \"/p\") }}",
        "{{ semverCompare \">=1.2.0\" .nuon.ver }}|{{ (semver .nuon.ver).Minor }}|{{ semverCompare \"<1\" \"2.0.0\" }}",
        "{{ kindOf .nuon.l }}|{{ kindOf .nuon.m }}|{{ kindOf .nuon.n }}|{{ kindOf 1 }}|{{ kindOf \"s\" }}|{{ kindOf nil }}",
        "{{ typeOf .nuon.l }}|{{ typeOf .nuon.m }}|{{ typeOf .nuon.n }}|{{ typeOf 1 }}|{{ typeOf (list 1) }}",
        "{{ kindIs \"float64\" .nuon.n }}|{{ typeIs \"int\" 1 }}|{{ typeIsLike \"string\" \"x\" }}|{{ deepEqual .nuon.l (list \"a\" \"b\") }}",
        "{{ int64 \"42\" }}|{{ float64 \"3.5\" }}|{{ toString 1.5 }}|{{ toStrings (list 1 \"a\") }}|{{ atoi \"x\" }}",
        "{{ first .nuon.l }}|{{ rest .nuon.l }}|{{ last .nuon.nums }}|{{ initial .nuon.nums }}|{{ reverse .nuon.l }}|{{ has \"a\" .nuon.l }}",
        "{{ append .nuon.l \"c\" }}|{{ prepend .nuon.l \"z\" }}|{{ concat .nuon.l .nuon.nums }}|{{ without .nuon.l \"a\" }}|{{ compact (list \"\" 1 0 \"a\") }}",
        "{{ chunk 2 (list 1 2 3) }}|{{ slice .nuon.l 0 1 }}|{{ mustSlice .nuon.l 5 }}|{{ first .nuon.empty_l }}",
        "{{ pick .nuon.m \"a\" }}|{{ omit .nuon.m \"a\" }}|{{ values .nuon.m | sortAlpha }}",
        "{{ duration 90 }}|{{ duration \"95\" }}|{{ durationRound \"2h10m5s\" }}|{{ plural \"one\" \"many\" 2 }}",
        "{{ toDate \"2006-01-02\" \"2026-11-27\" | date \"Jan 2\" }}|{{ unixEpoch (toDate \"2006-01-02\" \"2026-11-27\") }}",
        "{{ dateModify \"1h\" (toDate \"2006-01-02\" \"2026-11-27\") }}",
        "{{ derivePassword 1 \"long\" \"password\" \"user\" \"example.com\" }}",
        "{{ fail \"stop here\" }}",
        "{{ include \"t\" . }}", "{{ tpl \"x\" . }}", "{{ lookup \"v1\" \"Pod\" \"\" \"\" }}",
        "{{ add1f 1.5 }}|{{ all 1 \"a\" true }}|{{ all 1 0 }}|{{ any 0 \"\" 1 }}|{{ any 0 }}",
        "{{ date_in_zone \"2006\" 0 \"UTC\" }}|{{ htmlDate 0 }}|{{ htmlDateInZone 86400 \"America/New_York\" }}|{{ dateInZone \"15:04 MST\" 1800000000 \"Europe/Paris\" }}|{{ dateInZone \"15:04 MST -07:00\" 1784000000 \"Europe/Paris\" }}|{{ dateInZone \"15:04\" 0 \"Nowhere/Land\" }}",
        "{{ date_modify \"-90m\" (toDate \"2006-01-02\" \"2026-11-27\") }}|{{ must_date_modify \"2h\" (toDate \"2006-01-02\" \"2026-11-27\") }}|{{ dateModify \"x\" (toDate \"2006-01-02\" \"2026-11-27\") }}",
        "{{ mustDateModify \"x\" (toDate \"2006-01-02\" \"2026-11-27\") }}",
        "{{ mustToDate \"2006-01-02\" \"x\" }}", "{{ mustToDate \"2006-01-02 15:04\" \"2026-11-27 10:30\" }}",
        "{{ toDate \"02 Jan 06 15:04 -0700\" \"27 Nov 26 10:30 +0100\" }}|{{ toDate \"Jan _2 15:04:05.000\" \"Nov  7 10:30:01.250\" }}|{{ toDate \"2006-01-02T15:04:05Z07:00\" \"2026-11-27T10:30:00Z\" | unixEpoch }}",
        "{{ toDate \"Monday, 02-Jan-06 15:04:05 MST\" \"Friday, 27-Nov-26 10:30:00 PST\" }}|{{ toDate \"3:04PM\" \"10:30AM\" }}|{{ toDate \"2006-01-02 15:04:05\" \"2026-11-27 10:30:00.123\" }}",
        "{{ (toDate \"2006-01-02\" \"2026-11-27\").Year }}|{{ (toDate \"2006-01-02\" \"2026-11-27\").Weekday }}|{{ (toDate \"2006-01-02\" \"2026-11-27\").Format \"Jan 2\" }}|{{ (toDate \"2006-01-02\" \"2026-11-27\").Unix }}",
        "{{ $t := toDate \"2006-01-02\" \"2026-11-27\" }}{{ $t.Month }}|{{ $t.YearDay }}|{{ printf \"%v|%s|%q|%T\" $t $t $t $t }}|{{ toJson $t }}",
        "{{ (semver \"v1.2\") }}|{{ (semver \"1.2.3-beta.1+b5\").Prerelease }}|{{ (semver \"1.2.3\").Original }}|{{ (semver \"2.0.0\").GreaterThan (semver \"1.9.9\") }}|{{ toJson (semver \"1.2\") }}",
        "{{ semver \"x\" }}", "{{ (semver \"1.0.0\").Nope }}", "{{ .nuon.s 1 }}",
        "{{ decryptAES \"k\" (encryptAES \"k\" \"secret\") }}|{{ encryptAES \"k\" \"\" }}|{{ decryptAES \"k\" \"\" }}",
        "{{ env \"FERRY_SURELY_UNSET\" }}|{{ expandenv \"a${FERRY_SURELY_UNSET}b$FERRY_SURELY_UNSET2 $\" }}",
        "{{ mustAppend .nuon.l \"c\" }}|{{ push .nuon.l \"c\" }}|{{ mustPush .nuon.l \"d\" }}|{{ mustPrepend .nuon.l \"z\" }}|{{ mustChunk 1 .nuon.l }}|{{ mustCompact (list \"\" \"a\") }}|{{ mustHas \"a\" .nuon.l }}",
        "{{ mustInitial .nuon.l }}|{{ mustRest .nuon.l }}|{{ mustReverse .nuon.l }}|{{ mustUniq (list 1 1) }}|{{ mustWithout .nuon.l \"a\" }}|{{ mustDeepCopy .nuon.m }}",
        "{{ mustMerge (dict \"a\" 1) (dict \"b\" 2) }}|{{ mustMergeOverwrite (dict \"a\" 1) (dict \"a\" 2) }}",
        "{{ $d := dict }}{{ $_ := merge $d (dict \"x\" 1) }}{{ $d }}|{{ $e := dict \"n\" (dict) }}{{ $_ := set $e.n \"k\" 2 }}{{ $e }}",
        "{{ mustRegexFind \"[0-9]+\" \"a12\" }}|{{ mustRegexFindAll \"[0-9]\" \"a12\" -1 }}|{{ mustRegexReplaceAll \"a\" \"banana\" \"o\" }}|{{ mustRegexReplaceAllLiteral \"a\" \"banana\" \"$1\" }}|{{ mustRegexSplit \"a\" \"banana\" -1 }}",
        "{{ mustRegexFind \"(\" \"a\" }}",
        "{{ mustToPrettyJson .nuon.m }}|{{ mustToRawJson \"<&>\" }}",
        "{{ osBase .nuon.path }}|{{ osClean \"/a/../b\" }}|{{ osDir .nuon.path }}|{{ osExt .nuon.path }}|{{ osIsAbs .nuon.path }}",
        "{{ trimall \"x\" \"xax\" }}|{{ gt 2 1 }}|{{ gt 1.5 2.5 }}|{{ hello }}",
        "{{ call .nuon.s }}", "{{ call nil }}",
        "{{ addf 0.1 0.2 }}|{{ mulf 0.1 3 }}|{{ subf 1 0.9 }}|{{ divf 1 3 3 }}",
    ]
    .into_iter()
    .map(exact)
    .collect();
    // Go 1.23's `else with`, which Nuon's Go 1.25 has.
    for t in [
        "{{ with .nuon.e }}x{{ else with .nuon.s }}{{ . }}{{ end }}",
        "{{ with .nuon.e }}x{{ else with .nuon.nul }}y{{ else }}z{{ end }}",
    ] {
        out.push(exact(t.to_string()));
    }
    for (t, want) in [
        ("{{ range 3 }}{{ . }}{{ end }}", "012"),
        (
            "{{ range $i := 2 }}{{ $i }}{{ end }}|{{ range $i, $x := 0 }}x{{ else }}none{{ end }}",
            "01|none",
        ),
        (
            "{{ sha512sum \"a\" }}",
            "1f40fc92da241694750979ee6cf582f2d5d7d28e18335de05abc54d0560e0f53\
             02860c652bf08d560252aa5e74210546f369fbbbce8c12cfc7957b2652fe9a75",
        ),
    ] {
        out.push(Case {
            template: t.to_string(),
            check: Check::Newer(want),
            html: false,
        });
    }
    for t in [
        "{{ required \"x\" .nuon.s }}",
        "{{ toYaml .nuon.m }}",
        "{{ genPrivateKey \"dsa\" | len }}",
        "{{ getHostByName \"localhost\" }}",
    ] {
        out.push(Case {
            template: t.to_string(),
            check: Check::Deliberate,
            html: false,
        });
    }
    // Go's types where they decide the result: an int64 is not an int, a map[string]string not
    // a map[string]interface {}, DeepEqual sees the type; a Month compares as a number.
    for t in [
        "{{ trunc (sub 5 2) \"hello\" }}",
        "{{ trunc (len \"abc\") \"hello\" }}",
        "{{ repeat (add1 1) \"x\" }}",
        "{{ keys (split \",\" \"a,b\") }}",
        "{{ hasKey (split \",\" \"a,b\") \"_0\" }}",
        "{{ (split \",\" \"a,b\")._1 }}",
        "{{ deepEqual (add 0 1) 1 }}|{{ deepEqual (list \"a\") (splitList \",\" \"a\") }}",
        "{{ deepEqual (splitList \",\" \"a\") (splitList \",\" \"a\") }}",
        "{{ eq (add 1 2) 3 }}|{{ lt (len \"ab\") (add 1 2) }}|{{ eq (semver \"1.2.3\").Minor 2 }}",
        "{{ eq (toDate \"2006-01-02\" \"2024-03-05\").Month 3 }}",
        "{{ $m := (toDate \"2006-01-02\" \"2024-03-05\").Month }}{{ printf \"%d %v %s %x %q %#v %T\" $m $m $m $m $m $m $m }}",
        "{{ slice (splitList \",\" \"a,b,c\") 1 | typeOf }}|{{ slice (until 4) 1 3 | printf \"%#v\" }}",
        "{{ append (splitList \",\" \"a\") \"b\" | typeOf }}|{{ rest (until 3) | typeOf }}",
        "{{ regexFindAll \"x\" \"abc\" -1 | printf \"%#v\" }}|{{ regexSplit \"b\" \"abc\" 0 | printf \"%T %v\" }}",
        "{{ deepCopy (splitList \",\" \"a\") | typeOf }}|{{ default (until 2) nil | typeOf }}",
        "{{ sortAlpha (list \"b\" \"a\") | printf \"%#v\" }}|{{ toStrings (list 1 nil) | printf \"%#v\" }}",
        "{{ keys (dict \"a\" 1) | printf \"%#v\" }}|{{ splitn \",\" 2 \"a,b,c\" | printf \"%#v\" }}",
        "{{ range $i, $x := (until 2) }}{{ printf \"%T %T \" $i $x }}{{ end }}",
        "{{ range (splitList \",\" \"a,b\") }}{{ printf \"%T \" . }}{{ end }}",
        "{{ index (splitList \",\" \"a,b\") 1 | typeOf }}|{{ index (split \",\" \"a\") \"_0\" }}",
        "{{ (toDate \"2006-01-02\" \"2024-03-05\").Unix | typeOf }}|{{ (toDate \"2006-01-02\" \"2024-03-05\").Year | typeOf }}",
        "{{ printf \"%#v %#v %v\" (semver \"1.2.3\").Major (add 1 1) (list (semver \"1.2.3\").Patch) }}",
        "{{ toJson (toDate \"2006-01-02\" \"2024-03-05\").Month }}|{{ toString (toDate \"2006-01-02\" \"2024-03-05\").Weekday }}",
        // A time's location (Local, UTC, a fixed zone) and its struct under a number's verb.
        "{{ $t := toDate \"2006-01-02\" \"2024-03-05\" }}{{ printf \"%#v|%#v|%#v\" $t $t.UTC $t.Local }}",
        "{{ $t := (toDate \"2006-01-02\" \"2024-03-05\").UTC }}{{ printf \"%d|%t|%e|%5.1f|%x|%o\" $t $t $t $t $t $t }}",
        "{{ printf \"%#v\" (toDate \"2006-01-02T15:04:05Z07:00\" \"2024-03-05T01:02:03Z\") }}",
        "{{ printf \"%#v\" (toDate \"2006-01-02T15:04:05Z07:00\" \"2024-03-05T01:02:03+00:00\") }}",
        "{{ printf \"%#v\" (toDate \"2006-01-02T15:04:05Z07:00\" \"2024-03-05T01:02:03+02:00\") }}",
        "{{ printf \"%#v\" (toDate \"2006-01-02 MST\" \"2024-03-05 UTC\") }}",
        "{{ deepEqual (toDate \"2006-01-02\" \"2024-03-05\") (toDate \"2006-01-02\" \"2024-03-05\").UTC }}",
        "{{ $v := semver \"1.2.3-pre+meta\" }}{{ printf \"%d|%t|%5.1f|%x|%v\" $v $v $v $v $v }}",
    ] {
        out.push(exact(t.to_string()));
    }
    for (t, form) in [
        ("{{ now | date \"2006\" }}", r"\d{4}"),
        // A time's struct under a number's verb: its location is a pointer into the process.
        (
            "{{ printf \"%d\" (toDate \"2006-01-02\" \"2024-03-05\") }}",
            r"\{0 63845193600 \d+\}",
        ),
        ("{{ printf \"%d\" now }}", r"\{\d{19,20} \d+ \d+\}"),
        ("{{ randAlphaNum 8 | len }}", "8"),
        ("{{ randAlpha 5 }}", "[A-Za-z]{5}"),
        ("{{ randAscii 5 | len }}", "5"),
        ("{{ randBytes 6 | len }}", "8"),
        ("{{ randNumeric 4 }}", "[0-9]{4}"),
        ("{{ randInt 1 3 }}", "[12]"),
        (
            "{{ uuidv4 }}",
            "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
        ),
        ("{{ shuffle \"ab\" | len }}", "2"),
        ("{{ htpasswd \"u\" \"p\" | len }}", "\\d+"),
        (
            "{{ ago (toDate \"2006-01-02\" \"2020-01-01\") | len }}",
            "\\d+",
        ),
        ("{{ genPrivateKey \"ecdsa\" | len }}", "227"),
        // RSA keys and certificates: their lengths vary with the numbers drawn, their form not.
        ("{{ genPrivateKey \"rsa\" | len }}", "32\\d\\d"),
        (
            "{{ genPrivateKey \"\" | substr 0 32 }}",
            "-----BEGIN RSA PRIVATE KEY-----\n",
        ),
        (
            "{{ genPrivateKey \"rsa\" | splitList \"\\n\" | len }}",
            "5[12]",
        ),
        (
            "{{ $c := genCA \"ca\" 365 }}{{ $c.Cert | substr 0 28 }}{{ $c.Key | substr 0 31 }}{{ $c.Key | len }}",
            "-----BEGIN CERTIFICATE-----\n-----BEGIN RSA PRIVATE KEY-----16\\d\\d",
        ),
        ("{{ (genCA \"ca\" 365).Cert | len }}", "1\\d{3}"),
        (
            "{{ $ca := genCA \"ca\" 365 }}{{ (genSignedCert \"x\" (list \"10.0.0.1\") (list \"x.local\") 365 $ca).Cert | len }}",
            "1\\d{3}",
        ),
        (
            "{{ (genCAWithKey \"ca\" 365 (genPrivateKey \"ecdsa\")).Cert | len }}",
            "\\d{3}",
        ),
        (
            "{{ (genSelfSignedCert \"x\" nil nil 365).Cert | len }}",
            "1\\d{3}",
        ),
        (
            "{{ $k := genPrivateKey \"ecdsa\" }}{{ $c := genSelfSignedCertWithKey \"x\" nil nil 365 $k }}{{ eq $c.Key $k }}",
            "true",
        ),
        (
            "{{ $ca := genCA \"ca\" 365 }}{{ (genSignedCertWithKey \"x\" nil nil 365 $ca (genPrivateKey \"ecdsa\")).Cert | len }}",
            "\\d{3,4}",
        ),
        (
            "{{ $c := genSelfSignedCert \"x\" nil nil 1 }}{{ $b := buildCustomCert ($c.Cert | b64enc) ($c.Key | b64enc) }}{{ eq $b.Cert $c.Cert }} {{ eq $b.Key $c.Key }}",
            "true true",
        ),
        ("{{ genSelfSignedCert \"x\" (list \"nope\") nil 1 }}", "x"),
        ("{{ genPrivateKey \"ed25519\" | len }}", "119"),
        // A float64 date (state numbers are) means now, as in sprig: Go and Ferry render a
        // moment apart, across a minute's or a day's end now and then.
        (
            "{{ date \"2006-01-02\" .nuon.unix }}",
            "\\d{4}-\\d{2}-\\d{2}",
        ),
        (
            "{{ dateInZone \"15:04\" .nuon.unix \"UTC\" }}",
            "\\d{2}:\\d{2}",
        ),
        ("{{ bcrypt \"x\" | len }}", "60"),
    ] {
        out.push(Case {
            template: t.to_string(),
            check: Check::Form(form),
            html: false,
        });
    }
    out
}

/// Templates as an app's readme has them, rendered as Nuon renders the readme (html/template:
/// what actions print is HTML-escaped).
fn readme() -> Vec<Case> {
    let html = |t: &str, check: Check| Case {
        template: t.to_string(),
        check,
        html: true,
    };
    let mut out: Vec<Case> = [
        "# {{ .nuon.s }}\n\n{{ .nuon.l }} {{ .nuon.m }} {{ .nuon.nul }} {{ .nuon.n }} {{ .nuon.big }}",
        "Install **{{ .nuon.s | upper }}** at {{ .nuon.url }}: {{ \"<a href='x'>&+</a>\" }}",
        "{{ range .nuon.l }}- {{ . }}\n{{ end }}{{ range $k, $v := .nuon.m }}{{ $k }}={{ $v }} {{ end }}",
        "{{ if .nuon.t }}<p>yes</p>{{ end }} {{ printf \"%q\" .nuon.s }} {{ toJson .nuon.m }} {{ .nuon.json }}",
        "{{ 1 }} {{ 2.5 }} {{ true }} {{ nil }} {{ \"\\x00\" }} {{ quote .nuon.s }}",
        "<a title=\"{{ .nuon.s }}\">{{ .nuon.path }}</a>",
        "{{ .nuon.missing }}", "{{ .nuon.s", "plain text, no action",
        "{{ define \"x\" }}<i>{{ . }}</i>{{ end }}{{ template \"x\" \"<b>\" }}",
    ]
    .into_iter()
    .map(|t| html(t, Check::Exact))
    .collect();
    for context in HTML_CONTEXTS {
        for value in HTML_VALUES {
            out.push(html(
                &context.replace("{{V}}", &format!("{{{{ {value} }}}}")),
                Check::Exact,
            ));
        }
    }
    out.extend(HTML_MORE.iter().map(|t| html(t, Check::Exact)));
    out
}

/// Places in an HTML document an action prints into, each escaped its own way by html/template
/// (`{{V}}` is where the action goes).
const HTML_CONTEXTS: &[&str] = &[
    "<p>{{V}}</p>",
    "<a title=\"{{V}}\">x</a>",
    "<a title='{{V}}'>x</a>",
    "<a title={{V}}>x</a>",
    "<a href=\"{{V}}\">x</a>",
    "<a href=\"/p?q={{V}}&r=1\">x</a>",
    "<a href=\"/p/{{V}}\">x</a>",
    "<a href={{V}}>x</a>",
    "<img src=\"{{V}}\" srcset=\"{{V}} 2x, /b.png 3x\">",
    "<a data-url=\"{{V}}\" xmlns:x=\"{{V}}\">x</a>",
    "<script>var x = {{V}};</script>",
    "<script>var a = {{V}} / 2; var b = {{V}}</script>",
    "<script>var s = \"{{V}}\"; var t = '{{V}}';</script>",
    "<script>var r = /{{V}}/;</script>",
    "<SCRIPT type=\"text/javascript\">x({{V}})</SCRIPT>",
    "<script type=\"text/template\"><b>{{V}}</b></script>",
    "<button onclick=\"f({{V}}, '{{V}}')\">b</button>",
    "<button onclick='return {{V}}'>b</button>",
    "<style>p { color: {{V}}; }</style>",
    "<p style=\"color: {{V}}\">x</p>",
    "<style>p { font-family: \"{{V}}\"; }</style>",
    "<style>p { background: url({{V}}); }</style>",
    "<style>p { background: url('/i/{{V}}'); }</style>",
    "<textarea>{{V}}</textarea><title>{{V}}</title>",
    "<!-- {{V}} -->after",
    "<script>/* {{V}} */ var a = 1; // {{V}}\n</script>",
    "<style>/* {{V}} */ p {}</style>",
    "<p {{V}}=\"x\">y</p>",
    "<input value=\"{{V}}\" checked>",
];

/// Values of every kind, and strings made to break out of each context.
const HTML_VALUES: &[&str] = &[
    ".nuon.s",
    ".nuon.n",
    ".nuon.f",
    ".nuon.nul",
    ".nuon.t",
    ".nuon.l",
    ".nuon.m",
    ".nuon.url",
    "\"javascript:alert(1)\"",
    "\"<b>\\\"it's\\\" & 'x' + y</b>\"",
    "\"a b=c`d\"",
    "\"expression(x)\"",
    "\"red\"",
    "\"/path with space/\\u00fc?x=1&y=2#f\"",
    "(toDate \"2006-01-02\" \"2024-03-05\")",
    "(semver \"1.2.3\")",
    "\"\\u2028line\\tnext\\n\"",
    "\"\"",
    "(toDate \"2006-01-02\" \"2024-03-05\").Month",
];

/// Go's own escapers in a pipeline, the template's text rewritten, and templates Go refuses.
const HTML_MORE: &[&str] = &[
    "<p>{{ .nuon.s | html }}</p><a href=\"{{ .nuon.url | html }}\">{{ html \"<\" .nuon.n }}</a>",
    "<a href=\"/q?{{ .nuon.s | urlquery }}\">{{ .nuon.s | urlquery }}</a><script>{{ .nuon.s | html }}</script>",
    "{{ html .nuon.s | upper }}",
    "<a title={{ .nuon.s | html }}>x</a>",
    "a < b and c<d, <!-- gone --> <!DOCTYPE html> <3 </ x",
    "<p>one</p><!-- {{ .nuon.s }}",
    "<script>var s = `{{ .nuon.s }}`;</script>",
    "<script>var a = {{ .nuon.s }};",
    "<a href=\"{{ .nuon.s }}",
    "<a title=\"x\"{{ .nuon.s }}>",
    "<a b{{ .nuon.s }}>",
    "<a title=x{{ .nuon.s }}y>z</a>",
    "<a href=\"/a&amp;b?{{ .nuon.s }}\">x</a>",
    "<a onclick=\"a = &quot;{{ .nuon.s }}&quot;\">x</a>",
    "{{ range .nuon.l }}<a href=\"/{{ . }}\">{{ . }}</a>{{ end }}",
    "{{ define \"link\" }}<a href=\"{{ . }}\">{{ . }}</a>{{ end }}{{ template \"link\" .nuon.url }}<script>{{ template \"link\" \"x\" }}</script>",
    "<script>x = 1 /{{ .nuon.n }}/ 2</script>",
    "<script>if (a) /{{ .nuon.s }}/.test(b)</script>",
    "<script>var t = `a ${ {{ .nuon.s }} } b ${ {x: {{ .nuon.n }}} } {{ .nuon.url }}`;</script>",
    "<script>var t = `${ `${ {{ .nuon.s }} }` }`; var u = {{ .nuon.n }};</script>",
    "<script>var s = \"</script><script>{{ .nuon.s }}\"; // </script> {{ .nuon.s }}\n</script>",
    "<script>var r = /a<\\/script>{{ .nuon.s }}/; <!-- {{ .nuon.s }}\n--> x\n#! y\n{{ .nuon.n }}</script>",
    "<script>var s = '<!-- <SCRIPT>' + {{ .nuon.s }};</script>",
    "{{ if .nuon.t }}<script>{{ end }}x</script>",
    "{{ if .nuon.fl }}<script>{{ end }}x</script>",
    "<a href=\"{{ if .nuon.t }}/a?{{ else }}/b{{ end }}{{ .nuon.s }}\">x</a>",
    "<a href=\"{{ if .nuon.t }}/a?{{ else }}/b?{{ end }}{{ .nuon.s }}\">x</a>",
    "<script>{{ range .nuon.l }}{{ . }}/{{ end }}</script>",
    "<script>var a = 1{{ if .nuon.t }}+{{ end }}/{{ .nuon.s }}/</script>",
    "{{ range .nuon.l }}<a href=\"{{ . }}{{ end }}\">x</a>",
    "<p {{ if .nuon.t }}title=\"{{ .nuon.s }}\"{{ end }}>x</p>",
    "{{ define \"open\" }}<a href=\"{{ end }}{{ template \"open\" }}{{ .nuon.s }}\">x</a>",
    "{{ with .nuon.e }}<b>{{ else }}<i>{{ end }}x",
];

/// Every case: the language's, then each unary function over every kind of argument. Nuon (and
/// Ferry) render only a string that mentions `.nuon`: a case that does not gets a comment that
/// does, so it is rendered, not passed through.
fn cases() -> Vec<Case> {
    let mut out = language();
    for f in UNARY {
        for a in ARGS {
            out.push(exact(format!("{{{{ {f} {a} }}}}")));
            out.push(exact(format!("{{{{ {a} | {f} }}}}")));
        }
    }
    out.extend(readme());
    for c in out.iter_mut().filter(|c| !c.html) {
        if !c.template.contains(".nuon") {
            c.template.push_str("{{/* .nuon */}}");
        }
    }
    out
}

/// Renders every case through the Go renderer: Ok(output) or Err(error) each.
fn go_render(bin: &Path, cases: &[Case]) -> Vec<Result<String, String>> {
    let input: Vec<Value> = cases
        .iter()
        .map(|c| json!({"template": c.template, "state": state(), "html": c.html}))
        .collect();
    let mut child = Command::new(bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run nuon-render");
    let mut stdin = child.stdin.take().unwrap();
    let body = serde_json::to_vec(&input).unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&body));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "nuon-render failed");
    let results: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    results
        .into_iter()
        .map(|r| match r.get("out").and_then(Value::as_str) {
            Some(o) => Ok(o.to_string()),
            None => Err(r["err"].as_str().unwrap_or_default().to_string()),
        })
        .collect()
}

fn agree(check: Check, go: &Result<String, String>, ferry: &Result<String, String>) -> bool {
    match (check, go, ferry) {
        (Check::Newer(want), _, _) => ferry.as_deref() == Ok(want),
        (_, Err(_), Err(_)) => true,
        (Check::Form(re), Ok(a), Ok(b)) => {
            let re = regex::Regex::new(&format!("^(?:{re})$")).unwrap();
            re.is_match(a) && re.is_match(b)
        }
        (_, Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Whether validation warns: of a function the template calls, or because rendering it with
/// only what validation knows fails.
fn warned(template: &str) -> bool {
    use ferry_appconfig::template::{Mode, Template, differs_from_nuon};
    let t = Template::parse(template).expect("the case parses");
    t.functions()
        .iter()
        .any(|(f, _)| differs_from_nuon(f).is_some())
        || t.render(&json!({}), Mode::Lenient).is_err()
}

#[test]
fn ferry_renders_as_go_and_sprig_render() {
    let bin = repo().join(".tools/bin/nuon-render");
    assert!(
        bin.is_file(),
        "{} is not built: run scripts/install-go-sprig",
        bin.display()
    );
    let cases = cases();
    let go = go_render(&bin, &cases);
    let root = json!({"nuon": state()});
    let mut report = String::new();
    let mut failures = 0;
    for (c, g) in cases.iter().zip(&go) {
        let f = if c.html {
            ferry_appconfig::template::render_readme(&c.template, &root)
        } else {
            ferry_appconfig::template::render(&c.template, &root)
        }
        .map_err(|e| e.to_string());
        let agrees = agree(c.check, g, &f);
        let problem = match c.check {
            Check::Deliberate if agrees => Some("tagged deliberate, but agrees"),
            Check::Deliberate if !warned(&c.template) => Some("differs, but validation is silent"),
            Check::Deliberate => None,
            _ if agrees => None,
            _ => Some("disagrees"),
        };
        if let Some(problem) = problem {
            failures += 1;
            report.push_str(&format!(
                "{} ({problem})\n  go:    {g:?}\n  ferry: {f:?}\n",
                c.template
            ));
        }
    }
    let target = repo().join("target/gotemplate-disagreements.txt");
    let _ = std::fs::write(&target, &report);
    println!(
        "{} cases against Go and sprig: {failures} wrong; see {}",
        cases.len(),
        target.display()
    );
    assert!(
        cases.len() >= 1500,
        "{} cases: the differential test covers at least 1,500",
        cases.len()
    );
    assert_eq!(failures, 0, "{report}");
}

/// Every function a Nuon template can call (sprig's map, `now`, Go's built-ins, as the real
/// renderer lists them) is Ferry's too, or refused with a reason; and some case calls it.
#[test]
fn ferry_has_every_function_nuon_has() {
    let bin = repo().join(".tools/bin/nuon-render");
    assert!(bin.is_file(), "run scripts/install-go-sprig");
    let out = Command::new(&bin).arg("--functions").output().unwrap();
    assert!(out.status.success());
    let names: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(names.len() > 200, "{names:?}");
    let ferry: Vec<&str> = ferry_appconfig::template::functions()
        .map(|f| f.0)
        .collect();
    let refused: Vec<&str> = ferry_appconfig::template::REFUSED
        .iter()
        .map(|r| r.0)
        .collect();
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !ferry.contains(&n.as_str()) && !refused.contains(&n.as_str()))
        .collect();
    assert!(missing.is_empty(), "Ferry lacks {missing:?}");
    let cases = cases();
    let word = |t: &str, n: &str| {
        t.match_indices(n).any(|(i, _)| {
            let before = t[..i].chars().last();
            let after = t[i + n.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
                && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    };
    let uncovered: Vec<&String> = names
        .iter()
        .filter(|n| !cases.iter().any(|c| word(&c.template, n)))
        .collect();
    assert!(uncovered.is_empty(), "no case calls {uncovered:?}");
}
