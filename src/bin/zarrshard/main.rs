//! `zarrshard`: the command-line tool. Its subcommands and their exit codes are a contract
//! used by checks outside the project; keep them stable.
//!
//! Every failure is one line on stderr and a non-zero exit; never a panic or a signal.

mod repair;

use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zarrshard::{
    Array, ChunkOrder, FsStore, IndexLocation, ShardIndex, Store, UpdateMode, WriteOptions,
    WriteStrategy,
};

#[derive(Parser)]
#[command(
    name = "zarrshard",
    version,
    about = "Zarr v3 sharding: export, verify and inspect sharded arrays"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write the whole array as raw bytes: C order, each element little-endian, bool one
    /// byte 0/1, complex as real then imaginary, the fill value where nothing is stored.
    ///
    /// Example: zarrshard export data/image.zarr image.raw
    Export {
        array_dir: PathBuf,
        out_file: PathBuf,
    },
    /// Decode every inner chunk of every shard and check checksums and index bounds. Prints
    /// one line per problem (shard key and inner chunk) and exits 1 if there is any.
    ///
    /// Example: zarrshard verify data/image.zarr
    Verify { array_dir: PathBuf },
    /// Write every shard of the array described by ARRAY_DIR/zarr.json (or .zarray) from raw
    /// bytes in the export format. Inner chunks equal to the fill value are not stored; a shard
    /// with nothing stored is not written.
    ///
    /// Example: zarrshard import image.raw data/image.zarr --strategy streaming
    Import {
        /// Raw input file, `-` for standard input.
        in_file: PathBuf,
        array_dir: PathBuf,
        /// Writer: buffered (one write per shard), streaming (chunk by chunk), update (into
        /// existing shards, append-only), update-in-place.
        #[arg(long, value_enum, default_value_t = StrategyArg::Buffered)]
        strategy: StrategyArg,
        /// Order of inner chunks in buffered shards.
        #[arg(long, value_enum, default_value_t = OrderArg::C)]
        order: OrderArg,
        /// Also store inner chunks that equal the fill value.
        #[arg(long)]
        store_fill_chunks: bool,
    },
    /// Rewrite shards that have dead bytes (left by updates) without them.
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
    Info { array_dir: PathBuf },
    /// Print a shard's index table (offset, nbytes, empty) and its dead bytes.
    ///
    /// Example: zarrshard inspect data/image.zarr c/0/1
    Inspect {
        array_dir: PathBuf,
        shard_key: String,
    },
    /// Cut torn shards (a write cut off part way) back to their last index whose crc32c
    /// proves it intact, and print per shard what was recovered and what is lost. Exit 0:
    /// nothing damaged; 2: every damaged shard recovered; 3: some cannot be recovered.
    ///
    /// Example: zarrshard repair data/image.zarr --dry-run
    Repair {
        array_dir: PathBuf,
        /// Report only; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
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
    // A panic would be a bug; still, report it as one line and a failing exit code.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        eprintln!("zarrshard: internal error: {msg}");
    }));
    let cli = Cli::parse();
    match std::panic::catch_unwind(|| run(cli)) {
        Ok(Ok(code)) => code,
        // A closed pipe (`zarrshard inspect … | head`) is the reader's choice, not a failure.
        Ok(Err(zarrshard::Error::Io { code, .. })) if code == libc::EPIPE => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("zarrshard: {}", one_line(&e.to_string()));
            ExitCode::from(1)
        }
        Err(_) => ExitCode::from(70),
    }
}

fn one_line(s: &str) -> String {
    s.replace('\n', " ")
}

