//! `zarrshard`: the command-line tool. Its subcommands and their exit codes are a contract
//! used by checks outside the project; keep them stable.
//!
//! Every failure is one line on stderr and a non-zero exit; never a panic or a signal.

mod args;
mod get;
mod info;
mod inspect;
mod output;
mod progress;
mod refs;
mod repack;
mod repair;
mod verify;

use clap::{Parser, Subcommand};
use progress::{bar, Counted, Unit};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use zarrshard::{Array, ChunkOrder, FsStore, UpdateMode, WriteOptions, WriteStrategy};

#[derive(Parser)]
#[command(
    name = "zarrshard",
    version,
    about = "Zarr v3 sharding: export, verify, inspect and repack sharded arrays"
)]
struct Cli {
    /// No progress bars (they are drawn on stderr only when it is a terminal anyway).
    ///
    /// Example: zarrshard --quiet export data/image.zarr image.raw
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write the whole array as raw bytes: C order, each element little-endian, bool one
    /// byte 0/1, complex as real then imaginary, the fill value where nothing is stored.
    /// Memory: blocks of at most 16 MiB (or ZARRSHARD_MEMORY_LIMIT when lower), larger only to
    /// hold whole inner chunks within a quarter of the limit; only stored shards are read, fill
    /// is written for the rest.
    ///
    /// Example: zarrshard export data/image.zarr image.raw
    Export {
        array_dir: PathBuf,
        out_file: PathBuf,
    },
    /// Decode every inner chunk of every shard and check checksums and index bounds. Prints
    /// one line per problem (shard key and inner chunk) and exits 1 if there is any. On
    /// stderr it says what was checked: "S of N shard(s) stored, C inner chunk(s) decoded, U
    /// of them not verifiable (no checksum)". Chunks whose codecs carry no checksum (no
    /// crc32c, zstd without "checksum": true) decode without proving their bytes: exit 0 then
    /// means "decoded", not "verified". No shard stored at all (a mistyped path, nothing
    /// written yet) is said too: such an array reads as all fill value. A shard key that cannot
    /// be read (a directory or a loop of symbolic links where the file would be, no permission)
    /// is a problem, and so is a temporary a killed writer left (`KEY.tmp-PID-N`, its process
    /// gone; `repair` removes it).
    ///
    /// Example: zarrshard verify data/image.zarr
    Verify {
        array_dir: PathBuf,
        /// Print one JSON object instead: {"shards_checked": N, "problems": [{"key": KEY,
        /// "chunk": [I, J] or null, "error": TEXT}], "shards_stored": S, "chunks_decoded": C,
        /// "chunks_unverifiable": U}. Exit codes unchanged.
        ///
        /// Example: zarrshard verify data/image.zarr --json
        #[arg(long)]
        json: bool,
    },
    /// Write every shard of the array described by ARRAY_DIR/zarr.json (or .zarray) from raw
    /// bytes in the export format. Inner chunks equal to the fill value are not stored; a shard
    /// with nothing stored is not written. Memory: two blocks of the input of about 16 MiB
    /// that hold whole shards (one over ZARRSHARD_MEMORY_LIMIT is refused before writing).
    ///
    /// Every strategy writes each shard to a new file beside it (SHARD.tmp-PID-N) and renames
    /// it over the shard when it is complete, so no strategy loses data it did not overwrite:
    /// killed (even with kill -9), out of disk space or past `ulimit -f`, each shard is its
    /// old version or its new one, whole (the error names the file; a killed run leaves its
    /// temporaries, which `verify` reports and `repair` removes). Two imports into one array
    /// at once each succeed and leave every shard one of them's complete version (the array
    /// may mix shards of both). A rewritten shard keeps its file's mode, and owner and group
    /// where permitted. A shard that is a symbolic link is written through: the file it names
    /// is replaced, the link stays (one with nothing stored is removed: the link goes, the
    /// file it named stays).
    ///
    /// Example: zarrshard import image.raw data/image.zarr --strategy streaming
    Import {
        /// Raw input file, `-` for standard input.
        in_file: PathBuf,
        array_dir: PathBuf,
        /// Writer: buffered (one write per shard), streaming (chunk by chunk), update (into
        /// existing shards, append-only), update-in-place (rewriting chunks where they fit).
        /// They differ in the bytes of the shard (updates keep the old chunks' bytes, dead
        /// bytes `compact` removes) and in memory (streaming: the shard's index and a chunk;
        /// updates: the old shard), not in safety: each writes a new file and renames it
        /// into place.
        ///
        /// Example: zarrshard import image.raw data/image.zarr --strategy update-in-place
        #[arg(long, value_enum, default_value_t = StrategyArg::Buffered)]
        strategy: StrategyArg,
        /// Order of inner chunks in buffered shards.
        #[arg(long, value_enum, default_value_t = OrderArg::C)]
        order: OrderArg,
        /// Also store inner chunks that equal the fill value.
        #[arg(long)]
        store_fill_chunks: bool,
    },
    /// Rewrite shards that have dead bytes (left by updates) without them. Each is written to
    /// a new file and renamed over the old one, keeping its mode, owner and group (where
    /// permitted); a symbolic link is written through, as `import` does.
    ///
    /// Example: zarrshard compact data/image.zarr
    Compact {
        array_dir: PathBuf,
        #[arg(long, value_enum, default_value_t = OrderArg::C)]
        order: OrderArg,
    },
    /// Print the array's shape, data type, shard layout and codecs.
    ///
    /// Example: zarrshard info data/image.zarr
    Info {
        array_dir: PathBuf,
        /// Print one JSON object instead (schema in docs/cli.md).
        ///
        /// Example: zarrshard info data/image.zarr --json
        #[arg(long)]
        json: bool,
    },
    /// Print a shard's index table (offset, nbytes, empty) and its dead bytes.
    ///
    /// Example: zarrshard inspect data/image.zarr c/0/1
    Inspect {
        array_dir: PathBuf,
        shard_key: String,
        /// Print one JSON object instead (schema in docs/cli.md).
        ///
        /// Example: zarrshard inspect data/image.zarr c/0/1 --json
        #[arg(long)]
        json: bool,
    },
    /// Rewrite every shard into a new layout: shard shape, inner chunk shape, inner codecs,
    /// index location, chunk order. Encoded inner chunks are copied without decoding when the
    /// inner chunk shape and inner codecs stay the same; otherwise re-encoded. Prints how
    /// many chunks were copied and re-encoded. The attributes are kept: a Zarr v2 array's
    /// .zattrs and a v3-draft array's attributes go into the new zarr.json as they are.
    ///
    /// Example: zarrshard repack data/image.zarr data/image-big.zarr --shard-shape 256,256
    Repack(repack::RepackArgs),
    /// Write one inner chunk: decoded in the export byte format (the whole inner chunk shape;
    /// the fill value when not stored), or with --raw its stored bytes.
    ///
    /// Example: zarrshard get data/image.zarr 3,5 > chunk.raw
    Get(get::GetArgs),
    /// Cut torn shards (a write cut off part way) back to their last index whose crc32c
    /// proves it intact, and print per shard what was recovered and what is lost. Exit 0:
    /// nothing damaged; 2: every damaged shard recovered; 3: some cannot be recovered.
    /// Temporaries killed writers left (`KEY.tmp-PID-N`, its process gone) are removed, one
    /// line each (`KEY: removed: …`), exit code unchanged. A shard key that cannot be read
    /// (a directory, a loop of symbolic links) is an error naming its path (exit 1).
    ///
    /// Example: zarrshard repair data/image.zarr --dry-run
    Repair {
        array_dir: PathBuf,
        /// Report only; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Write a kerchunk reference set: the array described unsharded, each stored inner chunk
    /// a [URL/SHARD_KEY, offset, nbytes] reference, for fsspec's ReferenceFileSystem.
    ///
    /// Example: zarrshard refs data/image.zarr --format json-v1 --url-prefix http://host/image.zarr -o image.json
    Refs(refs::RefsArgs),
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum StrategyArg {
    Buffered,
    Streaming,
    /// Update existing shards, append-only.
    Update,
    /// Update existing shards, rewriting chunks in place where they fit.
    UpdateInPlace,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum OrderArg {
    C,
    Morton,
}

impl From<OrderArg> for ChunkOrder {
    fn from(o: OrderArg) -> Self {
        match o {
            OrderArg::C => ChunkOrder::C,
            OrderArg::Morton => ChunkOrder::Morton,
        }
    }
}

fn main() -> ExitCode {
    // Past `ulimit -f` a write then fails with EFBIG, reported as one line naming the file
    // with the temporaries removed, instead of SIGXFSZ killing the tool part way (exit 153).
    // SAFETY: setting a signal's disposition to ignored, before any thread is started.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // A panic would be a bug; still, report it as one line and a failing exit code.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        diagnostic(&format!("internal error: {msg}"));
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    progress::set_quiet(cli.quiet);
    match std::panic::catch_unwind(|| run(cli)) {
        Ok(Ok(code)) => code,
        // A closed pipe (`zarrshard inspect … | head`) is the reader's choice, not a failure.
        Ok(Err(zarrshard::Error::Io { code, .. })) if code == libc::EPIPE => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            diagnostic(&e.to_string());
            ExitCode::from(1)
        }
        Err(_) => ExitCode::from(70),
    }
}

/// One line `zarrshard: TEXT` on stderr. A stderr that cannot be written (a closed pipe, a
/// full disk) is ignored: `eprintln!` would panic there, and the process would abort.
pub fn diagnostic(text: &str) {
    let line = format!("zarrshard: {}\n", one_line(text));
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// What clap reports about the command line. `--help` and `--version` print to stdout and
/// exit 0 as usual; a usage error is one line on stderr and exit 1 like every other error
/// (clap's own exit 2 would read as "recovered" for `repair`).
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let text = e.render().to_string();
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    let text = e.render().to_string();
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more"));
    let first = lines.next().unwrap_or("invalid command line");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let rest: Vec<&str> = lines.collect();
    let message = if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        "a command is required".to_string()
    } else if first.ends_with(':') {
        // A list (`the following required arguments were not provided:`, then one per line).
        format!("{first} {}", rest.join(", "))
    } else {
        std::iter::once(first)
            .chain(rest)
            .collect::<Vec<_>>()
            .join("; ")
    };
    diagnostic(&format!("{message}; see --help"));
    ExitCode::from(1)
}

/// A `--json` report: pretty-printed, one trailing newline.
fn write_json(out: &mut impl Write, report: &impl serde::Serialize) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(report).expect("reports are plain data");
    writeln!(out, "{text}")
}

