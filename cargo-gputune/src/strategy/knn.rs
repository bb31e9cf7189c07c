//! A k-nearest-neighbour model: each point's prediction is the inverse-distance-weighted mean
//! of the `k` nearest observed points, and its uncertainty their weighted spread plus a term
//! that grows with the distance to them. It was the surrogate's first model; it is kept as the
//! tree ensemble's partner, because it generalises smoothly where the trees cut the space
//! into boxes (the fifteen-parameter GEMM spaces, where it finds the optimum sooner).

/// The observed points and the scale of their values.
pub struct Knn<'a> {
    x: &'a [Vec<f64>],
    y: &'a [f64],
    k: usize,
    spread: f64,
}

impl<'a> Knn<'a> {
    /// Over the points `x` and their values `y`, averaging `k` neighbours.
    pub fn new(x: &'a [Vec<f64>], y: &'a [f64], k: usize) -> Knn<'a> {
        let n = y.len().max(1) as f64;
        let mean = y.iter().sum::<f64>() / n;
        let spread = (y.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n)
            .sqrt()
            .max(1e-3);
        Knn {
            x,
            y,
            k: k.max(1),
            spread,
        }
    }

    /// The predicted mean and standard deviation at `at`; `near` is scratch space, kept by
    /// the caller so that scoring thousands of candidates allocates once.
    pub fn predict(&self, at: &[f64], near: &mut Vec<(f64, f64)>) -> (f64, f64) {
        near.clear();
        near.extend(self.x.iter().zip(self.y).map(|(p, v)| {
            let d2: f64 = p.iter().zip(at).map(|(a, b)| (a - b) * (a - b)).sum();
            (d2, *v)
        }));
        if near.is_empty() {
            return (0.0, self.spread);
        }
        // The k nearest without sorting them all: this runs for every candidate.
        if near.len() > self.k {
            near.select_nth_unstable_by(self.k - 1, |a, b| a.0.total_cmp(&b.0));
            near.truncate(self.k);
        }
        let (mut total, mut sum, mut dist) = (0.0, 0.0, 0.0);
        for (d2, v) in near.iter_mut() {
            *d2 = d2.sqrt();
            let w = 1.0 / (*d2 + 1e-6);
            total += w;
            sum += w * *v;
            dist += *d2;
        }
        let mean = sum / total;
        let var = near
            .iter()
            .map(|(d, v)| (v - mean) * (v - mean) / (d + 1e-6))
            .sum::<f64>()
            / total;
        // Far from everything observed, the neighbours say little.
        let dist = dist / near.len() as f64;
        (mean, var.sqrt() + self.spread * dist)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knn_follows_its_neighbours_and_is_unsure_far_from_them() {
        let x: Vec<Vec<f64>> = (0..10).map(|i| vec![i as f64 / 20.0, 0.0]).collect();
        let y: Vec<f64> = (0..10).map(|i| if i < 5 { 1.0 } else { 3.0 }).collect();
        let knn = Knn::new(&x, &y, 3);
        let mut near = Vec::new();
        let (low, sure) = knn.predict(&[0.0, 0.0], &mut near);
        let (high, _) = knn.predict(&[0.45, 0.0], &mut near);
        assert!(
            (low - 1.0).abs() < 0.1 && (high - 3.0).abs() < 0.1,
            "{low} {high}"
        );
        let (_, unsure) = knn.predict(&[0.2, 1.0], &mut near);
        assert!(unsure > sure, "far away: {unsure} vs {sure}");
        let empty = Knn::new(&[], &[], 4);
        assert_eq!(empty.predict(&[0.3], &mut near).0, 0.0);
    }
}
