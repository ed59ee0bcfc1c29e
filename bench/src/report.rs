//! The end of a run: the alp-style table, the JSON summary and the
//! self-contained HTML report (inline SVG, no CDN: it opens offline).

use std::fmt::Write as _;

use serde::Serialize;

use super::stats::{EndpointSummary, Message, Phase, SecondSummary, Severity};

#[derive(Debug, Clone, Serialize)]
pub struct ErrorCounts {
    pub critical: u64,
    pub application: u64,
    pub trivial: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct EndpointRow {
    pub method: String,
    pub path: String,
    pub count: u64,
    pub errors: u64,
    /// Answers per status class: 2xx, 3xx, 4xx, 5xx.
    pub status_classes: [u64; 4],
    pub avg_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub avg_body_bytes: u64,
}

/// The `--json` document.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub pass: bool,
    pub score: i64,
    pub load_level: u32,
    pub requests: u64,
    pub errors: ErrorCounts,
    /// 503 answers with `Retry-After` (each also counted a trivial error).
    pub unavailable: u64,
    /// Score posts of the bench's players that the server applied, by the
    /// bench's model (players whose outcome stayed unknown left out).
    pub posts_applied: u64,
    /// Players with a post whose outcome stayed unknown (a timeout, say):
    /// left out of the exact checks.
    pub players_uncertain: u64,
    pub endpoints: Vec<EndpointRow>,
    pub messages: Vec<Message>,
    /// Per second: requests, errors, p50 and p99 (a soak reads whether
    /// latency held steady from here).
    pub timeline: Vec<SecondSummary>,
    /// When each phase of the run began (initialize, quiet check, load
    /// levels, final check).
    pub phases: Vec<Phase>,
}

impl Summary {
    pub fn endpoint_rows(endpoints: &[EndpointSummary]) -> Vec<EndpointRow> {
        endpoints
            .iter()
            .map(|e| EndpointRow {
                method: e.method.clone(),
                path: e.path.clone(),
                count: e.count,
                errors: e.errors,
                status_classes: e.status_classes,
                avg_ms: e.avg_ms,
                p50_ms: e.p50_ms,
                p90_ms: e.p90_ms,
                p95_ms: e.p95_ms,
                p99_ms: e.p99_ms,
                max_ms: e.max_ms,
                avg_body_bytes: e.avg_body_bytes,
            })
            .collect()
    }
}

/// The per-endpoint columns (header, text width) before METHOD and URI,
/// shared by the text table and the HTML report.
const COLUMNS: [(&str, usize); 15] = [
    ("COUNT", 7),
    ("2XX", 6),
    ("3XX", 6),
    ("4XX", 6),
    ("5XX", 6),
    ("ERR", 5),
    ("MIN", 8),
    ("AVG", 8),
    ("P50", 8),
    ("P90", 8),
    ("P95", 8),
    ("P99", 8),
    ("MAX", 8),
    ("SUM", 10),
    ("AVG(B)", 8),
];

/// An endpoint's cells, in [`COLUMNS`] order: counts, latencies in ms, the
/// mean body size in bytes.
fn cells(e: &EndpointSummary) -> [String; 15] {
    let [ok, redirect, client, server] = e.status_classes;
    let ms = |value: f64| format!("{value:.2}");
    [
        e.count.to_string(),
        ok.to_string(),
        redirect.to_string(),
        client.to_string(),
        server.to_string(),
        e.errors.to_string(),
        ms(e.min_ms),
        ms(e.avg_ms),
        ms(e.p50_ms),
        ms(e.p90_ms),
        ms(e.p95_ms),
        ms(e.p99_ms),
        ms(e.max_ms),
        format!("{:.1}", e.total_ms),
        e.avg_body_bytes.to_string(),
    ]
}

/// alp's table: one row per endpoint, sorted by total time; answers per
/// status class, latencies in ms, the mean body size in bytes. ERR counts
/// requests without an answer and 5xx.
pub fn table(endpoints: &[EndpointSummary]) -> String {
    let mut out = String::new();
    for (name, width) in COLUMNS {
        let _ = write!(out, "{name:>width$} ");
    }
    out.push_str(" METHOD URI\n");
    for e in endpoints {
        for ((_, width), cell) in COLUMNS.iter().zip(cells(e)) {
            let _ = write!(out, "{cell:>width$} ");
        }
        let _ = writeln!(out, " {:<6} {}", e.method, e.path);
    }
    out
}

pub fn error_summary(messages: &[Message], counts: &ErrorCounts) -> String {
    let mut out = format!(
        "errors: {} critical, {} application, {} trivial\n",
        counts.critical, counts.application, counts.trivial
    );
    for severity in [Severity::Critical, Severity::Application, Severity::Trivial] {
        for message in messages.iter().filter(|m| m.severity == severity).take(10) {
            let _ = writeln!(out, "  [{}] {}", describe(message), message.text);
        }
    }
    if messages.iter().any(|m| m.text.ends_with(RATE_LIMITED)) {
        out.push_str(RATE_LIMIT_HINT);
    }
    out
}

