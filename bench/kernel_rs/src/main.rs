//! bench_kernel_rs — one measured operation of delta-kernel-rs (the `delta_kernel` crate with its
//! default engine) per process, for bench/snapshot_load.py (P1) and bench/scan_p2p3.py (P2/P3).
//!
//!   bench_kernel_rs files TABLE
//!       Snapshot::builder_for(TABLE).build + scan_metadata() over the latest snapshot, every
//!       selected file visited (path and size read): log replay and file listing, like
//!       `delta-rs get_add_actions` and `dk files` in P1.
//!   bench_kernel_rs scan TABLE THREADS [LO HI]
//!       Snapshot + Scan::execute over every column, batches dropped as they come. With LO HI:
//!       the predicate l_orderkey >= LO AND l_orderkey < HI goes to the kernel (file skipping by
//!       statistics) and the rows of the files read are filtered to it with arrow's filter
//!       kernel, so the answer is the query's rows as for every other system. THREADS sizes
//!       the Tokio runtime the engine runs on (workers and blocking pool).
//!
//! Prints one JSON line {"seconds", "rows", "rss_base_kb", "cpu_seconds", ...} as
//! bench/workers.py does (the clock starts after process set-up, before the table is opened).

use std::sync::Arc;
use std::time::Instant;

use delta_kernel::arrow::array::{Array, BooleanArray, Int64Array};
use delta_kernel::arrow::compute::kernels::cmp::{gt_eq, lt};
use delta_kernel::arrow::compute::{and, filter_record_batch};
use delta_kernel::engine::arrow_data::EngineDataArrowExt;
use delta_kernel::expressions::{column_expr, Expression, Predicate};
use delta_kernel::object_store::local::LocalFileSystem;
use delta_kernel::scan::state::ScanFile;
use delta_kernel::snapshot::Snapshot;
use delta_kernel_default_engine::executor::tokio::TokioMultiThreadExecutor;
use delta_kernel_default_engine::DefaultEngine;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn usage() -> ! {
    eprintln!("usage: bench_kernel_rs files TABLE | scan TABLE THREADS [LO HI]");
    std::process::exit(2)
}

fn rusage() -> (f64, i64) {
    // (user + system CPU seconds, peak RSS in KiB) of this process
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime) + tv(ru.ru_stime), ru.ru_maxrss as i64)
}

fn table_url(path: &str) -> Res<url::Url> {
    let abs = std::fs::canonicalize(path)?;
    url::Url::from_directory_path(&abs).map_err(|_| format!("bad table path {path}").into())
}

fn engine(threads: usize) -> Res<Arc<DefaultEngine<TokioMultiThreadExecutor>>> {
    // the engine's own runtime: `threads` workers, at most `threads` blocking-pool threads
    let n = threads.max(1);
    let exec = Arc::new(TokioMultiThreadExecutor::new_owned_runtime(Some(n), Some(n))?);
    let eng = DefaultEngine::builder(Arc::new(LocalFileSystem::new()))
        .with_task_executor(exec)
        .build();
    Ok(Arc::new(eng))
}

fn emit(t0: Instant, cpu0: f64, base_kb: i64, rows: u64, extra: &str) {
    let secs = t0.elapsed().as_secs_f64();
    let (cpu, _) = rusage();
    println!(
        "{{\"seconds\": {secs}, \"rows\": {rows}, \"rss_base_kb\": {base_kb}, \"cpu_seconds\": {}{extra}}}",
        cpu - cpu0
    );
}

fn files(table: &str) -> Res<()> {
    let url = table_url(table)?;
    let eng = engine(1)?;
    let (cpu0, base) = rusage();
    let t0 = Instant::now();
    let snap = Snapshot::builder_for(url.as_str()).build(eng.as_ref())?;
    let scan = snap.scan_builder().build()?;
    #[derive(Default)]
    struct Acc {
        n: u64,
        bytes: i64,
        path_len: u64,
    }
    fn visit(acc: &mut Acc, f: ScanFile) {
        acc.n += 1;
        acc.bytes += f.size;
        acc.path_len += f.path.len() as u64;
    }
    let mut acc = Acc::default();
    for meta in scan.scan_metadata(eng.as_ref())? {
        acc = meta?.visit_scan_files(acc, visit)?;
    }
    emit(t0, cpu0, base, acc.n, &format!(", \"bytes\": {}, \"path_chars\": {}", acc.bytes, acc.path_len));
    Ok(())
}

fn scan(table: &str, threads: usize, range: Option<(i64, i64)>) -> Res<()> {
    let url = table_url(table)?;
    let eng = engine(threads)?;
    let (cpu0, base) = rusage();
    let t0 = Instant::now();
    let snap = Snapshot::builder_for(url.as_str()).build(eng.as_ref())?;
    let mut sb = snap.scan_builder();
    if let Some((lo, hi)) = range {
        let p = Predicate::and(
            Predicate::ge(column_expr!("l_orderkey"), Expression::literal(lo)),
            Predicate::lt(column_expr!("l_orderkey"), Expression::literal(hi)),
        );
        sb = sb.with_predicate(Arc::new(p));
    }
    let scan = sb.build()?;
    let mut rows: u64 = 0;
    for data in scan.execute(eng.clone())? {
        let batch = data.try_into_record_batch()?;
        match range {
            None => rows += batch.num_rows() as u64,
            Some((lo, hi)) => {
                let k = batch
                    .column_by_name("l_orderkey")
                    .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
                    .ok_or("l_orderkey is not an int64 column")?;
                let lo_a = Int64Array::new_scalar(lo);
                let hi_a = Int64Array::new_scalar(hi);
                let mask: BooleanArray = and(&gt_eq(k, &lo_a)?, &lt(k, &hi_a)?)?;
                rows += filter_record_batch(&batch, &mask)?.num_rows() as u64;
            }
        }
    }
    emit(t0, cpu0, base, rows, "");
    Ok(())
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let r = match a.get(1).map(String::as_str) {
        Some("files") if a.len() == 3 => files(&a[2]),
        Some("scan") if a.len() == 4 || a.len() == 6 => {
            let n: usize = a[3].parse().unwrap_or_else(|_| usage());
            let range = if a.len() == 6 {
                Some((a[4].parse().unwrap_or_else(|_| usage()), a[5].parse().unwrap_or_else(|_| usage())))
            } else {
                None
            };
            scan(&a[2], n, range)
        }
        _ => usage(),
    };
    if let Err(e) = r {
        eprintln!("bench_kernel_rs: {e}");
        std::process::exit(1);
    }
}
