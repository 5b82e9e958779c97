//! `zarrshard refs`: a kerchunk reference set over the array's inner chunks (JSON version 0,
//! version 1, or fsspec's Parquet layout). The arguments are a contract used by checks
//! outside the project.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zarrshard::array::refs::{JsonVersion, MetadataFormat};
use zarrshard::array::Array;
use zarrshard::storage::store::FsStore;
use zarrshard::{Error, Result};

#[derive(clap::Args)]
pub struct RefsArgs {
    array_dir: PathBuf,
    /// Reference set format (`--format json-v1`). JSON lists the stored inner chunks only;
    /// Parquet has one row per inner chunk of the grid, stored or not, and refuses a grid of
    /// more than 100000000 inner chunks before writing anything.
    #[arg(long, value_enum)]
    format: RefsFormat,
    /// Where readers find the array's folder (`http://host/data/image.zarr`,
    /// `file:///data/image.zarr`); each reference is `URL/SHARD_KEY`.
    #[arg(long)]
    url_prefix: String,
    /// Output: a JSON file, or for Parquet a directory that does not exist yet (or is empty).
    #[arg(short = 'o', long = "output")]
    out: PathBuf,
    /// Metadata of the unsharded array in the set: 3 (`zarr.json`, the default) or 2
    /// (`.zarray`); Parquet implies 2.
    ///
    /// Example: zarrshard refs data/image.zarr --format json-v0 --url-prefix http://host/image.zarr --zarr-format 2 -o image.json
    #[arg(long, value_parser = clap::value_parser!(u8).range(2..=3))]
    zarr_format: Option<u8>,
    /// Put the array under NAME/ in the set (Parquet: default the array folder's name; JSON:
    /// default at the root).
    ///
    /// Example: zarrshard refs data/image.zarr --format json-v1 --url-prefix http://host/data --name image -o refs.json
    #[arg(long)]
    name: Option<String>,
    /// Separator of Zarr v2 chunk keys (`0.1` or `0/1`); Parquet needs `.`.
    ///
    /// Example: zarrshard refs data/image.zarr --format json-v1 --url-prefix http://host/image.zarr --zarr-format 2 --dimension-separator / -o image.json
    #[arg(long, default_value = ".", value_parser = ["." , "/"])]
    dimension_separator: String,
    /// Parquet: references per file (LazyReferenceMapper's `record_size`).
    ///
    /// Example: zarrshard refs data/image.zarr --format parquet --url-prefix http://host/image.zarr --record-size 100000 -o image.parq
    #[arg(long, default_value_t = 10000)]
    record_size: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RefsFormat {
    JsonV0,
    JsonV1,
    Parquet,
}

/// Build the reference set of ARRAY_DIR and write it in the chosen format.
pub fn run(args: RefsArgs) -> Result<ExitCode> {
    if args.name.as_deref() == Some("") {
        // Refused as the Parquet layout refuses it (JSON keys `/zarr.json`, `/c/0/0` open
        // nowhere), before any shard is read.
        return Err(Error::InvalidArgument("invalid array name ``".into()));
    }
    let zarr_format = match (args.format, args.zarr_format) {
        (RefsFormat::Parquet, Some(3)) => {
            return Err(Error::InvalidArgument(
                "--format parquet needs --zarr-format 2: fsspec reads the Parquet layout only with Zarr v2 metadata".into(),
            ))
        }
        (RefsFormat::Parquet, _) => 2,
        (_, v) => v.unwrap_or(3),
    };
    let separator = if args.dimension_separator == "/" {
        '/'
    } else {
        '.'
    };
    let format = match zarr_format {
        2 => MetadataFormat::V2 { separator },
        _ => MetadataFormat::V3,
    };
    let parquet_name = match (args.format, &args.name) {
        (RefsFormat::Parquet, Some(n)) => Some(n.clone()),
        (RefsFormat::Parquet, None) => Some(folder_name(&args.array_dir)?),
        _ => None,
    };
    if let Some(name) = &parquet_name {
        // Before any shard is read.
        zarrshard::array::refs::check_parquet_output(name, args.record_size)?;
        zarrshard::array::refs::check_parquet_dir(&args.out)?;
    }
    let array = super::open(&args.array_dir)?;
    let version = match args.format {
        RefsFormat::JsonV0 => JsonVersion::V0,
        RefsFormat::JsonV1 => JsonVersion::V1,
        RefsFormat::Parquet => {
            let name = parquet_name.expect("set for the Parquet format above");
            write_parquet(&array, &args, &name)?;
            return Ok(ExitCode::SUCCESS);
        }
    };
    // Both layouts are written as the shards are read, a batch and a slab at a time: the set
    // is never held.
    write_json(&args.out, |w| {
        let name = args.name.as_deref();
        zarrshard::array::refs::write_json_from_array(
            &array,
            format,
            version,
            &args.url_prefix,
            name,
            w,
        )
    })?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(feature = "parquet")]
fn write_parquet(array: &Array<FsStore>, args: &RefsArgs, name: &str) -> Result<()> {
    let (url, size) = (&args.url_prefix, args.record_size);
    zarrshard::array::refs::write_parquet_from_array(array, url, name, size, &args.out)
}

#[cfg(not(feature = "parquet"))]
fn write_parquet(_: &Array<FsStore>, _: &RefsArgs, _: &str) -> Result<()> {
    Err(Error::InvalidArgument(
        "this build has no Parquet support (cargo feature `parquet`)".into(),
    ))
}

/// The array folder's name (`image.zarr` for `data/image.zarr/`; `image` for a v3-draft
/// `…/meta/root/image.array.json`).
fn folder_name(array_dir: &Path) -> Result<String> {
    let canonical = std::fs::canonicalize(array_dir)?;
    let name = canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = name
        .strip_suffix(".array.json")
        .unwrap_or(&name)
        .to_string();
    if name.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "{} has no folder name; give --name",
            array_dir.display()
        )));
    }
    Ok(name)
}

/// Write the set as one line of JSON into OUT (see `output`: a temporary sibling renamed into
/// place for a regular file, so a failure never leaves a truncated set).
fn write_json(out: &Path, text: impl Fn(&mut dyn Write) -> Result<()>) -> Result<()> {
    crate::output::write_output(out, |file| {
        let mut w = std::io::BufWriter::new(file);
        let named = |e| zarrshard::Error::io_at(out, e);
        let mut file_side = Named {
            inner: &mut w,
            path: out,
            failed: None,
        };
        // A failure of OUT is reported naming OUT, not as the library's.
        if let Err(e) = text(&mut file_side) {
            return Err(file_side.failed.take().unwrap_or(e));
        }
        w.write_all(b"\n").map_err(named)?;
        w.flush().map_err(named)?;
        Ok(())
    })
}

/// A writer that keeps its first failure as an error naming `path`.
struct Named<'a, W: Write> {
    inner: W,
    path: &'a Path,
    failed: Option<Error>,
}

impl<W: Write> Named<'_, W> {
    fn kept<T>(&mut self, result: std::io::Result<T>) -> std::io::Result<T> {
        result.inspect_err(|e| {
            let copy = match e.raw_os_error() {
                Some(code) => std::io::Error::from_raw_os_error(code),
                None => std::io::Error::new(e.kind(), e.to_string()),
            };
            self.failed
                .get_or_insert_with(|| Error::io_at(self.path, copy));
        })
    }
}

impl<W: Write> Write for Named<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let result = self.inner.write(buf);
        self.kept(result)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        let result = self.inner.flush();
        self.kept(result)
    }
}
