//! The configuration reference (`docs/CONFIGURATION.md`) is made from the
//! settings' own definitions (their flags, variables, defaults and doc
//! comments, as `hiscore serve --help` shows them), so a setting cannot be
//! added without its line: the test below compares the page's table with
//! [`markdown`] and fails on any difference.

use clap::{Args, Command};

use super::Settings;

/// Where the generated table sits in the page.
const BEGIN: &str =
    "<!-- settings: generated from src/config by `UPDATE_CONFIG_REFERENCE=1 cargo test --lib config` -->";
const END: &str = "<!-- end of settings -->";

/// One row per setting of `hiscore serve` (hidden ones aside), by variable.
pub fn markdown() -> String {
    let command = Settings::augment_args(Command::new("serve"));
    let mut rows: Vec<(String, String)> = command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set())
        .filter_map(|arg| {
            let long = arg.get_long()?;
            let variable = arg.get_env().map(|env| env.to_string_lossy().into_owned()).unwrap_or_default();
            let defaults: Vec<String> =
                arg.get_default_values().iter().map(|value| value.to_string_lossy().into_owned()).collect();
            let default = match defaults.join(",") {
                none if none.is_empty() => "–".to_owned(),
                some => format!("`{some}`"),
            };
            let help = arg.get_long_help().or(arg.get_help()).map(ToString::to_string).unwrap_or_default();
            let choices: Vec<String> = arg
                .get_possible_values()
                .iter()
                .filter(|value| !value.is_hide_set())
                .map(|value| format!("`{}`", value.get_name()))
                .collect();
            let is_switch = choices.len() == 2 && choices.iter().all(|c| c == "`true`" || c == "`false`");
            let mut meaning = help.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|");
            if !choices.is_empty() && !is_switch {
                let stop = if meaning.ends_with('.') { "" } else { "." };
                meaning.push_str(&format!("{stop} One of {}.", choices.join(", ")));
            }
            let row = format!("| `{variable}` | `--{long}` | {default} | {meaning} |\n");
            Some((variable, row))
        })
        .collect();
    rows.sort();
    let mut table = String::from("| variable | flag | default | meaning |\n|---|---|---|---|\n");
    table.extend(rows.into_iter().map(|(_, row)| row));
    table
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn the_configuration_reference_is_every_setting_of_serve() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/CONFIGURATION.md");
        let page = std::fs::read_to_string(&path).unwrap();
        let (before, rest) = page.split_once(BEGIN).expect("docs/CONFIGURATION.md lost its opening marker");
        let (table, after) = rest.split_once(END).expect("docs/CONFIGURATION.md lost its closing marker");
        let generated = markdown();
        if std::env::var_os("UPDATE_CONFIG_REFERENCE").is_some() {
            std::fs::write(&path, format!("{before}{BEGIN}\n{generated}{END}{after}")).unwrap();
            return;
        }
        assert_eq!(
            table.trim_start_matches('\n'),
            generated,
            "docs/CONFIGURATION.md does not list the settings as they are defined: \
             run `UPDATE_CONFIG_REFERENCE=1 cargo test --lib config` and commit the page"
        );
        // Every setting has its words: a doc comment, not an empty cell.
        for row in generated.lines().skip(2) {
            assert!(!row.ends_with("|  |"), "a setting without a doc comment: {row}");
        }
    }
}
