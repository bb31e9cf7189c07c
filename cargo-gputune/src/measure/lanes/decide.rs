//! The finals of a search on several GPUs: chosen from every lane's screening together, and
//! spread over the lanes ([`super::queue::spread`]), base in full beside them on each; or,
//! where they are too few to spread, shared by every lane ([`super::shared`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use super::lane::Job;
use super::queue;
use super::shared;
use super::{Kind, Spread};
use crate::host::output::Output;
use crate::measure::finals;

impl Spread<'_, '_> {
    /// Sends `labels` (finalists of `bin` on workload `ct`, best first) to the live lanes
    /// ([`queue::spread`]: the leader first on every lane that measures any, the others raced
    /// against it there, on as many lanes as makes the finals shortest), not to lane `avoid`
    /// while another is alive. Finals that would all go to one lane while others are alive
    /// are shared by every live lane instead, each measuring them beside base to its share of
    /// the criterion ([`shared`]).
    pub(super) fn spread_finals(
        &mut self,
        bin: PathBuf,
        ct: usize,
        labels: Vec<String>,
        avoid: Option<usize>,
        out: &mut Output,
    ) {
        let alive = self.alive();
        let loads: Vec<Option<f64>> = self
            .lanes
            .iter()
            .enumerate()
            .map(|(i, l)| {
                l.jobs.as_ref()?;
                if alive > 1 && avoid == Some(i) {
                    return None;
                }
                // Finals it has already: a leader in full, the others raced.
                let finals: f64 = l
                    .running
                    .iter()
                    .map(|r| match &r.job {
                        Kind::Final { labels, .. } => {
                            1.0 + labels.len().saturating_sub(1) as f64 * queue::RACED
                        }
                        _ => 0.0,
                    })
                    .sum();
                let control = l
                    .control
                    .as_ref()
                    .is_some_and(|(b, c, share)| *b == bin && *c == ct && *share == 1);
                Some(finals + if control { 0.0 } else { 1.0 })
            })
            .collect();
        let Some(to) = queue::spread(labels.len(), &loads) else {
            return;
        };
        let limit = self.limit(ct);
        let share = self.share();
        let one_lane = to.iter().filter(|f| !f.is_empty()).count() == 1;
        if avoid.is_none() && one_lane && share > 1 {
            self.shared_cts.insert(ct, share);
            let live: Vec<usize> = (0..self.lanes.len())
                .filter(|&i| self.lanes[i].jobs.is_some())
                .collect();
            for &lane in &live {
                // Base alone is stored as base's row, from the lanes' parts of it.
                for l in labels.iter().filter(|l| l.as_str() != "base") {
                    let parts = self.shared.entry((ct, l.clone())).or_default();
                    parts.pending.insert(lane);
                }
            }
            for lane in live {
                self.lanes[lane].control = Some((bin.clone(), ct, share));
                let job = Job::Final {
                    bin: bin.clone(),
                    ct,
                    labels: labels.clone(),
                    limit,
                    share,
                };
                let kind = Kind::Final {
                    bin: bin.clone(),
                    ct,
                    labels: labels.clone(),
                    share,
                };
                self.send(lane, job, kind, out);
            }
            return;
        }
        for (lane, picked) in to.into_iter().enumerate() {
            let mine: Vec<String> = picked.iter().map(|&f| labels[f].clone()).collect();
            if mine.is_empty() {
                continue;
            }
            self.lanes[lane].control = Some((bin.clone(), ct, 1));
            let job = Job::Final {
                bin: bin.clone(),
                ct,
                labels: mine.clone(),
                limit,
                share: 1,
            };
            let kind = Kind::Final {
                bin: bin.clone(),
                ct,
                labels: mine,
                share: 1,
            };
            self.send(lane, job, kind, out);
        }
    }

    /// The finals: per compile-time workload, the finalists of every lane's screening
    /// together, spread over the lanes, base in full beside them on each; base's row stored
    /// last, as the decision made.
    pub(super) fn finals(&mut self, out: &mut Output) -> Result<()> {
        let plan = self.ctx.plan;
        let Some(z) = plan.bench_args.decide else {
            return Ok(());
        };
        let mine = finals::bench_rows(plan, self.ctx.store)?;
        let mut decided = Vec::new();
        for (ct, workload) in self.ctx.cts.iter().enumerate() {
            let Some(decision) = finals::decide(&mine, &workload.key, z) else {
                continue;
            };
            finals::announce(plan, &workload.key, &decision, out);
            self.build_seconds.extend(decision.build_seconds.clone());
            // One job per lane and binary, the binary of the best finalist first.
            let mut groups: Vec<(PathBuf, Vec<String>)> = Vec::new();
            for s in &decision.finals {
                let bin = self.measured.bins.get(&s.label).cloned().with_context(|| {
                    format!("no binary of the bundle holds the finalist {}", s.label)
                })?;
                match groups.iter_mut().find(|(b, _)| *b == bin) {
                    Some((_, labels)) => labels.push(s.label.clone()),
                    None => groups.push((bin, vec![s.label.clone()])),
                }
            }
            // Base in full measured already, or (without it) measured again by every lane.
            let in_full = self
                .base_parts
                .get(&ct)
                .is_some_and(|p| p.iter().any(|(_, s, _)| *s == 1));
            if groups.is_empty() && !in_full {
                // Only base is pending: measured in full where a process waits for it.
                let bin = self
                    .lanes
                    .iter()
                    .filter(|l| l.jobs.is_some())
                    .find_map(|l| l.serving.clone().filter(|(_, c)| *c == ct))
                    .map(|(b, _)| b);
                if let Some(bin) = bin {
                    groups.push((bin, vec!["base".to_string()]));
                }
            }
            for (bin, labels) in groups {
                self.spread_finals(bin, ct, labels, None, out);
            }
            decided.push(ct);
        }
        while self.lanes.iter().any(|l| !l.running.is_empty()) {
            if self.alive() == 0 {
                bail!("{}", self.every_lane_failed());
            }
            self.next_report(out)?;
        }
        for ct in decided {
            let Some((mut rows, energy)) = self.base_row(ct) else {
                continue;
            };
            let build = self.build_seconds.get("base").copied().flatten();
            for r in &mut rows {
                r.build_seconds = build;
            }
            self.ctx.store.put_with_energy(&rows, &energy)?;
            self.counters.stored += rows.len();
        }
        Ok(())
    }

    /// Base's row of workload `ct` as the finals measured it: pooled from every lane's last
    /// part where the lanes shared them, else the first base in full.
    fn base_row(&mut self, ct: usize) -> Option<super::Rows> {
        let parts = self.base_parts.remove(&ct)?;
        if let Some(&share) = self.shared_cts.get(&ct) {
            let mut last: BTreeMap<usize, (u32, Vec<_>)> = BTreeMap::new();
            for (lane, s, (rows, _)) in &parts {
                if *s == share {
                    last.insert(*lane, (self.lanes[*lane].summary.device, rows.clone()));
                }
            }
            let pooled: Vec<(u32, Vec<_>)> = last.into_values().collect();
            let rows = shared::pool(&pooled);
            if !rows.is_empty() {
                return Some((rows, Vec::new()));
            }
        }
        parts
            .into_iter()
            .find(|(_, s, _)| *s == 1)
            .map(|(_, _, rows)| rows)
    }
}