/// The product of `dims`, saturating (progress bar lengths and counts of shards, which the
/// library has already checked against the grid).
fn saturating_product(dims: &[u64]) -> u64 {
    dims.iter().fold(1u64, |acc, &d| acc.saturating_mul(d))
}

fn one_line(s: &str) -> String {
    s.replace('\n', " ")
}

/// Open ARRAY_DIR: a Zarr v3 array directory, a v2 sharding-prototype directory (`.zarray`),
/// or the `meta/root/<path>.array.json` (`meta/root.array.json` for the root array) file of a
/// v3-draft hierarchy.
fn open(dir: &Path) -> zarrshard::Result<Array<FsStore>> {
    let draft = if dir.is_file() {
        let draft = draft_location(dir)?;
        if draft.is_none() {
            return Err(zarrshard::Error::InvalidArgument(format!(
                "{} is a file: give an array directory, or a v3-draft ROOT/meta/root/<path>.array.json or ROOT/meta/root.array.json",
                dir.display()
            )));
        }
        draft
    } else {
        None
    };
    let result = match draft {
        Some((root, path)) => Array::open_v3_draft(FsStore::new(root), &path),
        None => Array::open(FsStore::new(dir)),
    };
    result.map_err(|e| match e {
        zarrshard::Error::InvalidMetadata(m) => {
            zarrshard::Error::InvalidMetadata(format!("{}: {m}", dir.display()))
        }
        other => other,
    })
}

