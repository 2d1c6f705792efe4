//! The shell every plangate HTML page shares: one self-contained document (inline CSS,
//! inline SVG, no scripts, nothing fetched), so a page can be mailed, archived as a CI
//! artifact or opened offline and still show everything.

use std::fmt::{self, Write as _};

/// The one stylesheet: tables of counts, a table of facts, the plots' text and axes.
const CSS: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;\
margin:2rem auto;max-width:1100px;padding:0 1rem;color:#1d2430;background:#fff;line-height:1.4}\
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}\
p.lede{color:#555;margin-top:0}\
table{border-collapse:collapse;margin:.5rem 0}th,td{padding:.25rem .8rem;border-bottom:1px solid #e5e5e5;text-align:left}\
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}\
tr.sub th{padding-left:1.8rem;font-weight:normal;color:#444}\
thead th{border-bottom:2px solid #999}\
table.facts th{font-weight:normal;color:#555;white-space:nowrap;vertical-align:top}\
.q{color:#c0392b;font-weight:600}\
.row{display:flex;flex-wrap:wrap;gap:0 3rem;align-items:flex-start}\
table.tasks td{vertical-align:top;overflow-wrap:anywhere}table.tasks code{white-space:pre-wrap;word-break:break-all}\
table.tasks td:nth-child(6){min-width:20rem}\
svg{display:block;margin:.5rem 0;max-width:100%;height:auto}\
svg text{font-family:inherit;font-size:12px;fill:#1d2430}\
svg .axis{stroke:#888;stroke-width:1}svg .grid{stroke:#eee;stroke-width:1}\
svg .title{font-size:15px;font-weight:600}svg .muted{fill:#777}\
";

/// Escapes text for HTML element content and double- or single-quoted attributes, which
/// is all SVG embedded in HTML needs too.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` cut to at most `max` characters (an ellipsis in place of the rest), so one run's
/// long text (a task ID, an argument path, a sentence) cannot make its page large.
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((at, _)) => {
            let mut out = s[..at].to_string();
            out.push('\u{2026}');
            out
        }
    }
}

/// A table of a run's facts, one row each: `(key, name, html)` gives the row's label
/// (escaped) and its cell (trusted HTML, `id="fact-KEY"`, for tests and scripts to
/// find).
pub fn facts_table(id: &str, rows: &[(&str, &str, String)]) -> String {
    let mut s = format!("<table class=\"facts\" id=\"{}\">\n<tbody>\n", escape(id));
    for (key, name, html) in rows {
        let _ = writeln!(
            s,
            "<tr><th>{}</th><td id=\"fact-{}\">{html}</td></tr>",
            escape(name),
            escape(key)
        );
    }
    s.push_str("</tbody>\n</table>\n");
    s
}

/// A table whose head row is `head` (the first cell heads the row labels, the rest are
/// numbers) and whose rows are a label (HTML) and its numbers.
pub fn count_table(id: &str, head: &[&str], rows: &[(String, Vec<u64>)]) -> String {
    let mut s = format!("<table id=\"{id}\">\n<thead><tr>");
    for (i, h) in head.iter().enumerate() {
        let class = if i == 0 { "" } else { " class=\"n\"" };
        let _ = write!(s, "<th{class}>{}</th>", escape(h));
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for (label, counts) in rows {
        let _ = write!(s, "<tr><th>{label}</th>");
        for n in counts {
            let _ = write!(s, "<td class=\"n\">{n}</td>");
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody>\n</table>\n");
    s
}

/// A page being written. It opens with the head and the stylesheet, takes the body's
/// HTML (through [`fmt::Write`], or its helpers for the parts every page has), and
/// [`Page::finish`] closes it. What is written raw is trusted HTML: run text goes
/// through [`escape`] first.
#[derive(Debug, Clone)]
pub struct Page {
    html: String,
}

impl Page {
    /// A page whose title (the browser's tab, escaped here) is `title`.
    pub fn new(title: &str) -> Page {
        let mut html = String::new();
        let _ = write!(
            html,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n\
             <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
            escape(title)
        );
        Page { html }
    }

    /// The page's heading, once at the top.
    pub fn h1(&mut self, text: &str) {
        let _ = writeln!(self.html, "<h1>{}</h1>", escape(text));
    }

    /// A section's heading.
    pub fn h2(&mut self, text: &str) {
        let _ = writeln!(self.html, "<h2>{}</h2>", escape(text));
    }

    /// Opens a section (`<section id="ID">`, for tests and scripts to find) with its
    /// heading; [`Page::end_section`] closes it.
    pub fn section(&mut self, id: &str, title: &str) {
        let _ = writeln!(
            self.html,
            "<section id=\"{}\">\n<h2>{}</h2>",
            escape(id),
            escape(title)
        );
    }

    /// Closes the section [`Page::section`] opened.
    pub fn end_section(&mut self) {
        self.html.push_str("</section>\n");
    }

    /// Trusted HTML (a table, a paragraph, a plot from [`crate::plot`]), as it is.
    pub fn push_html(&mut self, html: &str) {
        self.html.push_str(html);
    }

    /// A table of a run's facts ([`facts_table`]).
    pub fn facts(&mut self, id: &str, rows: &[(&str, &str, String)]) {
        self.html.push_str(&facts_table(id, rows));
    }

    /// The whole document, closed.
    pub fn finish(mut self) -> String {
        self.html.push_str("</body>\n</html>\n");
        self.html
    }
}

impl fmt::Write for Page {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.html.push_str(s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(escape("plain ü"), "plain ü");
    }

    #[test]
    fn a_page_is_one_closed_document_with_its_text_escaped() {
        let mut p = Page::new("a <run>");
        p.h1("x & y");
        p.facts("facts", &[("seed", "seed <s>", "<code>7</code>".into())]);
        let html = p.finish();
        assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"));
        assert!(html.contains("<title>a &lt;run&gt;</title>"));
        assert!(html.contains("<h1>x &amp; y</h1>\n"));
        assert!(html.contains(
            "<tr><th>seed &lt;s&gt;</th><td id=\"fact-seed\"><code>7</code></td></tr>\n"
        ));
        assert!(html.ends_with("</body>\n</html>\n"));
        assert!(!html.contains("<script") && !html.contains("href="));
    }

    #[test]
    fn cut_keeps_short_text_and_marks_a_cut() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcd", 3), "abc\u{2026}");
        assert_eq!(cut("ééé", 1), "é\u{2026}");
        let mut p = Page::new("t");
        p.section("a-b", "A & B");
        p.end_section();
        assert!(
            p.finish()
                .contains("<section id=\"a-b\">\n<h2>A &amp; B</h2>\n</section>\n")
        );
    }
}
