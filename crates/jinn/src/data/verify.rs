//! `jinn data verify`: decode every record of every split and report each bad one.

use super::{resolve_shape, splits_of, ShapeArg};
use jinn_data::array_record::ArrayRecordReader;
use jinn_data::dataset::{list_record_files, validate_record};
use jinn_data::pickle::decode_episode;
use std::path::PathBuf;

/// Arguments of `jinn data verify`.
#[derive(clap::Args)]
pub struct VerifyArgs {
    /// Dataset root, split directory or single `.array_record` file.
    pub path: PathBuf,
    #[command(flatten)]
    pub shape: ShapeArg,
}

/// Verify; fails when any record is bad.
pub fn run(args: VerifyArgs) -> anyhow::Result<()> {
    let mut bad = 0usize;
    let mut total = 0usize;
    for (split, dir) in splits_of(&args.path)? {
        let shape = resolve_shape(&dir, args.shape.frame_shape)?;
        let (_, files) = list_record_files(&dir)?;
        let mut split_records = 0;
        for file in files {
            let reader = match ArrayRecordReader::open(&file) {
                Ok(r) => r,
                Err(e) => {
                    println!("BAD  {e}");
                    bad += 1;
                    continue;
                }
            };
            for index in 0..reader.len() {
                split_records += 1;
                let checked = reader.read(index).and_then(|bytes| {
                    let record = decode_episode(&bytes)?;
                    validate_record(&record, shape).map_err(|reason| jinn_data::DataError::Record {
                        path: file.clone(),
                        index,
                        reason,
                    })
                });
                if let Err(e) = checked {
                    println!("BAD  {}: record {index}: {e}", file.display());
                    bad += 1;
                }
            }
        }
        println!("{split}: {split_records} records checked");
        total += split_records;
    }
    if bad > 0 {
        anyhow::bail!("{bad} bad record(s) or file(s) out of {total} records in {}", args.path.display());
    }
    println!("ok: all {total} records decode and match their frame shape");
    Ok(())
}
