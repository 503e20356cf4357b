//! Sockets inside a container's network namespace, made by the host.
//!
//! A container's network namespace has only its loopback interface. The host reaches the app's
//! port, and offers the container its egress proxy and the platform, through sockets it makes
//! inside that namespace: one thread per container enters it (`setns`) and makes the sockets
//! it is asked for; a socket keeps the namespace it was made in whichever thread uses it, so
//! the host's tasks then read and write them as any other. Nothing is published on an
//! interface of the machine, and the container cannot reach the host's network.

use std::fs::File;
use std::io;
use std::sync::mpsc;

use nix::sched::CloneFlags;

type Job = Box<dyn FnOnce() + Send>;

/// A thread inside one network namespace.
#[derive(Debug)]
pub(crate) struct NetNs {
    jobs: mpsc::Sender<Job>,
}

impl NetNs {
    /// Enters the network namespace of process `pid`.
    pub(crate) fn of_process(pid: u32) -> io::Result<NetNs> {
        let file = File::open(format!("/proc/{pid}/ns/net"))?;
        let (jobs, rx) = mpsc::channel::<Job>();
        let (ready, entered) = mpsc::channel();
        std::thread::Builder::new()
            .name(format!("netns-{pid}"))
            .spawn(move || {
                let result =
                    nix::sched::setns(&file, CloneFlags::CLONE_NEWNET).map_err(io::Error::from);
                let ok = result.is_ok();
                let _ = ready.send(result);
                drop(file);
                if ok {
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                }
            })?;
        entered
            .recv()
            .map_err(|_| io::Error::other("the namespace thread stopped"))??;
        Ok(NetNs { jobs })
    }

    async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.jobs
            .send(Box::new(move || {
                let _ = tx.send(job());
            }))
            .map_err(|_| io::Error::other("the namespace thread stopped"))?;
        rx.await
            .map_err(|_| io::Error::other("the namespace thread stopped"))?
    }

    /// A connection to `127.0.0.1:port` inside the namespace.
    pub(crate) async fn connect(&self, port: u16) -> io::Result<tokio::net::TcpStream> {
        let stream = self
            .run(move || {
                let s = std::net::TcpStream::connect(("127.0.0.1", port))?;
                s.set_nonblocking(true)?;
                s.set_nodelay(true)?;
                Ok(s)
            })
            .await?;
        tokio::net::TcpStream::from_std(stream)
    }

    /// A listener on `127.0.0.1:port` inside the namespace.
    pub(crate) async fn listen(&self, port: u16) -> io::Result<tokio::net::TcpListener> {
        let listener = self
            .run(move || {
                let l = std::net::TcpListener::bind(("127.0.0.1", port))?;
                l.set_nonblocking(true)?;
                Ok(l)
            })
            .await?;
        tokio::net::TcpListener::from_std(listener)
    }
}
