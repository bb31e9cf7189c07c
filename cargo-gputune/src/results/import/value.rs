//! A tunable parameter's value as Kernel Tuner's JSON holds it, and how gputune spells it.

use gputune_grammar::Value;
use serde_json::Value as Json;

/// One value of a tunable parameter in a Kernel Tuner file: JSON's scalars.
#[derive(Debug, Clone, PartialEq)]
pub enum KtValue {
    /// An integer.
    Int(i64),
    /// A number with a fraction or an exponent.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A string.
    Str(String),
}

impl KtValue {
    /// The value of a JSON scalar; `None` for null, arrays and objects.
    pub fn from_json(v: &Json) -> Option<KtValue> {
        match v {
            Json::Bool(b) => Some(KtValue::Bool(*b)),
            Json::Number(n) => match n.as_i64() {
                Some(i) => Some(KtValue::Int(i)),
                None => n.as_f64().map(KtValue::Float),
            },
            Json::String(s) => Some(KtValue::Str(s.clone())),
            _ => None,
        }
    }

    /// The value in gputune's grammar: a float becomes a string of its JSON spelling
    /// (`"0.5"`), since `#[tune]` has no floats and labels only need its text.
    pub fn to_grammar(&self) -> Value {
        match self {
            KtValue::Int(i) => Value::Int(*i),
            KtValue::Bool(b) => Value::Bool(*b),
            KtValue::Float(f) => Value::Str(Json::from(*f).to_string()),
            KtValue::Str(s) => Value::Str(s.clone()),
        }
    }

    /// The value back from gputune's grammar: a string that is a JSON number was a float
    /// (see [`KtValue::to_grammar`]).
    pub fn from_grammar(v: &Value) -> KtValue {
        match v {
            Value::Int(i) => KtValue::Int(*i),
            Value::Bool(b) => KtValue::Bool(*b),
            Value::Ident(s) => KtValue::Str(s.clone()),
            Value::Str(s) => match serde_json::from_str::<Json>(s) {
                Ok(Json::Number(n)) if n.as_i64().is_none() => n
                    .as_f64()
                    .map_or_else(|| KtValue::Str(s.clone()), KtValue::Float),
                _ => KtValue::Str(s.clone()),
            },
        }
    }

    /// The value as JSON.
    pub fn to_json(&self) -> Json {
        match self {
            KtValue::Int(i) => Json::from(*i),
            KtValue::Float(f) => Json::from(*f),
            KtValue::Bool(b) => Json::Bool(*b),
            KtValue::Str(s) => Json::String(s.clone()),
        }
    }

    /// As Python's `str()` spells it: Kernel Tuner keys its cache by the values so spelled,
    /// joined with commas, and looks entries up that way in simulation mode.
    pub fn python(&self) -> String {
        match self {
            KtValue::Int(i) => i.to_string(),
            KtValue::Float(f) => Json::from(*f).to_string(),
            KtValue::Bool(true) => "True".into(),
            KtValue::Bool(false) => "False".into(),
            KtValue::Str(s) => s.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_survive_the_grammar_and_spell_as_python_does() {
        for v in [
            KtValue::Int(-3),
            KtValue::Float(0.5),
            KtValue::Bool(true),
            KtValue::Str("ldg".into()),
        ] {
            assert_eq!(KtValue::from_grammar(&v.to_grammar()), v);
        }
        assert_eq!(KtValue::Float(1.0).python(), "1.0");
        assert_eq!(KtValue::Bool(false).python(), "False");
        assert_eq!(KtValue::from_json(&Json::Null), None);
    }
}
