"""Running the zarrshard command from the Python test harnesses (interop, legacy): one process
group per run, killed whole on timeout; a crash or signal is a failure with a readable reason.
"""
import os
import signal
import subprocess
import tempfile


def describe_exit(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


def squash(text: str, limit: int = 400) -> str:
    """One line; keep the end, where error chains say what went wrong."""
    text = " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())
    return text if len(text) <= limit else "..." + text[-limit:]


def run_with_timeout(cmd, timeout):
    """Run cmd in its own process group; on timeout kill the whole group (so grandchildren
    holding the pipes cannot hang us) and raise TimeoutExpired. Return (returncode, stderr
    text); stdout is discarded."""
    with tempfile.TemporaryFile() as err_file:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=err_file, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            raise
        finally:
            if proc.returncode is None:
                proc.kill()
                proc.wait()
        try:  # reap anything the tool left running in its group
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        err_file.seek(0)
        return proc.returncode, err_file.read().decode("utf-8", "replace")


def run(cmd, timeout):
    """None on success, else a one-line reason (exit status or signal, and stderr)."""
    try:
        rc, err = run_with_timeout(cmd, timeout)
    except OSError as e:
        return f"cannot run {cmd[0]}: {e}"
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:g} s"
    if rc != 0:
        msg = squash(err)
        return describe_exit(rc) + (f": {msg}" if msg else "")
    return None
