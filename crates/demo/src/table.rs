//! The demo's table as the terminal shows it: fixed-width columns, the same rows as the
//! HTML page's table, then what the run found and what it cost.

use crate::results::{COLUMNS, DemoReport, table_rows};

/// The table as the terminal shows it.
pub(crate) fn table_text(r: &DemoReport) -> String {
    let mut out = String::new();
    write_table(&mut out, r).expect("writing to a String cannot fail");
    out
}

fn write_table(out: &mut String, r: &DemoReport) -> std::fmt::Result {
    use std::fmt::Write as _;
    writeln!(
        out,
        "plangate demo: {} tasks x {} samples over the seed world (seed {})",
        r.tasks, r.samples, r.seed
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "{:<30}{:>14}{:>14}{:>17}{:>16}",
        "", COLUMNS[0].1, COLUMNS[1].1, COLUMNS[2].1, COLUMNS[3].1
    )?;
    for row in table_rows(r) {
        let name = if row.sub {
            format!("  {}", row.name)
        } else {
            row.name.to_string()
        };
        let [a, b, c, d] = &row.cells;
        writeln!(out, "{name:<30}{a:>14}{b:>14}{c:>17}{d:>16}")?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "mis-declared tools found:  {}",
        if r.quarantined.is_empty() {
            "none".into()
        } else {
            r.quarantined.join(", ")
        }
    )?;
    writeln!(
        out,
        "live sources that changed: {}",
        if r.changed_live_mounts.is_empty() {
            "none".into()
        } else {
            r.changed_live_mounts.join(", ")
        }
    )?;
    writeln!(
        out,
        "world driver:              {}",
        if r.driver_actions.is_empty() {
            "off".into()
        } else {
            r.driver_actions.join("; ")
        }
    )?;
    writeln!(out, "epoch:                     {}", r.epoch_id)?;
    writeln!(
        out,
        "defer path:                {} tasks executed again in {} fully pinned epoch(s), {} calls executed, {} reused",
        r.retry.tasks_retried,
        r.retry.rounds.len(),
        r.retry.calls,
        r.retry.reused
    )?;
    let p = &r.retry_price;
    writeln!(
        out,
        "its price:                 {:.1}% more calls ({} on {}; {:.1}% executed), {:.1}% more wall time ({:.2} s on {:.2} s)",
        p.calls_share * 100.0,
        p.retry_calls,
        p.first_epoch_calls,
        p.executed_share * 100.0,
        p.wall_share * 100.0,
        p.retry_wall_s,
        p.wall_without_retry_s
    )?;
    writeln!(
        out,
        "wall time {:.2} s, {} calls, {:.0} calls/s",
        r.elapsed_s, r.calls, r.calls_per_s
    )?;
    Ok(())
}