/// How the bench words a 429 (see `bench::http`).
pub const RATE_LIMITED: &str = "rate limited (429)";

/// Every virtual player of a run comes from the bench's one address, so the
/// server's per-address limits throttle it (they are meant for the internet).
const RATE_LIMIT_HINT: &str = "  hint: the 429s come from the server's rate limits: every virtual player \
comes from this one address. For a benchmark, start the server with RATE_LOGIN_PER_ADDRESS=0 \
RATE_REGISTER_PER_ADDRESS=0 (docs/bench.md).\n";

/// "Trivial ×82, first at 1.2s".
fn describe(message: &Message) -> String {
    if message.count > 1 {
        format!("{:?} ×{}, first at {:.1}s", message.severity, message.count, message.at_secs)
    } else {
        format!("{:?} at {:.1}s", message.severity, message.at_secs)
    }
}

/// A polyline chart of one or more series over seconds, with ticks on both
/// axes and the run's phases as labelled dashed lines (so that the drop at
/// the end reads as the final check, not as the server failing).
fn svg_chart(title: &str, unit: &str, series: &[(&str, &str, Vec<f64>)], phases: &[Phase]) -> String {
    let (width, height, pad) = (720.0, 220.0, 40.0);
    let points = series.iter().map(|(_, _, s)| s.len()).max().unwrap_or(0).max(2);
    let top = series.iter().flat_map(|(_, _, s)| s.iter().copied()).fold(0.0_f64, f64::max).max(1e-9);
    let x = |i: usize| pad + (width - 2.0 * pad) * i as f64 / (points - 1) as f64;
    let y = |v: f64| height - pad - (height - 2.0 * pad) * v / top;
    let mut svg = format!(
        r##"<figure><figcaption>{title}</figcaption><svg viewBox="0 0 {width} {height}" role="img" aria-label="{title}">
<line x1="{pad}" y1="{}" x2="{}" y2="{}" stroke="#999"/><line x1="{pad}" y1="{pad}" x2="{pad}" y2="{}" stroke="#999"/>
<text x="2" y="{}" font-size="11">{top:.1} {unit}</text><text x="2" y="{}" font-size="11">0</text>
<text x="{}" y="{}" font-size="11">{} s</text>"##,
        height - pad,
        width - pad,
        height - pad,
        height - pad,
        pad - 4.0,
        height - pad,
        width - pad - 20.0,
        height - pad + 16.0,
        points - 1,
    );
    for quarter in 1..=4 {
        let value = top * f64::from(quarter) / 4.0;
        let _ = write!(
            svg,
            r##"<line x1="{}" y1="{1:.1}" x2="{pad}" y2="{1:.1}" stroke="#999"/><text x="2" y="{2:.1}" font-size="10">{value:.1}</text>"##,
            pad - 4.0,
            y(value),
            y(value) + 3.0
        );
    }
    let step = (points / 10).max(1);
    for second in (0..points).step_by(step) {
        let _ = write!(
            svg,
            r##"<line x1="{0:.1}" y1="{1}" x2="{0:.1}" y2="{2}" stroke="#999"/><text x="{0:.1}" y="{3}" font-size="10" text-anchor="middle">{second}</text>"##,
            x(second),
            height - pad,
            height - pad + 4.0,
            height - pad + 14.0
        );
    }
    for phase in phases {
        let at = pad + (width - 2.0 * pad) * phase.at_secs / (points - 1) as f64;
        let _ = write!(
            svg,
            r##"<line x1="{at:.1}" y1="{pad}" x2="{at:.1}" y2="{}" stroke="#777" stroke-dasharray="4 3"/><text x="{:.1}" y="{}" font-size="10" fill="#555">{}</text>"##,
            height - pad,
            at + 3.0,
            pad + 10.0,
            escape(&phase.name)
        );
    }
    for (i, (name, color, values)) in series.iter().enumerate() {
        let path: Vec<String> = values.iter().enumerate().map(|(i, v)| format!("{:.1},{:.1}", x(i), y(*v))).collect();
        let _ = write!(
            svg,
            r##"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/><text x="{}" y="{}" font-size="12" fill="{color}">{name}</text>"##,
            path.join(" "),
            pad + 10.0 + 110.0 * i as f64,
            pad - 10.0
        );
    }
    svg.push_str("</svg></figure>");
    svg
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

pub fn html(summary: &Summary, endpoints: &[EndpointSummary], target: &str) -> String {
    let timeline = &summary.timeline;
    let rps: Vec<f64> = timeline.iter().map(|s| s.requests as f64).collect();
    let errors: Vec<f64> = timeline.iter().map(|s| s.errors as f64).collect();
    let p50: Vec<f64> = timeline.iter().map(|s| s.p50_ms).collect();
    let p99: Vec<f64> = timeline.iter().map(|s| s.p99_ms).collect();
    let verdict = if summary.pass { "pass" } else { "fail" };
    let mut out = format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>hiscore bench: {verdict}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}}
