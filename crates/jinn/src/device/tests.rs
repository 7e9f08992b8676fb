use super::*;

/// No launcher variables set.
fn no_env(_: &str) -> Option<String> {
    None
}

fn local_rank_3(var: &str) -> Option<String> {
    (var == "MPI_LOCALRANKID").then(|| " 3 ".into())
}

#[test]
fn cpu_is_the_default_and_parses_in_any_case() {
    assert_eq!(DeviceArgs::default().spec, DeviceSpec::Cpu);
    assert_eq!("cpu".parse::<DeviceSpec>(), Ok(DeviceSpec::Cpu));
    assert_eq!(" CPU ".parse::<DeviceSpec>(), Ok(DeviceSpec::Cpu));
    assert!("cpu".parse::<DeviceSpec>().map(DeviceSpec::device).is_ok());
}

#[test]
fn bad_values_name_the_flag_and_list_every_form() {
    for bad in
        ["gpu", "cpu:0", "", "tpu:1", "wgpu:x", "wgpu:-1", "wgpu:", "cuda:integrated", "cuda:cpu", "bogus"]
    {
        let e = parse(bad, &no_env).unwrap_err();
        assert!(e.contains("--device takes") && e.contains(FORMS), "{bad}: {e}");
        assert!(e.contains(&format!("'{bad}'")), "{bad}: {e}");
    }
}

#[test]
fn every_form_prints_as_the_value_that_names_it() {
    let specs = [
        DeviceSpec::Cpu,
        DeviceSpec::Wgpu(WgpuAdapter::Default),
        DeviceSpec::Wgpu(WgpuAdapter::Discrete(2)),
        DeviceSpec::Wgpu(WgpuAdapter::Integrated),
        DeviceSpec::Wgpu(WgpuAdapter::Software),
        DeviceSpec::Cuda(1),
    ];
    let names: Vec<String> = specs.iter().map(ToString::to_string).collect();
    assert_eq!(names, ["cpu", "wgpu", "wgpu:2", "wgpu:integrated", "wgpu:cpu", "cuda:1"]);
    for (spec, name) in specs.iter().zip(&names) {
        let built = (cfg!(feature = "wgpu") || !name.starts_with("wgpu"))
            && (cfg!(feature = "cuda") || !name.starts_with("cuda"));
        if built {
            assert_eq!(parse(name, &no_env).as_ref(), Ok(spec), "{name}");
        }
    }
}

#[test]
fn adapters_map_to_burns_device_kinds() {
    assert_eq!(WgpuAdapter::Default.kind(), DeviceKind::DefaultDevice);
    assert_eq!(WgpuAdapter::Discrete(1).kind(), DeviceKind::DiscreteGpu(1));
    assert_eq!(WgpuAdapter::Integrated.kind(), DeviceKind::IntegratedGpu(0));
    assert_eq!(WgpuAdapter::Software.kind(), DeviceKind::Cpu);
}

#[test]
fn local_rank_comes_from_the_first_launcher_variable_set() {
    assert_eq!(local_rank("wgpu:local", &local_rank_3), Ok(3));
    let both = |var: &str| Some(if var == "OMPI_COMM_WORLD_LOCAL_RANK" { "1" } else { "5" }.to_string());
    assert_eq!(local_rank("wgpu:local", &both), Ok(1));
    let e = local_rank("wgpu:local", &no_env).unwrap_err();
    for var in LOCAL_RANK_VARS {
        assert!(e.contains(var), "{e}");
    }
    assert!(e.contains("wgpu:local") && e.contains("--device wgpu:0"), "{e}");
    let junk = |var: &str| (var == "SLURM_LOCALID").then(|| "x".to_string());
    assert!(local_rank("wgpu:local", &junk).unwrap_err().contains("SLURM_LOCALID=x"));
}

#[cfg(feature = "wgpu")]
#[test]
fn wgpu_forms_parse_with_their_feature() {
    let wgpu = |s: &str, env: &dyn Fn(&str) -> Option<String>| {
        parse(s, env).map(|d| match d {
            DeviceSpec::Wgpu(a) => a,
            other => panic!("{s}: {other}"),
        })
    };
    assert_eq!(wgpu("wgpu", &no_env), Ok(WgpuAdapter::Default));
    assert_eq!(wgpu("WGPU:1", &no_env), Ok(WgpuAdapter::Discrete(1)));
    assert_eq!(wgpu("wgpu:integrated", &no_env), Ok(WgpuAdapter::Integrated));
    assert_eq!(wgpu("wgpu:cpu", &no_env), Ok(WgpuAdapter::Software));
    assert_eq!(wgpu("wgpu:local", &local_rank_3), Ok(WgpuAdapter::Discrete(3)));
    assert!(wgpu("wgpu:local", &no_env).unwrap_err().contains("MPI local rank"));
}

#[cfg(not(feature = "wgpu"))]
#[test]
fn wgpu_without_its_feature_says_how_to_rebuild() {
    // Every wgpu form, `local` included even with no launcher: the missing backend is the complaint.
    for s in ["wgpu", "wgpu:0", "wgpu:integrated", "wgpu:cpu", "wgpu:local"] {
        let e = parse(s, &no_env).unwrap_err();
        assert!(e.contains("--features wgpu") && e.contains(&format!("'{s}'")), "{s}: {e}");
    }
}

#[cfg(not(feature = "cuda"))]
#[test]
fn cuda_without_its_feature_says_how_to_rebuild() {
    for s in ["cuda", "cuda:1", "cuda:local"] {
        let e = parse(s, &no_env).unwrap_err();
        assert!(e.contains("--features cuda"), "{s}: {e}");
    }
}

#[cfg(feature = "cuda")]
#[test]
fn cuda_forms_parse_with_their_feature() {
    assert_eq!(parse("cuda", &no_env), Ok(DeviceSpec::Cuda(0)));
    assert_eq!(parse("cuda:2", &no_env), Ok(DeviceSpec::Cuda(2)));
    assert_eq!(parse("cuda:local", &local_rank_3), Ok(DeviceSpec::Cuda(3)));
}

#[test]
fn the_flag_parses_through_clap() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        device: DeviceArgs,
    }
    assert_eq!(Cli::try_parse_from(["jinn"]).unwrap().device.spec, DeviceSpec::Cpu);
    assert_eq!(Cli::try_parse_from(["jinn", "--device", "cpu"]).unwrap().device.to_string(), "cpu");
    let e = Cli::try_parse_from(["jinn", "--device", "bogus"]).err().unwrap().to_string();
    assert!(e.contains("--device") && e.contains("wgpu:integrated"), "{e}");
}

#[test]
fn a_value_for_ranks_is_checked_but_local_is_left_to_each_rank() {
    assert_eq!(check_for_ranks("cpu"), Ok(()));
    assert!(check_for_ranks("gpu").unwrap_err().contains("unknown device 'gpu'"));
    assert!(check_for_ranks("wgpu:x").unwrap_err().contains("unknown device"));
    // No launcher variable is set here: `local` is still accepted (where wgpu is built in).
    let local = check_for_ranks("wgpu:local");
    if cfg!(feature = "wgpu") {
        assert_eq!(local, Ok(()));
    } else {
        assert!(local.unwrap_err().contains("--features wgpu"));
    }
}
