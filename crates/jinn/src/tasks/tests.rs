use super::*;

#[test]
fn every_row_loads_a_config_of_its_own_kind() {
    for e in TASKS {
        for kind in (e.kinds)() {
            // The LM names its kind `model.arch`.
            let key = if e.task == "lm" { "model.arch" } else { "model.kind" };
            let sets = match e.task == kind {
                true => vec![],
                false => vec![format!("{key}={kind}")],
            };
            let cfg = (e.load)(None, &sets).unwrap();
            assert_eq!(cfg.kind(), kind, "row {}/{kind}", e.task);
            // The task's first row loads the same config type.
            let first = load_config(e.task, None, &sets).unwrap();
            assert_eq!(first.to_json(), cfg.to_json(), "row {}/{kind}", e.task);
        }
    }
}

#[test]
fn rows_are_unique_and_tasks_contiguous() {
    let pairs: Vec<(&str, &str)> =
        TASKS.iter().flat_map(|e| (e.kinds)().into_iter().map(|k| (e.task, k))).collect();
    for (i, pair) in pairs.iter().enumerate() {
        assert!(!pairs[..i].contains(pair), "{}/{} twice", pair.0, pair.1);
    }
    let dynamics: Vec<&str> = pairs.iter().filter(|p| p.0 == "dynamics").map(|p| p.1).collect();
    assert_eq!(dynamics, ["maskgit", "causal", "diffusion"]);
    assert_eq!(task_names(), ["tokenizer", "lam", "dynamics", "lm", "graph"]);
}

#[test]
fn unknown_tasks_and_kinds_are_errors_naming_them() {
    let err = load_config("flow", None, &[]).err().unwrap().to_string();
    assert!(err.contains("`flow`") && err.contains("tokenizer, lam, dynamics, lm, graph"), "{err}");
    let cfg = load_config("lam", None, &[]).unwrap();
    let inputs = TaskInputs::new(Path::new("/nonexistent"), Device::flex());
    let err = build("tokenizer", cfg.as_ref(), &inputs).err().unwrap().to_string();
    assert!(err.contains("model.kind `lam`") && err.contains("vq, mae"), "{err}");
}