table{{border-collapse:collapse;font-variant-numeric:tabular-nums}}td,th{{padding:.2rem .6rem;border-bottom:1px solid #ddd;text-align:right}}
td:last-child,th:last-child{{text-align:left}}figure{{margin:1rem 0}}figcaption{{font-weight:600}}</style></head><body>
<h1>hiscore bench: {verdict}, score {}</h1><p>Target {} · load level {} · {} requests · errors: {} critical, {} application, {} trivial</p>"#,
        summary.score,
        escape(target),
        summary.load_level,
        summary.requests,
        summary.errors.critical,
        summary.errors.application,
        summary.errors.trivial
    );
    out.push_str(&svg_chart(
        "Requests per second",
        "req/s",
        &[("requests", "#1f77b4", rps), ("errors", "#d62728", errors)],
        &summary.phases,
    ));
    out.push_str(&svg_chart(
        "Latency percentiles",
        "ms",
        &[("p50", "#2ca02c", p50), ("p99", "#ff7f0e", p99)],
        &summary.phases,
    ));
    out.push_str("<h2>Endpoints</h2><table><tr>");
    for (name, _) in COLUMNS {
        let _ = write!(out, "<th>{name}</th>");
    }
    out.push_str("<th>ENDPOINT</th></tr>");
    for e in endpoints {
        out.push_str("<tr>");
        for cell in cells(e) {
            let _ = write!(out, "<td>{cell}</td>");
        }
        let _ = write!(out, "<td>{} {}</td></tr>", e.method, escape(&e.path));
    }
    out.push_str("</table><h2>Messages</h2><ul>");
    for m in &summary.messages {
        let _ = write!(out, "<li>[{}] {}</li>", describe(m), escape(&m.text));
    }
    out.push_str("</ul></body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> EndpointSummary {
        EndpointSummary {
            method: "GET".into(),
            path: "/api/rankings/{board}".into(),
            count: 10,
            errors: 1,
            status_classes: [8, 1, 0, 1],
            min_ms: 0.5,
            avg_ms: 1.25,
            p50_ms: 1.0,
            p90_ms: 2.0,
            p95_ms: 2.5,
            p99_ms: 3.0,
            max_ms: 4.0,
            total_ms: 12.5,
            avg_body_bytes: 512,
        }
    }

    #[test]
    fn table_has_a_header_and_a_row_per_endpoint() {
        let text = table(&[endpoint()]);
        let header = text.lines().next().unwrap();
        for column in ["2XX", "3XX", "4XX", "5XX", "AVG", "P95", "P99", "AVG(B)"] {
            assert!(header.contains(column), "{column} missing: {header}");
        }
        assert!(text.lines().nth(1).unwrap().ends_with("GET    /api/rankings/{board}"));
    }

    #[test]
    fn repeated_messages_show_their_count_and_429s_say_why() {
        let rate_limited = Message {
            severity: Severity::Trivial,
            at_secs: 1.25,
            text: format!("POST /api/sessions: {RATE_LIMITED}"),
            count: 82,
        };
        let counts = ErrorCounts { critical: 0, application: 0, trivial: 82 };
        let text = error_summary(&[rate_limited], &counts);
        assert!(text.contains("[Trivial ×82, first at 1.2s] POST /api/sessions"), "{text}");
        assert!(text.contains("RATE_LOGIN_PER_ADDRESS=0"), "{text}");
        assert!(!error_summary(&[], &counts).contains("hint"));
    }

    #[test]
    fn html_is_self_contained() {
        let summary = Summary {
            pass: true,
            score: 10,
            load_level: 2,
            requests: 10,
            errors: ErrorCounts { critical: 0, application: 0, trivial: 0 },
            unavailable: 0,
            posts_applied: 0,
            players_uncertain: 0,
            endpoints: Summary::endpoint_rows(&[endpoint()]),
            messages: vec![],
            timeline: vec![
                SecondSummary { second: 0, requests: 10, errors: 0, p50_ms: 1.0, p99_ms: 3.0 },
                SecondSummary { second: 1, requests: 12, errors: 0, p50_ms: 1.0, p99_ms: 3.0 },
            ],
            phases: vec![Phase { at_secs: 0.5, name: "final check".into() }],
        };
        let page = html(&summary, &[endpoint()], "http://x");
        assert!(page.contains("<svg") && page.contains("polyline"));
        assert!(page.contains("final check") && page.contains("stroke-dasharray"), "phases are marked");
        assert!(!page.contains("http://cdn") && !page.contains("<script src"));
    }
}
