//! Tells the test code which outside services this build's tests can use,
//! so that a test variant needing one that is not configured is reported
//! as *ignored*, with the variable to set, never as passed. The variables
//! are read when the tests are built (and rebuilt when they change).
fn main() {
    let switches = [
        ("TEST_MYSQL_URL", "hiscore_test_mysql"),
        ("TEST_REDIS_URL", "hiscore_test_redis"),
        ("TEST_SERVICE_OUTAGES", "hiscore_test_outages"),
    ];
    for (variable, cfg) in switches {
        println!("cargo::rerun-if-env-changed={variable}");
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        let value = std::env::var(variable).unwrap_or_default();
        let on = match variable {
            "TEST_SERVICE_OUTAGES" => matches!(value.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"),
            _ => !value.is_empty(),
        };
        if on {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
