//! Starting a file's writeback early, so that a later sync of many files waits for little.

use std::fs::File;

/// Asks the kernel to start writing the file's dirty pages back now, without waiting (Linux; elsewhere the
/// later sync does all the work).
pub(crate) fn start_writeback(file: &File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain syscall on an open descriptor; failing only means the later sync does the work.
        #[allow(unsafe_code)]
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}
