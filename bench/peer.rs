//! A benchmark peer in a child process (`peers.py --serve`, `zarrs-shipped-peer --serve`),
//! driven one sample at a time over a line protocol: one JSON request per line on its stdin,
//! one JSON reply per line on its stdout (`{"ok": true, ...}` or `{"ok": false, "error":
//! "..."}`). Shared by `benches/compare.rs` and `examples/scaling.rs`, which add their own
//! `run` requests.
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

/// A started peer; a transport failure marks it dead, so later calls fail at once.
pub struct Peer {
    pub name: &'static str,
    pub child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    dead: Option<String>,
}

impl Peer {
    /// Start `program ARGS… --serve` and send it the manifest.
    pub fn start(
        name: &'static str,
        program: &Path,
        args: &[&Path],
        manifest: &Value,
    ) -> Result<Peer, String> {
        let mut child = Command::new(program)
            .args(args)
            .arg("--serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut p = Peer {
            name,
            child,
            stdin,
            stdout,
            dead: None,
        };
        p.call(&json!({"op": "init", "manifest": manifest}))?;
        Ok(p)
    }

    /// Send one request and wait for its reply; the reply's `error` when it is not `ok`.
    pub fn call(&mut self, req: &Value) -> Result<Value, String> {
        if let Some(e) = &self.dead {
            return Err(e.clone());
        }
        let res = (|| {
            writeln!(self.stdin, "{req}").map_err(|e| e.to_string())?;
            self.stdin.flush().map_err(|e| e.to_string())?;
            let mut line = String::new();
            if self
                .stdout
                .read_line(&mut line)
                .map_err(|e| e.to_string())?
                == 0
            {
                return Err(format!("{} exited", self.name));
            }
            serde_json::from_str::<Value>(&line).map_err(|e| e.to_string())
        })();
        match res {
            Ok(v) if v["ok"] == json!(true) => Ok(v),
            Ok(v) => Err(v["error"].as_str().unwrap_or("peer error").to_string()),
            Err(e) => {
                self.dead = Some(e.clone());
                Err(e)
            }
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "{}", json!({"op": "quit"}));
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}