/// For `ROOT/meta/root/<path>.array.json`: the hierarchy root and `<path>`; for
/// `ROOT/meta/root.array.json` (the array at the hierarchy's root): `ROOT` and the empty path.
/// The root is where the first `meta/root` is (a hierarchy path may itself contain
/// `meta/root`: groups named so); a later one is taken only when the first has no `zarr.json`
/// entry point and it does. The root is any path (compared by components, never re-read as
/// text); `<path>` is a store key and must be UTF-8.
fn draft_location(file: &Path) -> zarrshard::Result<Option<(PathBuf, String)>> {
    use std::path::Component;
    let parts: Vec<Component> = file.components().collect();
    let Some(last) = parts.last() else {
        return Ok(None);
    };
    if !last
        .as_os_str()
        .as_encoded_bytes()
        .ends_with(b".array.json")
    {
        return Ok(None);
    }
    let is = |c: &Component, name: &str| c.as_os_str() == name;
    let mut starts: Vec<usize> = (0..parts.len().saturating_sub(2))
        .filter(|&i| is(&parts[i], "meta") && is(&parts[i + 1], "root"))
        .collect();
    let n = parts.len();
    if n >= 2 && is(&parts[n - 2], "meta") && is(&parts[n - 1], "root.array.json") {
        starts.push(n - 2);
    }
    let root_of = |i: usize| -> PathBuf {
        let root: PathBuf = parts[..i].iter().collect();
        if root.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            root
        }
    };
    let Some(&first) = starts
        .iter()
        .find(|&&i| root_of(i).join("zarr.json").is_file())
        .or(starts.first())
    else {
        return Ok(None);
    };
    if first == n - 2 && is(&parts[n - 1], "root.array.json") {
        return Ok(Some((root_of(first), String::new())));
    }
    let mut names = Vec::new();
    for c in &parts[first + 2..] {
        let name = c.as_os_str().to_str().ok_or_else(|| {
            zarrshard::Error::InvalidArgument(format!(
                "{}: the hierarchy path after meta/root/ is not UTF-8",
                file.display()
            ))
        })?;
        names.push(name);
    }
    let path = names.join("/");
    let path = path
        .strip_suffix(".array.json")
        .unwrap_or(&path)
        .to_string();
    Ok(Some((root_of(first), path)))
}

