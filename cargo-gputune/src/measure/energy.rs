//! Energy as a search takes it from the bench (`--energy`, `search --objective energy|edp`):
//! each state's energy batches, kept until the variant's rows are stored with them, and base's
//! energy in the same process as the control of the variants after it (as its times are).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use gputune_protocol::StateRecord;

use crate::host::output::Output;
use crate::results::store::energy::{Energy, RowKey};
use crate::results::store::Measurement;

/// The energy of the rows of a bench process that are not stored yet, by row key, and
/// base's energy in the current process per runtime workload (the control).
#[derive(Debug, Default)]
pub(crate) struct Pending {
    rows: RefCell<BTreeMap<RowKey, Energy>>,
    control: RefCell<BTreeMap<String, Vec<f64>>>,
}

impl Pending {
    /// Notes the energy of `rows` (made from `states`, one row per state in order). Base's
    /// energy, with `control` on, becomes the control of the variants after it in this
    /// process; a variant's rows get that control.
    pub(crate) fn note(&self, rows: &[Measurement], states: &[StateRecord], control: bool) {
        let is_base = rows.first().is_some_and(|r| r.variant == "base");
        if control && is_base {
            self.control.borrow_mut().clear();
        }
        for (row, state) in rows.iter().zip(states) {
            let Some(record) = &state.energy else {
                continue;
            };
            if record.unavailable.is_some() {
                continue;
            }
            let joules = record.joules_per_launch();
            if joules.is_empty() {
                continue;
            }
            if control && is_base {
                self.control
                    .borrow_mut()
                    .insert(row.rt_workload.clone(), joules.clone());
            }
            let control = if is_base {
                Vec::new()
            } else {
                self.control
                    .borrow()
                    .get(&row.rt_workload)
                    .cloned()
                    .unwrap_or_default()
            };
            self.rows.borrow_mut().insert(
                RowKey::of(row),
                Energy {
                    joules,
                    watts: record.watts(),
                    control,
                    counter_interval: record.counter_interval,
                },
            );
        }
    }

    /// Takes the energy of `rows` out, to be stored with them.
    pub(crate) fn take(&self, rows: &[Measurement]) -> Vec<(RowKey, Energy)> {
        let mut pending = self.rows.borrow_mut();
        rows.iter()
            .filter_map(|r| {
                let k = RowKey::of(r);
                pending.remove(&k).map(|e| (k, e))
            })
            .collect()
    }
}

/// Says once per search why energy is not measured, if `state` says it is not: every state
/// of such a bench says so.
pub(crate) fn say_if_unavailable(out: &mut Output, state: &StateRecord) {
    let Some(why) = state.energy.as_ref().and_then(|e| e.unavailable.as_deref()) else {
        return;
    };
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        out.status(&format!(
            "Note: energy is not measured: {why}; the search goes on by time"
        ));
    }
}
