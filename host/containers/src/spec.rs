//! The OCI runtime spec (`config.json`) a container app runs under: generated here from the
//! app's limits and the image's run configuration, never taken from the image.
//!
//! - its own user, PID, mount, network, IPC, UTS and cgroup namespaces; the user namespace maps
//!   the container's ids 0..[`IdShift::size`] onto the host's from [`IdShift::base`] (the
//!   image's files were shifted the same way when they were unpacked);
//! - a read-only root filesystem, a writable `tmpfs` at `/tmp` of [`RunSpec::tmpfs_mb`], and a
//!   fresh `/proc`, `/dev` and read-only `/sys`;
//! - no capabilities in any set, `noNewPrivileges`, and a seccomp filter that refuses (with
//!   `EPERM`) the system calls a service never needs and that widen what a process in a
//!   container can reach: mounts, namespaces, kernel modules and keyrings, tracing other
//!   processes, BPF, perf events, clock and swap changes, reboot ([`DENIED_SYSCALLS`]);
//! - `runtime.resources.memory_mb` as the memory limit with no swap beyond it, `cpu_cores` as a
//!   CFS quota, and a limit on the number of processes.
//!
//! The network namespace has only its loopback interface: the container reaches nothing by
//! itself. What it may reach, the host offers on that loopback (crate::runc).

use std::collections::HashSet;
use std::path::PathBuf;

use oci_spec::runtime::{
    Arch, LinuxBuilder, LinuxCapabilitiesBuilder, LinuxCpuBuilder, LinuxIdMappingBuilder,
    LinuxMemoryBuilder, LinuxNamespaceBuilder, LinuxNamespaceType, LinuxPidsBuilder,
    LinuxResourcesBuilder, LinuxSeccompAction, LinuxSeccompBuilder, LinuxSyscallBuilder,
    MountBuilder, PosixRlimitBuilder, PosixRlimitType, ProcessBuilder, RootBuilder, Spec,
    SpecBuilder, UserBuilder,
};

use crate::unpack::IdShift;

/// System calls the seccomp filter refuses with `EPERM`.
pub const DENIED_SYSCALLS: &[&str] = &[
    "acct",
    "add_key",
    "bpf",
    "clock_adjtime",
    "clock_settime",
    "delete_module",
    "finit_module",
    "fsconfig",
    "fsmount",
    "fsopen",
    "fspick",
    "init_module",
    "ioperm",
    "iopl",
    "kcmp",
    "kexec_file_load",
    "kexec_load",
    "keyctl",
    "lookup_dcookie",
    "mount",
    "mount_setattr",
    "move_mount",
    "name_to_handle_at",
    "open_by_handle_at",
    "open_tree",
    "perf_event_open",
    "pivot_root",
    "process_vm_readv",
    "process_vm_writev",
    "ptrace",
    "quotactl",
    "reboot",
    "request_key",
    "setns",
    "settimeofday",
    "swapoff",
    "swapon",
    "syslog",
    "umount2",
    "unshare",
    "uselib",
    "userfaultfd",
];

/// What one container runs with.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The root filesystem (read-only).
    pub rootfs: PathBuf,
    /// The program and its arguments.
    pub args: Vec<String>,
    /// `KEY=value` pairs.
    pub env: Vec<String>,
    /// The working directory.
    pub cwd: String,
    /// The container's user and group ids.
    pub uid: u32,
    /// The container's group id.
    pub gid: u32,
    /// The host name inside.
    pub hostname: String,
    /// `runtime.resources.memory_mb`.
    pub memory_mb: u32,
    /// `runtime.resources.cpu_cores`.
    pub cpu_cores: f64,
    /// The most processes and threads.
    pub pids: i64,
    /// The size of the writable `/tmp`.
    pub tmpfs_mb: u32,
    /// The id mapping of the user namespace.
    pub shift: IdShift,
    /// Files of the host bound read-only into the container (`/etc/hosts`).
    pub binds: Vec<(PathBuf, String)>,
}

