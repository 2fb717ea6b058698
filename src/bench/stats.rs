//! Summary statistics of repeated timings: median, extremes and a robust spread.
//!
//! Plain functions over `&[f64]`, as hyperfine keeps them. The spread is the median
//! absolute deviation (MAD), which one descheduled repeat cannot inflate. The verdict
//! does not use it: it rests on paired ratios (`paired.rs`).

use serde::Serialize;

/// Five numbers that describe a set of repeats.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub mad: f64,
    pub n: usize,
}

impl Summary {
    /// `None` for an empty set or one holding a NaN.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() || values.iter().any(|v| v.is_nan()) {
            return None;
        }
        let median = median(values)?;
        let deviations: Vec<f64> = values.iter().map(|v| (v - median).abs()).collect();
        Some(Summary {
            median,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            mad: median_of(deviations),
            n: values.len(),
        })
    }

    #[cfg(test)]
    /// The MAD relative to the median (0 when the median is 0).
    pub fn relative_spread(&self) -> f64 {
        if self.median > 0.0 {
            self.mad / self.median
        } else {
            0.0
        }
    }

    /// Multiplies every figure by `factor` (unit changes, extrapolation).
    pub fn scaled(&self, factor: f64) -> Summary {
        Summary {
            median: self.median * factor,
            min: self.min * factor,
            max: self.max * factor,
            mad: self.mad * factor,
            n: self.n,
        }
    }
}

/// The median; the mean of the two middle values for an even count.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return None;
    }
    Some(median_of(values.to_vec()))
}

fn median_of(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn summary_is_robust_to_one_outlier() {
        let s = Summary::of(&[10.0, 10.0, 11.0, 9.0, 100.0]).unwrap();
        assert_eq!(s.median, 10.0);
        assert_eq!(s.mad, 1.0);
        assert_eq!((s.min, s.max, s.n), (9.0, 100.0, 5));
        assert!((s.relative_spread() - 0.1).abs() < 1e-12);
    }

    #[test]
    fn scaling_keeps_the_count() {
        let s = Summary::of(&[1.0, 2.0, 3.0]).unwrap().scaled(1000.0);
        assert_eq!(
            (s.median, s.min, s.max, s.mad, s.n),
            (2000.0, 1000.0, 3000.0, 1000.0, 3)
        );
    }
}
