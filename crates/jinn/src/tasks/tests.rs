use super::*;

#[test]
fn every_row_loads_a_config_of_its_own_kind() {
    for e in TASKS {
        // The LM names its kind `model.arch`.
        let key = if e.task == "lm" { "model.arch" } else { "model.kind" };
        let sets = match e.task == e.kind {
            true => vec![],
            false => vec![format!("{key}={}", e.kind)],
        };
        let cfg = (e.load)(None, &sets).unwrap();
        assert_eq!(cfg.kind(), e.kind, "row {}/{}", e.task, e.kind);
        // The task's first row loads the same config type.
        let first = load_config(e.task, None, &sets).unwrap();
        assert_eq!(first.to_json(), cfg.to_json(), "row {}/{}", e.task, e.kind);
    }
}

#[test]
fn rows_are_unique_and_tasks_contiguous() {
    for (i, a) in TASKS.iter().enumerate() {
        assert!(
            !TASKS[..i].iter().any(|b| (b.task, b.kind) == (a.task, a.kind)),
            "{}/{} twice",
            a.task,
            a.kind
        );
    }
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