fn run(cli: Cli) -> zarrshard::Result<ExitCode> {
    match cli.command {
        Command::Export {
            array_dir,
            out_file,
        } => export(&array_dir, &out_file),
        Command::Verify { array_dir, json } => verify::run(&open(&array_dir)?, json),
        Command::Import {
            in_file,
            array_dir,
            strategy,
            order,
            store_fill_chunks,
        } => {
            let array = open(&array_dir)?;
            let strategy = match strategy {
                StrategyArg::Buffered => WriteStrategy::Buffered,
                StrategyArg::Streaming => WriteStrategy::Streaming,
                StrategyArg::Update => WriteStrategy::Update(UpdateMode::AppendOnly),
                StrategyArg::UpdateInPlace => WriteStrategy::Update(UpdateMode::InPlace),
            };
            let options = WriteOptions {
                order: order.into(),
                store_fill_chunks,
            };
            // A file of the wrong size is refused before any shard is touched.
            let expected = array_bytes(array.metadata())?;
            let stdin = in_file.as_os_str() == "-";
            let size = if stdin {
                None
            } else {
                std::fs::metadata(&in_file)
                    .ok()
                    .filter(|f| f.is_file())
                    .map(|f| f.len())
            };
            if let Some(len) = size {
                if len != expected {
                    let word = if len < expected { "shorter" } else { "longer" };
                    return Err(zarrshard::Error::InvalidArgument(format!(
                        "the input is {word} than the array's {expected} bytes"
                    )));
                }
            }
            let progress = bar("import", expected, Unit::Bytes);
            let input: Box<dyn std::io::Read> = if stdin {
                Box::new(std::io::stdin().lock())
            } else {
                let f = std::fs::File::open(&in_file)
                    .map_err(|e| zarrshard::Error::io_at(&in_file, e))?;
                Box::new(f)
            };
            let mut input = Counted {
                inner: input,
                bar: progress.clone(),
            };
            array.import(
                &mut std::io::BufReader::with_capacity(1 << 20, &mut input),
                strategy,
                options,
            )?;
            progress.finish_and_clear();
            Ok(ExitCode::SUCCESS)
        }
        Command::Compact { array_dir, order } => {
            let array = open(&array_dir)?;
            let mut out = std::io::stdout().lock();
            let shards = saturating_product(&array.metadata().grid_shape());
            let progress = bar("compact", shards, Unit::Shards);
            let done = array.compact_with_progress(order.into(), &|n| progress.inc(n))?;
            progress.finish_and_clear();
            for (key, before, after) in &done {
                writeln!(out, "{key}: {before} -> {after} bytes")?;
            }
            diagnostic(&format!("{} shard(s) compacted", done.len()));
            Ok(ExitCode::SUCCESS)
        }
        Command::Info { array_dir, json } => {
            info::run(&open(&array_dir)?, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Inspect {
            array_dir,
            shard_key,
            json,
        } => {
            inspect::run(&open(&array_dir)?, &shard_key, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Refs(args) => refs::run(args),
        Command::Repack(args) => repack::run(args),
        Command::Get(args) => get::run(args),
        Command::Repair { array_dir, dry_run } => repair::run(&array_dir, dry_run),
    }
}

/// Export into OUT_FILE (a temporary sibling renamed into place when it is a regular file, so
/// a failure never leaves a truncated OUT_FILE that looks complete; see `output`).
fn export(array_dir: &Path, out_file: &Path) -> zarrshard::Result<ExitCode> {
    let array = open(array_dir)?;
    let total = array_bytes(array.metadata())?;
    output::write_output(out_file, |file| {
        let counted = Counted {
            inner: &mut *file,
            bar: bar("export", total, Unit::Bytes),
        };
        let mut w = std::io::BufWriter::with_capacity(1 << 20, counted);
        array.export(&mut w)?;
        let counted = w
            .into_inner()
            .map_err(|e| zarrshard::Error::io_at(out_file, e.into_error()))?;
        counted.bar.finish_and_clear();
        Ok(ExitCode::SUCCESS)
    })
}

/// The array's size in the export format (elements × element size), or an error when it does
/// not fit in 64 bits.
fn array_bytes(m: &zarrshard::ArrayMetadata) -> zarrshard::Result<u64> {
    if m.shape.contains(&0) {
        return Ok(0);
    }
    m.shape
        .iter()
        .try_fold(m.data_type.size() as u64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| {
            zarrshard::Error::InvalidArgument(format!(
                "the array of shape {:?} and {}-byte elements has more than 2^64 bytes",
                m.shape,
                m.data_type.size()
            ))
        })
}
