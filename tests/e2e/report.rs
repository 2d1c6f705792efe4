//! `plangate demo --html` end to end: the report a real run writes renders in a real
//! browser (headless Chromium, installed by scripts/setup) with its table, both plots and
//! the run's own numbers, and is self-contained enough to render with the network off.
//! The browser's side is shared with the run pages' tests (`page`).

use std::path::Path;
use std::process::{Command, Output};

use crate::tools::{build_tools, repo};

/// The DOM headless Chromium builds from the page at `html`, once it has checked that
/// the browser ran and logged no console message (a script error would be one: the
/// pages have no scripts, so there must be none).
pub(crate) fn rendered_dom(html: &Path) -> String {
    let profile = tempfile::tempdir().expect("profile dir");
    let url = format!("file://{}", html.display());
    let dumped = chromium(
        profile.path(),
        &["--enable-logging=stderr", "--v=0", "--dump-dom"],
        &url,
    );
    let stderr = String::from_utf8_lossy(&dumped.stderr);
    assert!(
        dumped.status.success(),
        "chromium --dump-dom failed:\n{stderr}"
    );
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "the page logged: {console:?}");
    String::from_utf8_lossy(&dumped.stdout).into_owned()
}

/// Chromium with everything that could reach the network or a profile switched off, and
/// a fresh profile folder so runs never share state.
pub(crate) fn chromium(profile: &Path, args: &[&str], url: &str) -> Output {
    Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .output()
        .expect("chromium runs (scripts/setup installs it)")
}

#[test]
fn the_html_report_renders_with_its_table_and_plots() {
    build_tools();
    let dir = tempfile::tempdir().expect("temp dir");
    let html = dir.path().join("report.html");
    let json = dir.path().join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_plangate"))
        .current_dir(repo())
        .args(["demo", "--tasks", "300", "--html"])
        .arg(&html)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("plangate demo runs");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).expect("the report was written");
    // Self-contained: nothing for the browser to fetch.
    for external in ["<script", "src=", "href=", "@import", "url("] {
        assert!(!page.contains(external), "report references {external}");
    }
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();

    let dom = rendered_dom(&html);
    assert!(dom.contains("<table id=\"decisions\">"), "{dom}");
    // Both plots made it into the DOM as SVG, with their titles.
    assert!(dom.matches("<svg").count() >= 2, "{dom}");
    assert!(dom.contains("<svg id=\"arg-hist\""), "{dom}");
    assert!(dom.contains("<svg id=\"tool-results\""), "{dom}");
    assert!(dom.contains("Argument agreement by label"), "{dom}");
    assert!(dom.contains("Result agreement per tool"), "{dom}");
    // The table shows this run's numbers, as --json has them.
    for col in ["naive", "gate"] {
        for key in [
            "rejected",
            "rejected_correct",
            "deferred",
            "accepted",
            "accepted_hallucinated",
        ] {
            let want = &r[col][key];
            assert!(
                dom.contains(&format!("id=\"{col}-{key}\">{want}</td>")),
                "{col} {key} should read {want}"
            );
        }
        let fp = r[col]["false_positive_rate"].as_f64().unwrap() * 100.0;
        assert!(
            dom.contains(&format!("id=\"{col}-false_positive_rate\">{fp:.1}%</td>")),
            "{col} false-positive share should read {fp:.1}%"
        );
    }
    assert!(dom.contains(r["epoch_id"].as_str().unwrap()));
    for tool in r["quarantined"].as_array().unwrap() {
        assert!(
            dom.contains(&format!("{} (quarantined)", tool.as_str().unwrap())),
            "{tool} not marked quarantined in the plot"
        );
    }
    // One histogram bar per bin and label (11 bins for 10 samples), and the bars count
    // every task once, under its own label.
    let hist = &dom[dom.find("<svg id=\"arg-hist\"").unwrap()..];
    let hist = &hist[..hist.find("</svg>").unwrap()];
    let mut bars = Vec::new();
    for title in hist.split("<title>").skip(1) {
        let title = &title[..title.find("</title>").unwrap()];
        let Some((label, rest)) = title.split_once(", agreement ") else {
            continue;
        };
        let n: u64 = rest
            .split(": ")
            .nth(1)
            .and_then(|t| t.strip_suffix(" tasks"))
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("bar title {title:?}"));
        bars.push((label.to_string(), n));
    }
    assert_eq!(bars.len(), 22, "{hist}");
    let sum = |want: &str| -> u64 { bars.iter().filter(|(l, _)| l == want).map(|(_, n)| n).sum() };
    let hallucinated = r["hallucinated_tasks"].as_u64().unwrap();
    assert_eq!(sum("hallucinated"), hallucinated);
    assert_eq!(sum("correct"), r["tasks"].as_u64().unwrap() - hallucinated);

    let url = format!("file://{}", html.display());
    let profile = tempfile::tempdir().expect("profile dir");
    let png = dir.path().join("report.png");
    let shot = chromium(
        profile.path(),
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1200,1600",
        ],
        &url,
    );
    assert!(
        shot.status.success(),
        "chromium --screenshot failed:\n{}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let bytes = std::fs::read(&png).expect("a screenshot was written");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    // A blank or error page compresses to a few KB; this page has text, tables and bars.
    assert!(
        bytes.len() > 40_000,
        "screenshot only {} bytes",
        bytes.len()
    );
}
