//! bench/hit_rs.rs - bench/default_path's Rust target: a function called N times.
//!
//!   hit_rs [N] [plain|nop5]
//!
//! plain calls hit_rs::hits::plain, an ordinary entry as rustc -O makes it (movslq %edi,%rax),
//! under its mangled path; nop5 calls hit_rs::hits::nop5, whose first bytes are the 5-byte NOP
//! 0f 1f 44 00 00: an asm! statement first in a frameless leaf (#[patchable_function_entry]
//! is not stable, and would put single-byte NOPs there). bench/default_path checks the bytes.
//! With $BENCH_TARGET_CPU naming a file, it writes its time on the CPU there at its end (the
//! program's share of a hit's cost).

pub mod hits {
    /// An ordinary entry.
    #[inline(never)]
    pub fn plain(x: i32) -> i64 {
        (x as i64) * 3 + 1
    }

    /// A 5-byte-NOP entry.
    #[inline(never)]
    pub fn nop5(x: i32) -> i64 {
        // SAFETY: a NOP: reads and writes nothing.
        unsafe {
            core::arch::asm!(".byte 0x0f, 0x1f, 0x44, 0x00, 0x00", options(nomem, nostack, preserves_flags))
        };
        (x as i64) * 3 + 1
    }
}

/// This process's time on the CPU (ns, /proc/self/schedstat) into the file $BENCH_TARGET_CPU.
fn report_cpu() {
    if let Ok(path) = std::env::var("BENCH_TARGET_CPU") {
        if let Ok(stat) = std::fs::read_to_string("/proc/self/schedstat") {
            if let Some(ns) = stat.split_whitespace().next() {
                let _ = std::fs::write(path, format!("{}\n", ns));
            }
        }
    }
}

/// What the optimiser cannot see through (std::hint::black_box is not in Debian 12's rustc 1.63).
fn opaque<T: Copy>(x: T) -> T {
    unsafe { std::ptr::read_volatile(&x) }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10000);
    let nop = args.get(2).map_or(false, |m| m == "nop5");
    let mut s = 0i64;
    for i in 0..n {
        let x = opaque(i as i32);
        s = s.wrapping_add(if nop { hits::nop5(x) } else { hits::plain(x) });
    }
    report_cpu();
    std::process::exit((s == 42) as i32);
}
