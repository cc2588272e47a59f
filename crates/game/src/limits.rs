//! Resource limits checked where input is parsed, derived from the machine: memory for tables,
//! threads against cores, and fixed maxima for things no sensible run needs more of (search
//! depth, determinized worlds, spec nesting, games in one match, file sizes). Each limit comes
//! with an error that names it, so a typo like `tt=30gb` fails at once instead of aborting the
//! process hours later.

use crate::Error;
use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

/// Deepest bracket nesting in a spec (`playout=(mcts:playout=(...))`).
pub const MAX_SPEC_NESTING: usize = 8;
/// Longest spec string, in bytes.
pub const MAX_SPEC_LEN: usize = 64 * 1024;
/// Most determinized worlds one search samples.
pub const MAX_WORLDS: u32 = 1000;
/// Most games one match (all pairings together) plays: the summary keeps every record in memory.
pub const MAX_GAMES: usize = 1_000_000;
/// Deepest perft.
pub const MAX_PERFT_DEPTH: u32 = 64;
/// Longest time per move: longer is a typo, and deadlines must stay representable.
pub const MAX_MOVE_TIME: Duration = Duration::from_secs(7 * 24 * 3600);
/// Most threads per logical core for any pool (arena workers, search threads).
pub const THREADS_PER_CORE: usize = 4;
/// Largest small text file meeple reads (weights, results).
pub const MAX_TEXT_FILE: u64 = 64 << 20;
/// Longest line in a records file.
pub const MAX_RECORD_LINE: u64 = 16 << 20;

/// Logical cores available to this process.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The most threads a pool may have: [`THREADS_PER_CORE`] per core (more only adds switching).
pub fn max_threads() -> usize {
    cores() * THREADS_PER_CORE
}

/// Checks a thread count against [`max_threads`]; `what` names the option in the error.
pub fn check_threads(what: &str, threads: usize) -> Result<usize, Error> {
    let max = max_threads();
    if threads == 0 || threads > max {
        return Err(Error::Invalid(format!(
            "{what} {threads}: give 1 to {max} ({THREADS_PER_CORE} per core on this machine's {} cores)",
            cores()
        )));
    }
    Ok(threads)
}

/// Physical memory this process may use, in bytes: the smaller of the machine's memory and a
/// cgroup limit, if any (read once). 4 GiB where neither can be read.
pub fn memory() -> u64 {
    static MEMORY: OnceLock<u64> = OnceLock::new();
    *MEMORY.get_or_init(|| {
        let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
            let line = t.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb * 1024)
        });
        let cgroup = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
            .iter()
            .find_map(|p| std::fs::read_to_string(p).ok()?.trim().parse::<u64>().ok());
        match (total, cgroup) {
            (Some(t), Some(c)) => t.min(c),
            (Some(t), None) => t,
            (None, Some(c)) => c,
            (None, None) => 4 << 30,
        }
    })
}

/// The most one table (a transposition table, a search tree) may take: half of [`memory`].
pub fn max_table_bytes() -> u64 {
    memory() / 2
}

static TREE_CAP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);

/// Caps every search tree this process grows at `bytes` (a server shares the machine between
/// many matches; a tournament does not need this). Trees that reach it stop growing and answer
/// with what they have.
pub fn set_tree_cap(bytes: u64) {
    TREE_CAP.store(bytes.max(1 << 16), std::sync::atomic::Ordering::Relaxed);
}

/// The most one search tree may take: [`set_tree_cap`], else half of [`memory`] shared by the cores.
pub fn max_tree_bytes() -> u64 {
    let share = max_table_bytes() / cores() as u64;
    share.min(TREE_CAP.load(std::sync::atomic::Ordering::Relaxed))
}

/// Bytes as people read them: `512 KB`, `16.0 MB`, `23.4 GB`.
pub fn format_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.1} GB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.1} MB", b / (1u64 << 20) as f64)
    } else {
        format!("{} KB", bytes >> 10)
    }
}

/// Reads a text file of at most `limit` bytes; `what` names it in errors (`weights file`). A
/// device that never ends (`/dev/zero`) or a huge file is refused, not read forever.
pub fn read_text(path: &Path, limit: u64, what: &str) -> Result<String, Error> {
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| Error::Invalid(format!("cannot read {what} '{shown}': {e}")))?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::Invalid(format!("cannot read {what} '{shown}': {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(Error::Invalid(format!("{what} '{shown}' is larger than {}: not a {what}", format_bytes(limit))));
    }
    String::from_utf8(bytes).map_err(|_| Error::Invalid(format!("{what} '{shown}' is not UTF-8 text")))
}

/// One line of a file read by [`read_lines`].
#[derive(Clone, Copy, Debug)]
pub struct Line<'a> {
    /// Line number, from 1.
    pub number: usize,
    /// The text without its line ending.
    pub text: &'a str,
    /// Bytes the line takes in the file, line ending included.
    pub bytes: u64,
    /// Whether it ended with a newline (a last line without one may have been cut off
    /// mid-write).
    pub ended: bool,
}

