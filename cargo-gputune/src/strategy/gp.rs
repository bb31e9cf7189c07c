//! A Gaussian process with a Matérn 5/2 kernel over the parameters' scaled value indices:
//! the surrogate's model of the best point's neighbourhood. Its length scale is the one of a
//! small grid that explains the observations best (the log marginal likelihood), its signal
//! variance the closed-form maximum for that scale; the mean is the observations' mean.
//!
//! A process rather than the trees or the neighbours in the local rounds because there the
//! candidates differ from the best point in one or two parameters, and the question is which
//! of a few dozen such moves pays: the trees' boxes and the four nearest neighbours barely rank
//! them (a random order there did almost as well), while the kernel weighs every observation by
//! its distance and learns from the data how far an observation speaks for its neighbours.
//! Fitting is cubic in the points, so the caller gives it the points nearest the best
//! ([`Gp::fit`] is about a millisecond at 160 points).

/// Length scales tried, in units of one parameter's whole range.
const SCALES: [f64; 6] = [0.1, 0.2, 0.35, 0.6, 1.0, 1.7];
/// Observation noise, relative to the signal variance: the scores are medians of many samples,
/// and a small nugget keeps the factorisation stable.
const NUGGET: f64 = 1e-4;

/// The fitted process.
pub struct Gp {
    x: Vec<Vec<f64>>,
    mean: f64,
    scale: f64,
    variance: f64,
    /// The kernel matrix's Cholesky factor (lower, row-major).
    chol: Vec<f64>,
    /// K⁻¹ (y − mean).
    alpha: Vec<f64>,
}

fn matern(d2: f64, scale: f64) -> f64 {
    let r = 5f64.sqrt() * d2.sqrt() / scale;
    (1.0 + r + r * r / 3.0) * (-r).exp()
}

fn cholesky(a: &mut [f64], n: usize) -> bool {
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            d -= a[j * n + k] * a[j * n + k];
        }
        if d <= 0.0 {
            return false;
        }
        let d = d.sqrt();
        a[j * n + j] = d;
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= a[i * n + k] * a[j * n + k];
            }
            a[i * n + j] = s / d;
        }
        for k in j + 1..n {
            a[j * n + k] = 0.0;
        }
    }
    true
}

/// Solves L z = b in place.
fn forward(l: &[f64], n: usize, b: &mut [f64]) {
    for i in 0..n {
        let mut s = b[i];
        for k in 0..i {
            s -= l[i * n + k] * b[k];
        }
        b[i] = s / l[i * n + i];
    }
}

/// Solves Lᵀ z = b in place.
fn backward(l: &[f64], n: usize, b: &mut [f64]) {
    for i in (0..n).rev() {
        let mut s = b[i];
        for k in i + 1..n {
            s -= l[k * n + i] * b[k];
        }
        b[i] = s / l[i * n + i];
    }
}