/// Open ARRAY_DIR: a Zarr v3 array directory, a v2 sharding-prototype directory (`.zarray`),
/// or the `meta/root/<path>.array.json` file of a v3-draft hierarchy.
fn open(dir: &Path) -> zarrshard::Result<Array<FsStore>> {
    let text = dir.to_string_lossy();
    let result = match text
        .strip_suffix(".array.json")
        .and_then(|t| t.rsplit_once("meta/root/"))
    {
        Some((root, path)) if dir.is_file() => {
            let root = if root.is_empty() { "." } else { root };
            Array::open_v3_draft(FsStore::new(root), path)
        }
        _ => Array::open(FsStore::new(dir)),
    };
    result.map_err(|e| match e {
        zarrshard::Error::InvalidMetadata(m) => {
            zarrshard::Error::InvalidMetadata(format!("{}: {m}", dir.display()))
        }
        other => other,
    })
}

fn run(cli: Cli) -> zarrshard::Result<ExitCode> {
    match cli.command {
        Command::Export {
            array_dir,
            out_file,
        } => export(&array_dir, &out_file),
        Command::Verify { array_dir } => {
            let array = open(&array_dir)?;
            let problems = array.verify()?;
            let mut out = std::io::stdout().lock();
            for p in &problems {
                writeln!(out, "{}", one_line(&p.to_string()))?;
            }
            if problems.is_empty() {
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!("zarrshard: {} problem(s) found", problems.len());
                Ok(ExitCode::from(1))
            }
        }
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
            let m = array.metadata();
            let expected = m
                .shape
                .iter()
                .product::<u64>()
                .saturating_mul(m.data_type.size() as u64);
            if let Ok(len) = std::fs::metadata(&in_file).map(|f| f.len()) {
                if in_file.is_file() && len != expected {
                    let word = if len < expected { "shorter" } else { "longer" };
                    return Err(zarrshard::Error::InvalidArgument(format!(
                        "the input is {word} than the array's {expected} bytes"
                    )));
                }
            }
            let mut input: Box<dyn std::io::Read> = if in_file.as_os_str() == "-" {
                Box::new(std::io::stdin().lock())
            } else {
                let f = std::fs::File::open(&in_file).map_err(|e| zarrshard::Error::Io {
                    code: e.raw_os_error().unwrap_or(-1),
                    message: format!("{}: {e}", in_file.display()),
                })?;
                Box::new(f)
            };
            array.import(
                &mut std::io::BufReader::with_capacity(1 << 20, &mut input),
                strategy,
                options,
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Compact { array_dir, order } => {
            let array = open(&array_dir)?;
            let mut out = std::io::stdout().lock();
            let done = array.compact(order.into())?;
            for (key, before, after) in &done {
                writeln!(out, "{key}: {before} -> {after} bytes")?;
            }
            eprintln!("zarrshard: {} shard(s) compacted", done.len());
            Ok(ExitCode::SUCCESS)
        }
        Command::Info { array_dir } => {
            info(&open(&array_dir)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Inspect {
            array_dir,
            shard_key,
        } => {
            inspect(&open(&array_dir)?, &shard_key)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Repair { array_dir, dry_run } => repair::run(&array_dir, dry_run),
    }
}

/// Export into a temporary sibling and rename it into place, so a failure never leaves a
/// truncated OUT_FILE that looks complete.
fn export(array_dir: &Path, out_file: &Path) -> zarrshard::Result<ExitCode> {
    let array = open(array_dir)?;
    let mut tmp_name = out_file.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".partial");
    let tmp = out_file.with_file_name(tmp_name);
    let result = (|| {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
        array.export(&mut w)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, out_file)?;
        Ok(ExitCode::SUCCESS)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn info(array: &Array<FsStore>) -> zarrshard::Result<()> {
    let m = array.metadata();
    let mut out = std::io::stdout().lock();
    writeln!(out, "shape: {:?}", m.shape)?;
    writeln!(out, "data_type: {}", m.data_type.name())?;
    writeln!(out, "fill_value: {}", m.fill_value.to_json(m.data_type))?;
    writeln!(
        out,
        "chunk grid: {:?} ({:?} chunks)",
        m.chunk_shape,
        m.grid_shape()
    )?;
    if let Some(layout) = m.shard_layout() {
        let s = layout.codec();
        writeln!(out, "shard shape: {:?}", layout.shard_repr().shape)?;
        writeln!(out, "inner chunk shape: {:?}", s.chunk_shape)?;
        writeln!(out, "chunks per shard: {:?}", layout.chunks_per_shard())?;
        writeln!(out, "inner codecs: {}", s.codecs.to_json())?;
        writeln!(out, "index codecs: {}", s.index_codecs.to_json())?;
        let loc = match s.index_location {
            IndexLocation::Start => "start",
            IndexLocation::End => "end",
        };
        writeln!(out, "index: {} bytes at the {loc}", layout.index_size())?;
        writeln!(
            out,
            "partial reads: {}",
            if m.supports_partial_reads() {
                "yes"
            } else {
                "no (codec after sharding)"
            }
        )?;
    } else {
        writeln!(out, "sharded: no")?;
    }
    writeln!(out, "codecs: {}", m.codecs.to_json())?;
    let (mut stored, mut bytes, mut total) = (0u64, 0u64, 0u64);
    for coords in zarrshard::nd::c_order(&m.grid_shape()) {
        total += 1;
        if let Some(size) = array.store().shard_io(&array.shard_key(&coords))?.size()? {
            stored += 1;
            bytes += size;
        }
    }
    writeln!(out, "stored shards: {stored} of {total}, {bytes} bytes")?;
    Ok(())
}

fn inspect(array: &Array<FsStore>, key: &str) -> zarrshard::Result<()> {
    let m = array.metadata();
    let layout = m
        .shard_layout()
        .ok_or_else(|| zarrshard::Error::InvalidArgument("the array is not sharded".into()))?;
    let object = array
        .store()
        .get(key)?
        .ok_or_else(|| zarrshard::Error::InvalidArgument(format!("no shard object `{key}`")))?;
    let shard = m.codecs.decode_bytes_stage(&object, &m.chunk_repr())?;
    let index = ShardIndex::decode_unchecked(layout.index_bytes(&shard)?, &layout)?;
    let bad: std::collections::HashMap<usize, zarrshard::Error> = index
        .entry_errors(&layout, Some(shard.len() as u64))
        .into_iter()
        .collect();
    let mut out = std::io::stdout().lock();
    let loc = match layout.codec().index_location {
        IndexLocation::Start => "start",
        IndexLocation::End => "end",
    };
    write!(
        out,
        "shard {key}: {} bytes, index {} bytes at the {loc}",
        object.len(),
        layout.index_size()
    )?;
    if shard.len() != object.len() {
        write!(
            out,
            " (after undoing the codecs that follow sharding: {} bytes)",
            shard.len()
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:<20} {:>20} {:>20}  state",
        "chunk", "offset", "nbytes"
    )?;
    // Valid entries only, for the summary.
    let mut valid = index.clone();
    let mut stored = 0;
    for i in 0..index.len() {
        let coords = format!(
            "{:?}",
            zarrshard::nd::unravel(i as u64, layout.chunks_per_shard())
        );
        let (offset, nbytes) = index.entry(i);
        if let Some(e) = bad.get(&i) {
            valid.set(i, None);
            writeln!(
                out,
                "{coords:<20} {offset:>20} {nbytes:>20}  BAD: {}",
                one_line(&e.to_string())
            )?;
        } else if index.get(i).is_some() {
            writeln!(out, "{coords:<20} {offset:>20} {nbytes:>20}  stored")?;
            stored += 1;
        } else {
            writeln!(out, "{coords:<20} {:>20} {:>20}  empty", "-", "-")?;
        }
    }
    writeln!(
        out,
        "stored chunks: {stored} of {}, chunk bytes: {}, dead bytes: {}, bad entries: {}",
        index.len(),
        valid.stored().map(|(_, l)| l.nbytes).sum::<u64>(),
        valid.dead_bytes(&layout, shard.len() as u64),
        bad.len()
    )?;
    Ok(())
}
