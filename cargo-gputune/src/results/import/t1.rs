//! The T1 input format of the FAIR benchmark hub: a problem's description. Only its
//! parameters' defaults are read, as the base of the results imported with it; its values
//! and conditions are Python expressions, and the results already hold the space.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value as Json;

use super::{Defaults, ImportError, KtValue};

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct T1File {
    configuration_space: Space,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Space {
    tuning_parameters: Vec<Parameter>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Parameter {
    name: String,
    #[serde(default)]
    default: Option<Json>,
}

/// Parses a T1 file's text.
pub(super) fn parse(path: &Path, text: &[u8]) -> Result<Defaults, ImportError> {
    let file: T1File = serde_json::from_slice(text).map_err(|e| {
        ImportError::field(
            path,
            "ConfigurationSpace.TuningParameters",
            format!("{e} (a T1 file)"),
        )
    })?;
    let mut values = Vec::new();
    for (i, p) in file
        .configuration_space
        .tuning_parameters
        .iter()
        .enumerate()
    {
        let at = format!("ConfigurationSpace.TuningParameters[{i}].Default");
        let Some(d) = &p.default else {
            return Err(ImportError::field(
                path,
                at,
                format!("missing: `{}` has no default", p.name),
            ));
        };
        let v = KtValue::from_json(d).ok_or_else(|| {
            ImportError::field(path, at, format!("{d} is not a number, string or boolean"))
        })?;
        values.push((p.name.clone(), v));
    }
    if values.is_empty() {
        return Err(ImportError::field(
            path,
            "ConfigurationSpace.TuningParameters",
            "names no parameter",
        ));
    }
    Ok(Defaults {
        path: path.to_path_buf(),
        values,
    })
}
