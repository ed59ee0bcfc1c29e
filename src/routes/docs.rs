//! The page of `GET /api/docs` (served by `openapi::reference`): the OpenAPI
//! document rendered as one readable HTML page, from the same document
//! `/api/openapi.json` serves. Self-contained (inline CSS, no script,
//! nothing fetched), so it works offline and behind nginx alike.

use std::fmt::Write as _;

use serde_json::Value;

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// The whole page: every operation (parameters, body, responses with their
/// codes and headers), then every schema.
pub(super) fn render(document: &Value) -> String {
    let title = text(&document["info"]["title"]);
    let mut page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} API reference</title>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>{STYLE}</style></head><body>\
         <h1>{title} API reference</h1><p>{}</p><p>The same as an OpenAPI 3 document: \
         <a href=\"/api/openapi.json\">/api/openapi.json</a>.</p><nav><h2>Operations</h2><ul>",
        prose(&document["info"]["description"])
    );
    let operations: Vec<(&str, &str, &Value)> = document["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .flat_map(|(path, item)| {
            METHODS.iter().filter_map(move |method| Some((*method, path.as_str(), item.get(*method)?)))
        })
        .collect();
    for (method, path, operation) in &operations {
        let id = text(&operation["operationId"]);
        let _ = write!(
            page,
            "<li><a href=\"#{id}\"><code>{} {}</code></a> {}</li>",
            method.to_uppercase(),
            escape(path),
            text(&operation["summary"])
        );
    }
    page.push_str("</ul></nav><main>");
    for (method, path, operation) in &operations {
        render_operation(&mut page, method, path, operation);
    }
    page.push_str("<h2 id=\"schemas\">Schemas</h2>");
    for (name, schema) in document["components"]["schemas"].as_object().into_iter().flatten() {
        render_schema(&mut page, name, schema);
    }
    page.push_str("</main></body></html>\n");
    page
}

fn render_operation(page: &mut String, method: &str, path: &str, operation: &Value) {
    let _ = write!(
        page,
        "<section id=\"{}\"><h3><code>{} {}</code> {}</h3><p>{}</p>",
        text(&operation["operationId"]),
        method.to_uppercase(),
        escape(path),
        text(&operation["summary"]),
        prose(&operation["description"])
    );
    if operation["security"].is_array() {
        page.push_str("<p><em>Needs a session: <code>Authorization: Bearer &lt;token&gt;</code> or the <code>session</code> cookie.</em></p>");
    }
    if let Some(parameters) = operation["parameters"].as_array().filter(|p| !p.is_empty()) {
        page.push_str("<table><tr><th>parameter</th><th>in</th><th>required</th><th>description</th></tr>");
        for parameter in parameters {
            let _ = write!(
                page,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                text(&parameter["name"]),
                text(&parameter["in"]),
                if parameter["required"] == true { "yes" } else { "no" },
                prose(&parameter["description"])
            );
        }
        page.push_str("</table>");
    }
    if let Some(schema) = operation["requestBody"]["content"]["application/json"]["schema"].as_object() {
        let _ = write!(page, "<p>Body (JSON): {}</p>", schema_link(&Value::Object(schema.clone())));
    }
    page.push_str("<table><tr><th>status</th><th>description</th><th>body</th><th>headers</th></tr>");
    for (status, response) in operation["responses"].as_object().into_iter().flatten() {
        let headers: Vec<String> = response["headers"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, header)| format!("<code>{}</code>: {}", escape(name), prose(&header["description"])))
            .collect();
        let body = response["content"]
            .as_object()
            .and_then(|content| content.values().next())
            .map_or(String::new(), |media| schema_link(&media["schema"]));
        let _ = write!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{body}</td><td>{}</td></tr>",
            escape(status),
            prose(&response["description"]),
            headers.join("<br>")
        );
    }
    page.push_str("</table></section>");
}

