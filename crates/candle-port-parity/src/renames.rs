//! Rename rules between torch's state_dict names and a port's own names.
//!
//! A rule is a pair of patterns, `encoder.layer.{i}.` for torch and `blocks.{i}.` for the port:
//! literal text and `{name}` placeholders, each matching one dotted segment. A rule applies to a
//! name that starts with its pattern; the rest of the name is kept. The first rule that applies
//! wins. `candle-port compare` reads the same rules, so both sides agree on every name.

use candle_core::{Error, Result};
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Literal(String),
    Segment(String),
}

#[derive(Debug, Clone)]
struct Pattern {
    tokens: Vec<Token>,
}

/// Matches `tokens` against `name` from byte `at`; a placeholder takes part of one segment (no
/// dot), trying shorter takes when what follows does not match.
fn match_from(
    tokens: &[Token],
    name: &str,
    at: usize,
    values: &mut HashMap<String, String>,
) -> Option<usize> {
    let Some((token, rest)) = tokens.split_first() else {
        return Some(at);
    };
    match token {
        Token::Literal(text) => {
            if name[at..].starts_with(text.as_str()) {
                match_from(rest, name, at + text.len(), values)
            } else {
                None
            }
        }
        Token::Segment(key) => {
            let segment = name[at..].find('.').unwrap_or(name.len() - at);
            for len in (1..=segment).rev() {
                let value = &name[at..at + len];
                if values.get(key).is_some_and(|seen| seen != value) {
                    continue;
                }
                let previous = values.insert(key.clone(), value.to_string());
                if let Some(end) = match_from(rest, name, at + len, values) {
                    return Some(end);
                }
                match previous {
                    Some(p) => values.insert(key.clone(), p),
                    None => values.remove(key),
                };
            }
            None
        }
    }
}

impl Pattern {
    fn parse(text: &str) -> Result<Self> {
        let mut tokens = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                tokens.push(Token::Literal(rest[..open].to_string()));
            }
            let close = rest[open..]
                .find('}')
                .ok_or_else(|| Error::Msg(format!("rename pattern {text:?}: '{{' without '}}'")))?;
            let name = &rest[open + 1..open + close];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(Error::Msg(format!(
                    "rename pattern {text:?}: placeholder {{{name}}} must be a name such as {{i}}"
                )));
            }
            tokens.push(Token::Segment(name.to_string()));
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            tokens.push(Token::Literal(rest.to_string()));
        }
        Ok(Self { tokens })
    }

    /// The placeholders' values and the length matched, when `name` starts with this pattern.
    fn match_prefix(&self, name: &str) -> Option<(HashMap<String, String>, usize)> {
        let mut values = HashMap::new();
        let at = match_from(&self.tokens, name, 0, &mut values)?;
        Some((values, at))
    }

    fn fill(&self, values: &HashMap<String, String>) -> Option<String> {
        let mut out = String::new();
        for token in &self.tokens {
            match token {
                Token::Literal(text) => out.push_str(text),
                Token::Segment(key) => out.push_str(values.get(key)?),
            }
        }
        Some(out)
    }
}

/// The rename rules of a parity directory, applied from the port's names to torch's.
///
/// ```
/// use candle_port_parity::Renames;
/// let renames = Renames::new(&[("encoder.layer.{i}.".to_string(), "blocks.{i}.".to_string())])?;
/// assert_eq!(renames.to_torch("blocks.3.mlp.fc1.weight"), "encoder.layer.3.mlp.fc1.weight");
/// assert_eq!(renames.to_torch("head.weight"), "head.weight");
/// # Ok::<(), candle_core::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Renames {
    rules: Vec<(Pattern, Pattern)>,
}

impl Renames {
    /// Rules as `(torch pattern, port pattern)` pairs; an error names a malformed pattern.
    pub fn new(rules: &[(String, String)]) -> Result<Self> {
        let rules = rules
            .iter()
            .map(|(torch, port)| Ok((Pattern::parse(torch)?, Pattern::parse(port)?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { rules })
    }

    /// The torch name of the port's `name` (itself when no rule applies).
    pub fn to_torch(&self, name: &str) -> String {
        for (torch, port) in &self.rules {
            if let Some((values, len)) = port.match_prefix(name) {
                if let Some(head) = torch.fill(&values) {
                    return format!("{head}{}", &name[len..]);
                }
            }
        }
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(pairs: &[(&str, &str)]) -> Renames {
        let owned: Vec<(String, String)> = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        Renames::new(&owned).unwrap()
    }

    #[test]
    fn placeholders_match_one_segment_and_keep_the_rest() {
        let r = rules(&[("layers.{i}.attn.{w}", "blocks.{i}.{w}_attn")]);
        assert_eq!(
            r.to_torch("blocks.12.q_attn.weight"),
            "layers.12.attn.q.weight"
        );
        assert_eq!(r.to_torch("blocks..q_attn.weight"), "blocks..q_attn.weight");
    }

    #[test]
    fn the_first_rule_that_applies_wins() {
        let r = rules(&[("a.", "x.y."), ("b.", "x.")]);
        assert_eq!(r.to_torch("x.y.w"), "a.w");
        assert_eq!(r.to_torch("x.z.w"), "b.z.w");
    }

    #[test]
    fn a_placeholder_used_twice_must_match_the_same_text() {
        let r = rules(&[("t.{i}.", "p.{i}.{i}.")]);
        assert_eq!(r.to_torch("p.1.1.w"), "t.1.w");
        assert_eq!(r.to_torch("p.1.2.w"), "p.1.2.w");
    }

    #[test]
    fn malformed_patterns_are_errors() {
        assert!(Renames::new(&[("a.{".into(), "b".into())]).is_err());
        assert!(Renames::new(&[("a.{}".into(), "b".into())]).is_err());
    }
}