impl Gp {
    /// Fits the points `x` and values `y` (of the same length); `None` when there are fewer
    /// than two points or no scale of the grid factorises.
    pub fn fit(x: Vec<Vec<f64>>, y: &[f64]) -> Option<Gp> {
        let n = y.len();
        if n < 2 || x.len() != n {
            return None;
        }
        let dims = x[0].len().max(1) as f64;
        let mean = y.iter().sum::<f64>() / n as f64;
        let r: Vec<f64> = y.iter().map(|v| v - mean).collect();
        let mut d2 = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..i {
                let d: f64 = x[i].iter().zip(&x[j]).map(|(a, b)| (a - b) * (a - b)).sum();
                d2[i * n + j] = d / dims;
                d2[j * n + i] = d / dims;
            }
        }
        // (log likelihood, scale, signal variance, Cholesky factor, K⁻¹r) of the best scale.
        type Fit = (f64, f64, f64, Vec<f64>, Vec<f64>);
        let mut best: Option<Fit> = None;
        for scale in SCALES {
            let mut k: Vec<f64> = d2.iter().map(|&d| matern(d, scale)).collect();
            for i in 0..n {
                k[i * n + i] = 1.0 + NUGGET;
            }
            if !cholesky(&mut k, n) {
                continue;
            }
            let mut alpha = r.clone();
            forward(&k, n, &mut alpha);
            // rᵀK⁻¹r = |L⁻¹r|².
            let quad: f64 = alpha.iter().map(|a| a * a).sum();
            backward(&k, n, &mut alpha);
            let variance = (quad / n as f64).max(1e-12);
            let logdet: f64 = (0..n).map(|i| k[i * n + i].ln()).sum::<f64>() * 2.0;
            let likelihood = -0.5 * n as f64 * variance.ln() - 0.5 * logdet;
            if best.as_ref().map_or(true, |(b, ..)| likelihood > *b) {
                best = Some((likelihood, scale, variance, k, alpha));
            }
        }
        let (_, scale, variance, chol, alpha) = best?;
        Some(Gp {
            x,
            mean,
            scale,
            variance,
            chol,
            alpha,
        })
    }

    /// The predicted mean and standard deviation at `at`.
    pub fn predict(&self, at: &[f64]) -> (f64, f64) {
        let n = self.alpha.len();
        let dims = at.len().max(1) as f64;
        let mut ks: Vec<f64> = self
            .x
            .iter()
            .map(|p| {
                let d: f64 = p.iter().zip(at).map(|(a, b)| (a - b) * (a - b)).sum();
                matern(d / dims, self.scale)
            })
            .collect();
        let m = self.mean + ks.iter().zip(&self.alpha).map(|(a, b)| a * b).sum::<f64>();
        forward(&self.chol, n, &mut ks);
        let explained: f64 = ks.iter().map(|v| v * v).sum();
        let var = self.variance * (1.0 + NUGGET - explained).max(0.0);
        (m, var.sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_interpolates_what_it_saw_and_is_unsure_away_from_it() {
        // A smooth bump over two parameters, seen on a 5 × 5 grid.
        let f = |a: f64, b: f64| -((a - 0.6) * (a - 0.6) + (b - 0.3) * (b - 0.3)) * 4.0;
        let mut x = Vec::new();
        let mut y = Vec::new();
        for i in 0..5 {
            for j in 0..5 {
                let (a, b) = (i as f64 / 4.0, j as f64 / 4.0);
                x.push(vec![a, b]);
                y.push(f(a, b));
            }
        }
        let gp = Gp::fit(x, &y).expect("fits");
        let (m, sd) = gp.predict(&[0.5, 0.25]);
        assert!(
            (m - f(0.5, 0.25)).abs() < 1e-2,
            "{m} against {}",
            f(0.5, 0.25)
        );
        let (_, signal) = gp.predict(&[50.0, 50.0]);
        assert!(sd < 0.1 * signal, "{sd} against the signal's {signal}");
        // Between grid points it still follows the bump; beyond them it is less sure.
        let (between, _) = gp.predict(&[0.625, 0.375]);
        assert!((between - f(0.625, 0.375)).abs() < 0.1, "{between}");
        let (_, unsure) = gp.predict(&[1.5, 1.5]);
        assert!(unsure > 2.0 * sd, "{unsure} vs {sd}");
        // Far outside the data it falls back to the mean, with the signal's spread.
        let (far, farther) = gp.predict(&[50.0, 50.0]);
        let mean = y.iter().sum::<f64>() / y.len() as f64;
        assert!(
            (far - mean).abs() < 1e-6 && farther > unsure,
            "{far} {farther}"
        );
    }

    #[test]
    fn too_few_or_mismatched_points_fit_nothing() {
        assert!(Gp::fit(vec![], &[]).is_none());
        assert!(Gp::fit(vec![vec![0.5]], &[1.0]).is_none());
        assert!(Gp::fit(vec![vec![0.5], vec![0.1]], &[1.0]).is_none());
        // Repeated points with different values still factorise, thanks to the nugget.
        let gp = Gp::fit(vec![vec![0.5], vec![0.5], vec![0.9]], &[1.0, 1.2, 0.0]).expect("fits");
        let (m, _) = gp.predict(&[0.5]);
        assert!((0.9..=1.3).contains(&m), "{m}");
    }
}
