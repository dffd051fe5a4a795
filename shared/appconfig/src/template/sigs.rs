//! The Go types of the functions' parameters, and the conversion text/template makes of each
//! argument to its parameter's type before a call.
//!
//! Go checks every argument against the function's signature: a value must already be of the
//! parameter's type (`upper .port` fails, a float64 is not a string; `trunc .n "abc"` fails, a
//! float64 is not an int), while a constant converts when it can (`trunc 3 .s`, `round .f 2`,
//! `addf 1 2`: the `1` becomes a float64). A function whose parameters are all `interface{}`
//! (most of sprig's) takes anything. The types are sprig 3.x's and Go's own (`printf` takes a
//! string first).

use super::gofmt::type_name;
use super::value::{Elem, IntTy, V};

/// A parameter's Go type, as far as arguments are checked against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// `interface{}`: anything.
    Any,
    Str,
    Int,
    Float,
    Bool,
    /// `map[string]interface{}`.
    Map,
}

use Ty::*;

/// Fixed parameters and, for a variadic function, the type of the rest. Functions not listed
/// take `interface{}` throughout.
fn signature(name: &str) -> Option<(&'static [Ty], Option<Ty>)> {
    Some(match name {
        "abbrev" | "indent" | "nindent" | "repeat" | "trunc" | "wrap" => (&[Int, Str], None),
        "abbrevboth" | "substr" => (&[Int, Int, Str], None),
        "wrapWith" => (&[Int, Str, Str], None),
        "adler32sum" | "fail" | "b32dec" | "b32enc" | "b64dec" | "b64enc" | "bcrypt"
        | "camelcase" | "fromJson" | "mustFromJson" | "getHostByName" | "initials"
        | "kebabcase" | "lower" | "nospace" | "regexQuoteMeta" | "semver" | "sha1sum"
        | "sha256sum" | "sha512sum" | "shuffle" | "snakecase" | "swapcase" | "title" | "trim"
        | "untitle" | "upper" | "urlParse" | "atoi" | "base" | "dir" | "clean" | "ext"
        | "isAbs" | "osBase" | "osDir" | "osClean" | "osExt" | "osIsAbs" | "env" | "expandenv" => {
            (&[Str], None)
        }
        "contains" | "hasPrefix" | "hasSuffix" | "htpasswd" | "regexFind" | "mustRegexFind"
        | "regexMatch" | "mustRegexMatch" | "semverCompare" | "split" | "splitList" | "toDate"
        | "mustToDate" | "trimAll" | "trimall" | "trimPrefix" | "trimSuffix" => (&[Str, Str], None),
        "regexFindAll" | "mustRegexFindAll" | "regexSplit" | "mustRegexSplit" => {
            (&[Str, Str, Int], None)
        }
        "regexReplaceAll"
        | "mustRegexReplaceAll"
        | "regexReplaceAllLiteral"
        | "mustRegexReplaceAllLiteral"
        | "replace" => (&[Str, Str, Str], None),
        "splitn" => (&[Str, Int, Str], None),
        "plural" => (&[Str, Str, Int], None),
        "date" | "kindIs" | "typeIs" | "typeIsLike" | "join" => (&[Str, Any], None),
        "dateInZone" | "date_in_zone" => (&[Str, Any, Str], None),
        "derivePassword" => (&[Int, Str, Str, Str, Str], None),
        "genPrivateKey" => (&[Str], None),
        "encryptAES" | "decryptAES" | "buildCustomCert" => (&[Str, Str], None),
        "genCA" => (&[Str, Int], None),
        "genCAWithKey" => (&[Str, Int, Str], None),
        "genSelfSignedCert" => (&[Str, Any, Any, Int], None),
        "genSelfSignedCertWithKey" => (&[Str, Any, Any, Int, Str], None),
        "genSignedCert" => (&[Str, Any, Any, Int, Any], None),
        "genSignedCertWithKey" => (&[Str, Any, Any, Int, Any, Str], None),
        "chunk" | "mustChunk" => (&[Int, Any], None),
        "get" | "hasKey" | "unset" => (&[Map, Str], None),
        "set" => (&[Map, Str, Any], None),
        "keys" => (&[], Some(Map)),
        "merge" | "mergeOverwrite" | "mustMerge" | "mustMergeOverwrite" => (&[Map], Some(Map)),
        "pick" | "omit" => (&[Map], Some(Str)),
        "pluck" => (&[Str], Some(Map)),
        "values" | "urlJoin" => (&[Map], None),
        "randAlpha" | "randAlphaNum" | "randAscii" | "randNumeric" | "until" => (&[Int], None),
        "randInt" => (&[Int, Int], None),
        "untilStep" => (&[Int, Int, Int], None),
        "seq" => (&[], Some(Int)),
        "round" => (&[Any, Int], Some(Float)),
        "ternary" => (&[Any, Any, Bool], None),
        "printf" => (&[Str], Some(Any)),
        _ => return None,
    })
}

/// An argument as the call gets it: its value, and whether it was written as a constant (which
/// converts to the parameter's type) or is a value (which must already be of it).
pub struct Arg {
    pub value: V,
    pub constant: bool,
    /// Read from a field (`.a.b`): of type `interface{}` to Go, so a nil from it fits no typed
    /// parameter, where an untyped nil fits a map.
    pub field: bool,
}

/// The arguments of a call to `name`, each converted to its parameter's type as Go converts it;
/// or Go's complaint about the first that cannot be.
pub fn convert(name: &str, args: Vec<Arg>) -> Result<Vec<V>, String> {
    let Some((fixed, rest)) = signature(name) else {
        return Ok(args.into_iter().map(|a| a.value).collect());
    };
    args.into_iter()
        .enumerate()
        .map(|(i, a)| match fixed.get(i).copied().or(rest) {
            Some(ty) => to(ty, a),
            None => Ok(a.value),
        })
        .collect()
}

/// One argument to `ty`.
fn to(ty: Ty, a: Arg) -> Result<V, String> {
    let v = a.value;
    let ok = match (&v, ty) {
        (_, Any) | (V::Unknown, _) => true,
        (V::Str(_), Str) | (V::Bool(_), Bool) | (V::Map(_, Elem::Any), Map) => true,
        // Only an `int` is an int: sprig's arithmetic gives `int64`, which Go refuses here.
        (V::Int(_, IntTy::Int), Int) | (V::Num(_), Float) => true,
        // Go passes an untyped nil as a nil map, which reads as empty.
        (V::Null, Map) if !a.field => return Ok(V::map(Default::default())),
        // A constant converts: `2.0` to an int, `2` to a float64.
        (V::Num(f), Int) if a.constant && f.fract() == 0.0 => return Ok(V::int(*f as i64)),
        (V::Int(n, _), Float) if a.constant => return Ok(V::Num(*n as f64)),
        _ => false,
    };
    if ok {
        return Ok(v);
    }
    let want = match ty {
        Any => "interface {}",
        Str => "string",
        Int => "int",
        Float => "float64",
        Bool => "bool",
        Map => "map[string]interface {}",
    };
    Err(match v {
        V::Null if a.field => format!("wrong type for value; expected {want}; got interface {{}}"),
        V::Null => format!("invalid value; expected {want}"),
        v if a.constant => format!("expected {want}; found {}", super::gofmt::value(&v)),
        v => format!(
            "wrong type for value; expected {want}; got {}",
            type_name(&v)
        ),
    })
}