/// The CFS period the quota is counted in, in µs.
const CPU_PERIOD_US: u64 = 100_000;

/// The runtime spec of `run`.
///
/// # Errors
///
/// A message when a part cannot be built (a value out of the spec's range).
pub fn runtime_spec(run: &RunSpec) -> Result<Spec, String> {
    let e = |e: oci_spec::OciSpecError| format!("building the runtime spec failed: {e}");
    let none = HashSet::new();
    let capabilities = LinuxCapabilitiesBuilder::default()
        .bounding(none.clone())
        .effective(none.clone())
        .inheritable(none.clone())
        .permitted(none.clone())
        .ambient(none)
        .build()
        .map_err(e)?;
    let process = ProcessBuilder::default()
        .terminal(false)
        .user(
            UserBuilder::default()
                .uid(run.uid)
                .gid(run.gid)
                .build()
                .map_err(e)?,
        )
        .args(run.args.clone())
        .env(run.env.clone())
        .cwd(run.cwd.clone())
        .capabilities(capabilities)
        .no_new_privileges(true)
        .rlimits(vec![
            PosixRlimitBuilder::default()
                .typ(PosixRlimitType::RlimitNofile)
                .hard(4096u64)
                .soft(4096u64)
                .build()
                .map_err(e)?,
        ])
        .build()
        .map_err(e)?;
    let mount = |destination: &str, typ: &str, source: &str, options: &[&str]| {
        MountBuilder::default()
            .destination(destination)
            .typ(typ)
            .source(source)
            .options(options.iter().map(|o| (*o).to_owned()).collect::<Vec<_>>())
            .build()
            .map_err(e)
    };
    let tmp_size = format!("size={}m", run.tmpfs_mb);
    let mut mounts = vec![
        mount("/proc", "proc", "proc", &["nosuid", "noexec", "nodev"])?,
        mount(
            "/dev",
            "tmpfs",
            "tmpfs",
            &["nosuid", "strictatime", "mode=755", "size=65536k"],
        )?,
        mount(
            "/dev/pts",
            "devpts",
            "devpts",
            &[
                "nosuid",
                "noexec",
                "newinstance",
                "ptmxmode=0666",
                "mode=0620",
            ],
        )?,
        mount(
            "/dev/shm",
            "tmpfs",
            "shm",
            &["nosuid", "noexec", "nodev", "mode=1777", "size=16m"],
        )?,
        mount(
            "/dev/mqueue",
            "mqueue",
            "mqueue",
            &["nosuid", "noexec", "nodev"],
        )?,
        mount(
            "/sys",
            "sysfs",
            "sysfs",
            &["nosuid", "noexec", "nodev", "ro"],
        )?,
        mount(
            "/tmp",
            "tmpfs",
            "tmpfs",
            &["nosuid", "nodev", "mode=1777", &tmp_size],
        )?,
    ];
    for (source, destination) in &run.binds {
        mounts.push(mount(
            destination,
            "bind",
            &source.to_string_lossy(),
            &["bind", "ro", "nosuid", "nodev", "noexec"],
        )?);
    }
    let ns = |typ| LinuxNamespaceBuilder::default().typ(typ).build().map_err(e);
    let namespaces = vec![
        ns(LinuxNamespaceType::User)?,
        ns(LinuxNamespaceType::Pid)?,
        ns(LinuxNamespaceType::Mount)?,
        ns(LinuxNamespaceType::Network)?,
        ns(LinuxNamespaceType::Ipc)?,
        ns(LinuxNamespaceType::Uts)?,
        ns(LinuxNamespaceType::Cgroup)?,
    ];
    let mapping = LinuxIdMappingBuilder::default()
        .container_id(0u32)
        .host_id(run.shift.base)
        .size(run.shift.size)
        .build()
        .map_err(e)?;
    let bytes = i64::from(run.memory_mb) * 1024 * 1024;
    let quota = (run.cpu_cores * CPU_PERIOD_US as f64).round() as i64;
    let resources = LinuxResourcesBuilder::default()
        .memory(
            LinuxMemoryBuilder::default()
                .limit(bytes)
                .swap(bytes)
                .build()
                .map_err(e)?,
        )
        .cpu(
            LinuxCpuBuilder::default()
                .quota(quota.max(1_000))
                .period(CPU_PERIOD_US)
                .build()
                .map_err(e)?,
        )
        .pids(
            LinuxPidsBuilder::default()
                .limit(run.pids)
                .build()
                .map_err(e)?,
        )
        .build()
        .map_err(e)?;
    let seccomp = LinuxSeccompBuilder::default()
        .default_action(LinuxSeccompAction::ScmpActAllow)
        .architectures(vec![
            Arch::ScmpArchX86_64,
            Arch::ScmpArchX86,
            Arch::ScmpArchX32,
        ])
        .syscalls(vec![
            LinuxSyscallBuilder::default()
                .names(
                    DENIED_SYSCALLS
                        .iter()
                        .map(|s| (*s).to_owned())
                        .collect::<Vec<_>>(),
                )
                .action(LinuxSeccompAction::ScmpActErrno)
                .errno_ret(1u32)
                .build()
                .map_err(e)?,
        ])
        .build()
        .map_err(e)?;
    let defaults = oci_spec::runtime::Linux::default();
    let linux = LinuxBuilder::default()
        .uid_mappings(vec![mapping])
        .gid_mappings(vec![mapping])
        .namespaces(namespaces)
        .resources(resources)
        .seccomp(seccomp)
        .masked_paths(defaults.masked_paths().clone().unwrap_or_default())
        .readonly_paths(defaults.readonly_paths().clone().unwrap_or_default())
        .build()
        .map_err(e)?;
    SpecBuilder::default()
        .version("1.0.2-dev")
        .root(
            RootBuilder::default()
                .path(run.rootfs.clone())
                .readonly(true)
                .build()
                .map_err(e)?,
        )
        .hostname(run.hostname.clone())
        .process(process)
        .mounts(mounts)
        .linux(linux)
        .build()
        .map_err(e)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_spec_holds_the_limits_and_drops_every_privilege() {
        let spec = runtime_spec(&RunSpec {
            rootfs: "/images/x/rootfs".into(),
            args: vec!["/app".into()],
            env: vec!["PORT=8080".into()],
            cwd: "/".into(),
            uid: 0,
            gid: 0,
            hostname: "invoices".into(),
            memory_mb: 128,
            cpu_cores: 0.5,
            pids: 64,
            tmpfs_mb: 16,
            shift: IdShift {
                base: 100_000,
                size: 65_536,
            },
            binds: Vec::new(),
        })
        .unwrap();
        let json = serde_json::to_value(&spec).unwrap();
        let linux = &json["linux"];
        assert_eq!(linux["resources"]["memory"]["limit"], 128 * 1024 * 1024);
        assert_eq!(linux["resources"]["memory"]["swap"], 128 * 1024 * 1024);
        assert_eq!(linux["resources"]["cpu"]["quota"], 50_000);
        assert_eq!(linux["resources"]["pids"]["limit"], 64);
        assert_eq!(linux["uidMappings"][0]["hostID"], 100_000);
        let types: Vec<&str> = linux["namespaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["type"].as_str().unwrap())
            .collect();
        for t in ["user", "pid", "mount", "network"] {
            assert!(types.contains(&t), "{t} in {types:?}");
        }
        assert_eq!(json["root"]["readonly"], true);
        assert_eq!(json["process"]["noNewPrivileges"], true);
        assert_eq!(
            json["process"]["capabilities"]["bounding"],
            serde_json::json!([])
        );
        let denied = &linux["seccomp"]["syscalls"][0]["names"];
        assert!(denied.as_array().unwrap().iter().any(|n| n == "mount"));
    }
}
