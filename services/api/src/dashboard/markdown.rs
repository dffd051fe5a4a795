//! A vendor's Markdown (an app's portal readme) as HTML for the dashboard: CommonMark with
//! tables, by pulldown-cmark. The vendor's text is not trusted on the customer's page: raw HTML
//! in it is shown as text, never passed through, and a link or image that is not `http(s):`,
//! `mailto:`, relative or an anchor loses its target. The page's Content-Security-Policy (no
//! inline script, only this origin's) stands behind both.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, html};

/// `markdown` as HTML safe to put in a page.
pub(super) fn to_html(markdown: &str) -> String {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_STRIKETHROUGH);
    let events = Parser::new_ext(markdown, options).map(|e| match e {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe(dest_url),
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Image {
            link_type,
            dest_url: safe(dest_url),
            title,
            id,
        }),
        other => other,
    });
    let mut out = String::new();
    html::push_html(&mut out, events);
    out
}

/// `url` if its scheme is one a page may follow, else nothing.
fn safe(url: CowStr<'_>) -> CowStr<'_> {
    let lower = url.trim().to_ascii_lowercase();
    let scheme = lower.split_once(':').map(|(s, _)| s);
    let ok = match scheme {
        None => true,
        Some(s) => matches!(s, "http" | "https" | "mailto") || s.contains(['/', '?', '#']),
    };
    if ok { url } else { CowStr::Borrowed("") }
}

#[cfg(test)]
mod tests {
    use super::to_html;

    #[test]
    fn markdown_becomes_html_and_the_vendors_html_and_scripts_do_not() {
        let html = to_html(
            "### What\n\n- one `two`\n\n[docs](https://x.test/a) [bad](javascript:alert(1))\n\n<script>alert(1)</script>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        );
        assert!(html.contains("<h3>What</h3>"), "{html}");
        assert!(html.contains("<li>one <code>two</code></li>"), "{html}");
        assert!(
            html.contains(r#"<a href="https://x.test/a">docs</a>"#),
            "{html}"
        );
        assert!(!html.contains("javascript:"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("<table>"), "{html}");
    }
}
