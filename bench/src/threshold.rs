//! `--threshold 'p99<50ms'`: a latency bound over every request of the run
//! (k6-style) that fails the run when it is not met, so a CI job can gate
//! on speed without reading the report.

use std::fmt;

/// Which latency a threshold bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measure {
    /// A quantile in 0..=1 (`p50`, `p90`, `p99`, `p99.9`).
    Quantile(f64),
    Max,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    pub measure: Measure,
    /// The bound, in milliseconds; met when the measured value is at most this
    /// (`<=`) or below it (`<`).
    pub limit_ms: f64,
    pub inclusive: bool,
    text: String,
}

impl Threshold {
    /// `p99<50ms`, `p50<=2.5ms`, `max<1s`.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let invalid = || format!("{raw:?}: expected e.g. 'p99<50ms', 'p50<=2.5ms' or 'max<1s'");
        let compact: String = raw.chars().filter(|c| !c.is_whitespace()).collect();
        let (name, inclusive, bound) = if let Some((name, bound)) = compact.split_once("<=") {
            (name, true, bound)
        } else {
            let (name, bound) = compact.split_once('<').ok_or_else(invalid)?;
            (name, false, bound)
        };
        let measure = match name {
            "max" => Measure::Max,
            _ => {
                let percent: f64 = name.strip_prefix('p').and_then(|p| p.parse().ok()).ok_or_else(invalid)?;
                if !(0.0..=100.0).contains(&percent) {
                    return Err(invalid());
                }
                Measure::Quantile(percent / 100.0)
            }
        };
        let (number, scale) = if let Some(ms) = bound.strip_suffix("ms") {
            (ms, 1.0)
        } else if let Some(s) = bound.strip_suffix('s') {
            (s, 1000.0)
        } else {
            return Err(invalid());
        };
        let value: f64 = number.parse().map_err(|_| invalid())?;
        if !value.is_finite() || value < 0.0 {
            return Err(invalid());
        }
        Ok(Self { measure, limit_ms: value * scale, inclusive, text: compact })
    }

    pub fn met_by(&self, measured_ms: f64) -> bool {
        if self.inclusive {
            measured_ms <= self.limit_ms
        } else {
            measured_ms < self.limit_ms
        }
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_quantiles_maxima_and_units() {
        let p99 = Threshold::parse("p99<50ms").unwrap();
        assert_eq!((p99.measure, p99.limit_ms, p99.inclusive), (Measure::Quantile(0.99), 50.0, false));
        assert!(p99.met_by(49.9) && !p99.met_by(50.0));
        let p50 = Threshold::parse("p50 <= 2.5ms").unwrap();
        assert!(p50.met_by(2.5));
        assert_eq!(Threshold::parse("max<1s").unwrap().limit_ms, 1000.0);
        let Measure::Quantile(q) = Threshold::parse("p99.9<3ms").unwrap().measure else { panic!("a quantile") };
        assert!((q - 0.999).abs() < 1e-12);
        for bad in ["p99>5ms", "p101<5ms", "avg<5ms", "p99<5", "p99<-1ms", "p99<abcms", ""] {
            assert!(Threshold::parse(bad).is_err(), "{bad}");
        }
    }
}