/// The first two bytes of every gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Whether the file at `path` is gzip-compressed (its first two bytes are gzip's magic).
pub fn is_gzip(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 2];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && magic == GZIP_MAGIC
}

/// The text of the file at `path`, to read from the start: a gzip-compressed file is read as
/// the text it holds. `what` names the file in the error.
pub fn open_text(path: &Path, what: &str) -> Result<Box<dyn std::io::BufRead>, Error> {
    use std::io::BufRead;
    let io = |e: std::io::Error| Error::Invalid(format!("cannot read {what} '{}': {e}", path.display()));
    let mut plain = std::io::BufReader::new(std::fs::File::open(path).map_err(io)?);
    Ok(if plain.fill_buf().map_err(io)?.starts_with(&GZIP_MAGIC) {
        Box::new(std::io::BufReader::new(flate2::bufread::MultiGzDecoder::new(plain)))
    } else {
        Box::new(plain)
    })
}

/// Reads a file of lines (JSON lines) one at a time, each at most `line_limit` bytes, calling
/// `line` with each; memory stays bounded whatever the file holds. A gzip-compressed file
/// (records and metrics logs are often kept so) is read as the text it holds; its lines'
/// `bytes` are then counted in that text.
pub fn read_lines(
    path: &Path,
    line_limit: u64,
    what: &str,
    mut line: impl FnMut(Line<'_>) -> Result<(), Error>,
) -> Result<(), Error> {
    use std::io::BufRead;
    let shown = path.display();
    let io = |e: std::io::Error| Error::Invalid(format!("cannot read {what} '{shown}': {e}"));
    let mut reader = open_text(path, what)?;
    let mut buf = Vec::new();
    for n in 1.. {
        buf.clear();
        let read = (&mut reader).take(line_limit + 1).read_until(b'\n', &mut buf).map_err(io)?;
        if read == 0 {
            break;
        }
        let ended = buf.last() == Some(&b'\n');
        if !ended && buf.len() as u64 > line_limit {
            return Err(Error::Invalid(format!(
                "{what} '{shown}' line {n} is longer than {}: not a {what}",
                format_bytes(line_limit)
            )));
        }
        let text = std::str::from_utf8(&buf)
            .map_err(|_| Error::Invalid(format!("{what} '{shown}' line {n} is not UTF-8 text")))?;
        line(Line { number: n, text: text.trim_end_matches(['\n', '\r']), bytes: read as u64, ended })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_limits_are_sane() {
        assert!(cores() >= 1);
        assert_eq!(max_threads(), cores() * THREADS_PER_CORE);
        assert!(memory() >= 1 << 20);
        assert!(check_threads("--threads", 1).is_ok());
        let err = check_threads("--threads", 65535).unwrap_err().to_string();
        assert!(err.contains("--threads 65535: give 1 to"), "{err}");
        assert!(check_threads("--threads", 0).is_err());
    }

    #[test]
    fn endless_and_huge_files_are_refused() {
        if Path::new("/dev/zero").exists() {
            let err = read_text(Path::new("/dev/zero"), 1024, "weights file").unwrap_err().to_string();
            assert!(err.contains("larger than 1 KB"), "{err}");
            let err = read_lines(Path::new("/dev/zero"), 1024, "records file", |_| Ok(())).unwrap_err();
            assert!(err.to_string().contains("line 1 is longer than 1 KB"), "{err}");
        }
        let err = read_text(Path::new("/no/such/file"), 1024, "weights file").unwrap_err().to_string();
        assert!(err.starts_with("cannot read weights file '/no/such/file'"), "{err}");
    }

    #[test]
    fn lines_are_read_with_their_endings() {
        let dir = std::env::temp_dir().join(format!("meeple-limits-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lines.txt");
        std::fs::write(&path, "a\nbb\r\nccc").unwrap();
        let mut seen = Vec::new();
        read_lines(&path, 100, "file", |l| {
            seen.push((l.number, l.text.to_string(), l.bytes, l.ended));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, vec![(1, "a".into(), 2, true), (2, "bb".into(), 4, true), (3, "ccc".into(), 3, false)]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn gzip_compressed_lines_are_read_as_their_text() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("meeple-limits-gz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lines.jsonl.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"{\"a\":1}\n{\"b\":2}\n").unwrap();
        std::fs::write(&path, gz.finish().unwrap()).unwrap();
        assert!(is_gzip(&path));
        let mut seen = Vec::new();
        read_lines(&path, 100, "file", |l| {
            seen.push(l.text.to_string());
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, vec!["{\"a\":1}", "{\"b\":2}"]);
        // A file that only starts like gzip is an error naming the file, not a panic.
        std::fs::write(&path, [0x1f, 0x8b, 0, 1, 2]).unwrap();
        let err = read_lines(&path, 100, "records file", |_| Ok(())).unwrap_err().to_string();
        assert!(err.starts_with("cannot read records file"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bytes_read_well() {
        assert_eq!(format_bytes(512 << 10), "512 KB");
        assert_eq!(format_bytes(16 << 20), "16.0 MB");
        assert_eq!(format_bytes(3 << 30), "3.0 GB");
    }
}