fn render_schema(page: &mut String, name: &str, schema: &Value) {
    let _ =
        write!(page, "<section id=\"schema-{0}\"><h3>{0}</h3><p>{1}</p>", escape(name), prose(&schema["description"]));
    let required: Vec<&str> = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if let Some(properties) = schema["properties"].as_object() {
        page.push_str("<table><tr><th>field</th><th>type</th><th>always sent / required</th><th>description</th></tr>");
        for (field, property) in properties {
            let _ = write!(
                page,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(field),
                type_of(property),
                if required.contains(&field.as_str()) { "yes" } else { "no" },
                prose(&property["description"])
            );
        }
        page.push_str("</table>");
    } else if let Some(values) = schema["enum"].as_array() {
        let values: Vec<String> = values.iter().map(|v| format!("<code>{}</code>", text(v))).collect();
        let _ = write!(page, "<p>One of {}</p>", values.join(", "));
    }
    page.push_str("</section>");
}

/// A link to a referenced schema, or the type written out.
fn schema_link(schema: &Value) -> String {
    match schema["$ref"].as_str().and_then(|r| r.rsplit('/').next()) {
        Some(name) => format!("<a href=\"#schema-{0}\">{0}</a>", escape(name)),
        None => type_of(schema),
    }
}

/// `integer`, `string | null`, `array of RankingEntry`, a link…
fn type_of(schema: &Value) -> String {
    if schema["$ref"].is_string() {
        return schema_link(schema);
    }
    if let Some(options) = schema["oneOf"].as_array().or_else(|| schema["anyOf"].as_array()) {
        return options.iter().map(type_of).collect::<Vec<_>>().join(" | ");
    }
    match &schema["type"] {
        Value::String(kind) if kind == "array" => format!("array of {}", type_of(&schema["items"])),
        Value::String(kind) => escape(kind),
        Value::Array(kinds) => kinds.iter().map(text).collect::<Vec<_>>().join(" | "),
        _ => "any".to_owned(),
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => escape(s),
        Value::Null => String::new(),
        other => escape(&other.to_string()),
    }
}

/// Descriptions are Markdown-ish: `code` spans become `<code>`, the rest is text.
fn prose(value: &Value) -> String {
    let escaped = text(value);
    let mut out = String::with_capacity(escaped.len());
    for (i, part) in escaped.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{part}</code>");
        } else {
            out.push_str(part);
        }
    }
    out
}

fn escape(raw: &str) -> String {
    raw.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

const STYLE: &str =
    "body{font:15px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f}\
code{font:13px ui-monospace,monospace;background:#f2f2f4;padding:0 .2em;border-radius:3px}\
table{border-collapse:collapse;margin:.5rem 0 1rem;width:100%}th,td{border:1px solid #ccc;padding:.25rem .5rem;\
text-align:left;vertical-align:top}th{background:#f7f7f9}section{border-top:1px solid #ddd;margin-top:1.5rem}\
nav ul{columns:2}h3 code{font-size:15px}";

#[cfg(test)]
mod tests {
    use utoipa::OpenApi as _;

    use super::*;
    use crate::routes::openapi::ApiDoc;

    #[test]
    fn every_operation_and_schema_is_on_the_page_and_nothing_is_fetched() {
        let document = serde_json::to_value(ApiDoc::openapi()).unwrap();
        let page = render(&document);
        for item in document["paths"].as_object().unwrap().values() {
            for operation in item.as_object().unwrap().values() {
                let id = operation["operationId"].as_str().unwrap();
                assert!(page.contains(&format!("id=\"{id}\"")), "{id} is missing");
            }
        }
        assert!(page.contains("id=\"schema-RankingPage\"") && page.contains("invalid_cursor"));
        assert!(!page.contains("<script") && !page.contains("http://") && !page.contains("https://"));
    }

    #[test]
    fn text_is_escaped_and_code_spans_are_code() {
        assert_eq!(prose(&Value::from("a `<b>` & c")), "a <code>&lt;b&gt;</code> &amp; c");
    }
}
