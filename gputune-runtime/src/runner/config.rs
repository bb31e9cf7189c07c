//! The run's settings, from the command line.

use clap::Parser;

use super::results::to_stdout;
use crate::bench::Bench;
use crate::cli::Cli;
use crate::criterion::{Criteria, CriterionParams};
use crate::error::{Error, Result};
use crate::measure::{ColdSettings, HotSettings};
use crate::state::ExecConfig;

/// Parses and checks the command line; `None` when it asked for `--help` or `--version`,
/// which are printed here.
pub(super) fn parse_flags(args: &[String]) -> Result<Option<Cli>> {
    let mut cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                to_stdout(&e.to_string());
                return Ok(None);
            }
            // clap's first line names the problem and what is allowed; the rest is usage.
            let text = e.to_string();
            let first = text
                .lines()
                .next()
                .unwrap_or("bad arguments")
                .trim_start_matches("error: ");
            return Err(Error::Usage(first.to_string()));
        }
    };
    cli.validate()?;
    cli.read_variant_files()?;
    cli.read_workload_files()?;
    // What the bench applies: `--profile` stands for the settings it implies.
    Ok(Some(cli.effective()))
}

/// What a run of states needs from the flags, built once.
pub(super) struct RunConfig {
    /// How states are measured; the runner sets the variant and the race per state.
    pub(super) exec: ExecConfig,
    /// The `--variant`s as written, or one `None`: a pass with the production choice.
    pub(super) variants: Vec<Option<String>>,
}

impl RunConfig {
    /// Usage errors: an unknown stopping criterion, a bad criterion parameter, or
    /// `--variant` with a bench that tunes no function.
    pub(super) fn new(cli: &Cli, criteria: Criteria, benches: &[Bench]) -> Result<RunConfig> {
        Ok(RunConfig {
            exec: exec_config(cli, criteria)?,
            variants: variants(cli, benches)?,
        })
    }
}

fn exec_config(cli: &Cli, criteria: Criteria) -> Result<ExecConfig> {
    if !criteria.names().contains(&cli.criterion()) {
        return Err(Error::Usage(format!(
            "unknown stopping criterion `{}`; known: {}",
            cli.criterion(),
            criteria.names().join(", ")
        )));
    }
    let mut params = CriterionParams {
        max_noise: cli.max_noise / 100.0,
        min_time: cli.min_time,
        max_angle: cli.max_angle,
        min_r2: cli.min_r2,
        target_samples: cli.target_samples,
        ..CriterionParams::default()
    };
    params.extra.extend(cli.extra_params()?);
    Ok(ExecConfig {
        criteria,
        criterion: cli.criterion().to_string(),
        params,
        cold: ColdSettings {
            min_samples: cli.min_samples,
            timeout: cli.timeout,
            throttle_threshold: cli.throttle_threshold / 100.0,
            race: None,
            warm_up: !cli.profile,
        },
        hot: HotSettings {
            batch_target_time: cli.batch_target_time,
            timeout: cli.timeout,
            ..HotSettings::default()
        },
        no_batch: cli.no_batch,
        // `--profile` takes one sample and nothing else.
        energy: (cli.energy && !cli.profile).then(|| crate::measure::energy::EnergySettings {
            batches: cli.energy_batches,
            window: cli.energy_window,
            timeout: cli.timeout,
            ..Default::default()
        }),
        variant: None,
    })
}

fn variants(cli: &Cli, benches: &[Bench]) -> Result<Vec<Option<String>>> {
    if cli.variant.is_empty() {
        return Ok(vec![None]);
    }
    if let Some(b) = benches.iter().find(|b| b.tunes.is_none()) {
        return Err(Error::Usage(format!(
            "--variant needs a bench that tunes a function (Bench::tunes), and `{}` tunes none",
            b.name
        )));
    }
    Ok(cli.variant.iter().cloned().map(Some).collect())
}
