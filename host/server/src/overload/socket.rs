//! What the kernel says about a socket, without reading from it: how long its bytes waited
//! unread, how many wait, and whether the request waiting is the health check. The only
//! `unsafe` of the overload module, each call with its own safety argument; other platforms
//! answer that the kernel does not say.

use std::time::Duration;

/// The time since the TCP socket `fd` last received data, by the kernel's clock (`TCP_INFO`,
/// `tcpi_last_data_recv`, in milliseconds); none if the kernel does not say.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub(super) fn unread_for(fd: std::os::fd::RawFd) -> Option<Duration> {
    let mut info = std::mem::MaybeUninit::<libc::tcp_info>::zeroed();
    let size = std::mem::size_of::<libc::tcp_info>();
    let mut len = libc::socklen_t::try_from(size).ok()?;
    // SAFETY: `info` is a writable buffer of `len` bytes that outlives the call; the kernel
    // writes at most `len` bytes to it and says how many in `len`. A descriptor that is not a
    // TCP socket fails the call and is answered with none.
    let read = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            info.as_mut_ptr().cast(),
            &raw mut len,
        )
    };
    let filled = usize::try_from(len).ok()?;
    if read != 0 || filled < std::mem::offset_of!(libc::tcp_info, tcpi_last_data_recv) + 4 {
        return None;
    }
    // SAFETY: zeroed, then filled by the kernel: every field is an integer.
    let info = unsafe { info.assume_init() };
    Some(Duration::from_millis(u64::from(info.tcpi_last_data_recv)))
}

#[cfg(not(target_os = "linux"))]
pub(super) fn unread_for(_fd: std::os::fd::RawFd) -> Option<Duration> {
    None
}

/// How many bytes wait unread on the socket `fd` (`FIONREAD`); 0 if the kernel does not say.
#[cfg(unix)]
#[allow(unsafe_code)]
pub(super) fn readable_bytes(fd: std::os::fd::RawFd) -> usize {
    let mut count: libc::c_int = 0;
    // SAFETY: FIONREAD writes one `int` through the pointer, which is valid for the call; a
    // descriptor that is not a socket fails the call and is answered with 0.
    let read = unsafe { libc::ioctl(fd, libc::FIONREAD, &raw mut count) };
    if read == 0 {
        usize::try_from(count).unwrap_or(0)
    } else {
        0
    }
}

/// Whether the request waiting on the socket `fd` is the health check (`GET /health` or
/// `HEAD /health`), by a look at its first bytes that leaves them for the reader.
#[cfg(unix)]
#[allow(unsafe_code)]
pub(super) fn asks_for_health(fd: std::os::fd::RawFd) -> bool {
    let mut head = [0u8; 13];
    // SAFETY: `recv` writes at most `head.len()` bytes into `head`, which is valid for the
    // call; MSG_PEEK leaves them in the socket and MSG_DONTWAIT keeps the call from waiting.
    let read = unsafe {
        libc::recv(
            fd,
            head.as_mut_ptr().cast(),
            head.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    let Ok(read) = usize::try_from(read) else {
        return false;
    };
    let head = &head[..read];
    [&b"GET /health"[..], b"HEAD /health"].iter().any(|line| {
        head.strip_prefix(*line)
            .is_some_and(|rest| rest.first().is_none_or(|b| matches!(b, b' ' | b'?')))
    })
}

#[cfg(not(unix))]
pub(super) fn asks_for_health(_fd: std::os::fd::RawFd) -> bool {
    false
}

#[cfg(not(unix))]
pub(super) fn readable_bytes(_fd: std::os::fd::RawFd) -> usize {
    0
}
