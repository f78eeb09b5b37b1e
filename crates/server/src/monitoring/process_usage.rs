//! The server process and machine numbers monitoring reports, read from Linux's `/proc` (zeros elsewhere).

/// Clock ticks per second of `/proc/*/stat` times (USER_HZ, 100 on every Linux we run on).
const TICKS_PER_SECOND: f64 = 100.0;

/// One reading of the process and the machine.
#[derive(Debug, Clone, Default)]
pub struct ProcessUsage {
    /// Resident memory of the process.
    pub resident_bytes: u64,
    /// Threads of the process.
    pub threads: u64,
    /// CPU time the process used (user and system), in seconds.
    pub cpu_seconds: f64,
    /// CPU time the whole machine used (all but idle and I/O wait), in seconds summed over cores.
    pub machine_busy_seconds: f64,
    /// CPU time the machine spent waiting for I/O, in seconds summed over cores.
    pub machine_io_wait_seconds: f64,
    /// Installed memory.
    pub memory_total_bytes: u64,
    /// Memory available to new work without swapping.
    pub memory_available_bytes: u64,
    /// Swap configured.
    pub swap_total_bytes: u64,
    /// Swap in use.
    pub swap_used_bytes: u64,
    /// Dirty page-cache memory waiting to be written.
    pub dirty_bytes: u64,
    /// Cores this process may run on.
    pub processor_count: u64,
}

impl ProcessUsage {
    /// Reads `/proc` now.
    pub fn read() -> ProcessUsage {
        let mut usage = ProcessUsage {
            processor_count: std::thread::available_parallelism().map(|n| n.get() as u64).unwrap_or(1),
            ..ProcessUsage::default()
        };
        if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
            usage.resident_bytes = kib_field(&status, "VmRSS:");
            usage.threads = number_field(&status, "Threads:");
        }
        if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
            usage.cpu_seconds = process_cpu_ticks(&stat) / TICKS_PER_SECOND;
        }
        if let Ok(stat) = std::fs::read_to_string("/proc/stat") {
            let (busy, io_wait) = machine_cpu_ticks(&stat);
            usage.machine_busy_seconds = busy / TICKS_PER_SECOND;
            usage.machine_io_wait_seconds = io_wait / TICKS_PER_SECOND;
        }
        if let Ok(meminfo) = std::fs::read_to_string("/proc/meminfo") {
            usage.memory_total_bytes = kib_field(&meminfo, "MemTotal:");
            usage.memory_available_bytes = kib_field(&meminfo, "MemAvailable:");
            usage.swap_total_bytes = kib_field(&meminfo, "SwapTotal:");
            usage.swap_used_bytes = usage.swap_total_bytes.saturating_sub(kib_field(&meminfo, "SwapFree:"));
            usage.dirty_bytes = kib_field(&meminfo, "Dirty:");
        }
        usage
    }
}

fn number_field(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn kib_field(text: &str, name: &str) -> u64 {
    number_field(text, name) * 1024
}

/// utime + stime of `/proc/self/stat`: fields 14 and 15, counted after the `(comm)` that may hold spaces.
fn process_cpu_ticks(stat: &str) -> f64 {
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // `after_name` starts at field 3 (state), so utime (14) is at index 11.
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    field(11) + field(12)
}

/// The `cpu` line of `/proc/stat`: busy ticks (everything but idle and iowait) and iowait ticks.
fn machine_cpu_ticks(stat: &str) -> (f64, f64) {
    let Some(line) = stat.lines().find(|l| l.starts_with("cpu ")) else { return (0.0, 0.0) };
    let values: Vec<f64> = line.split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
    let total: f64 = values.iter().take(8).sum();
    let idle = values.get(3).copied().unwrap_or(0.0);
    let io_wait = values.get(4).copied().unwrap_or(0.0);
    (total - idle - io_wait, io_wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_formats() {
        let stat = "1234 (corvid (x) y) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0";
        assert_eq!(process_cpu_ticks(stat), 300.0);
        let machine = "cpu  100 0 50 1000 25 0 5 0 0 0\ncpu0 1 2 3";
        assert_eq!(machine_cpu_ticks(machine), (155.0, 25.0));
        assert_eq!(kib_field("VmRSS:\t  2048 kB\nThreads: 7\n", "VmRSS:"), 2 * 1024 * 1024);
        assert_eq!(number_field("VmRSS:\t  2048 kB\nThreads:\t7\n", "Threads:"), 7);
    }

    #[test]
    fn reads_this_process() {
        let usage = ProcessUsage::read();
        if cfg!(target_os = "linux") {
            assert!(usage.resident_bytes > 0 && usage.threads > 0 && usage.memory_total_bytes > 0);
        }
    }
}
