//! The play page's buttons: a label and a key for each action of a world model.
//!
//! Recorded actions keep their names and take the key their name suggests (left on ArrowLeft,
//! fire on Space, …). A latent action code that clearly stands for a recorded action
//! ([`jinn_world::code_partners`]) is named after it; the code that leads the action takes its
//! key, the others are labelled with their number too. Every other code keeps a neutral label
//! and gets a digit key from the page.

use jinn_serve::ActionInfo;
use jinn_world::code_partners::{code_partners, leading_codes};

/// The key an action of this name suggests (`KeyboardEvent.key`), if any: arrows for
/// directions, Space for fire/jump. Names are compared case-insensitively, and compound names
/// such as procgen's `LEFT+UP` take no key (the arrows belong to the plain directions).
pub fn key_for(name: &str) -> Option<&'static str> {
    match name.to_ascii_lowercase().as_str() {
        "left" => Some("ArrowLeft"),
        "right" => Some("ArrowRight"),
        "up" => Some("ArrowUp"),
        "down" => Some("ArrowDown"),
        "fire" | "jump" => Some(" "),
        _ => None,
    }
}

/// Buttons for recorded actions named `names` (indexed by action id).
pub fn recorded_buttons(names: &[String]) -> Vec<ActionInfo> {
    names
        .iter()
        .enumerate()
        .map(|(i, name)| ActionInfo {
            id: i as u32,
            label: name.clone(),
            key: key_for(name).map(str::to_string),
            description: None,
        })
        .collect()
}

/// Buttons for `codes` latent codes given their co-occurrence `counts` with recorded actions
/// named `names` (see the module docs). Without counts every code is `latent i`.
pub fn latent_buttons(counts: Option<&[Vec<usize>]>, codes: usize, names: &[String]) -> Vec<ActionInfo> {
    let partners = counts.map(|c| code_partners(c, codes)).unwrap_or_else(|| vec![None; codes]);
    let leads = leading_codes(&partners);
    let name = |a: usize| names.get(a).cloned().unwrap_or_else(|| format!("action {a}"));
    partners
        .iter()
        .enumerate()
        .map(|(c, p)| {
            let description = p.as_ref().map(|p| {
                format!(
                    "latent code {c}: {:.0}% of its {} transitions carry the recorded action {}",
                    100.0 * p.share,
                    p.transitions,
                    name(p.action)
                )
            });
            let (label, key) = match p.as_ref().filter(|p| p.is_clear()) {
                Some(p) if leads[c] => (name(p.action), key_for(&name(p.action)).map(str::to_string)),
                Some(p) => (format!("{} ({c})", name(p.action)), None),
                None => (format!("latent {c}"), None),
            };
            ActionInfo { id: c as u32, label, key, description }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        ["noop", "left", "right", "fire"].iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn recorded_actions_take_the_keys_their_names_suggest() {
        let b = recorded_buttons(&names());
        let keys: Vec<Option<&str>> = b.iter().map(|a| a.key.as_deref()).collect();
        assert_eq!(keys, [None, Some("ArrowLeft"), Some("ArrowRight"), Some(" ")]);
        assert_eq!(b[2].label, "right");
        let procgen: Vec<String> = ["LEFT", "LEFT+UP", "RIGHT", "UP"].iter().map(|s| s.to_string()).collect();
        let keys: Vec<Option<String>> = recorded_buttons(&procgen).into_iter().map(|a| a.key).collect();
        assert_eq!(keys, [Some("ArrowLeft".into()), None, Some("ArrowRight".into()), Some("ArrowUp".into())]);
    }

    #[test]
    fn codes_are_named_by_their_partner_action_and_the_larger_share_takes_the_key() {
        // code 0: right 868/875; code 1: left 70%; code 2: left 90%; code 3: no clear partner;
        // code 4: never seen.
        let counts = vec![vec![5, 2, 868, 0], vec![30, 70, 0, 0], vec![10, 90, 0, 0], vec![50, 0, 0, 50]];
        let b = latent_buttons(Some(&counts), 5, &names());
        let labels: Vec<&str> = b.iter().map(|a| a.label.as_str()).collect();
        assert_eq!(labels, ["right", "left (1)", "left", "latent 3", "latent 4"]);
        let keys: Vec<Option<&str>> = b.iter().map(|a| a.key.as_deref()).collect();
        assert_eq!(keys, [Some("ArrowRight"), None, Some("ArrowLeft"), None, None]);
        assert!(b[0].description.as_deref().unwrap().contains("99% of its 875 transitions"), "{:?}", b[0]);
        assert!(b[4].description.is_none());
        // A share just under the threshold is not clear.
        let counts = vec![vec![41, 59, 0, 0]];
        assert_eq!(latent_buttons(Some(&counts), 1, &names())[0].label, "latent 0");
        let counts = vec![vec![40, 60, 0, 0]];
        assert_eq!(latent_buttons(Some(&counts), 1, &names())[0].label, "left");
    }

    #[test]
    fn equal_shares_give_the_key_to_the_lower_code_and_no_counts_give_neutral_labels() {
        let counts = vec![vec![0, 8, 2, 0], vec![0, 8, 2, 0]];
        let b = latent_buttons(Some(&counts), 2, &names());
        assert_eq!((b[0].key.as_deref(), b[1].key.as_deref()), (Some("ArrowLeft"), None));
        let b = latent_buttons(None, 3, &names());
        assert!(b.iter().enumerate().all(|(i, a)| a.label == format!("latent {i}") && a.key.is_none()));
    }
}
