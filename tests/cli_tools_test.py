#!/usr/bin/env python3
"""kvserve-cli and kvserve-bench as a user meets them (issue 27 items 5 and 9),
real processes against a real kvserve on loopback:

- `kvserve-cli chat` in a pseudo-terminal: Ctrl-C mid-answer stops the
  answer and returns to `you>` with the conversation kept; /help lists the
  commands and sends nothing; an unknown /command is refused; a bracketed
  paste of several lines is one turn; Ctrl-D leaves on a new line; without
  --max-tokens the server's default applies.
- --stop is repeatable, one string each, C escapes decoded.
- tokenize and --logprobs show each token's text, escaped.
- kvserve-bench announces its wait on a dead target and gives up after
  --connect_timeout_s; without gnuplot, --plot_out says so before the run.

The default model (random weights, a byte tokenizer, about 200 tokens/s on
one CPU core) is served with a ChatML template, so that an answer of 1,500
tokens lasts seconds: long enough to interrupt.

Run by ctest with KVSERVE_BIN, KVSERVE_CLI, KVSERVE_BENCH_BIN and
KVSERVE_TEST_DATA_DIR."""
import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import termios
import time
import unittest

CLI = os.environ.get("KVSERVE_CLI", "")
PROMPT = b"you> "


def start_server(*flags):
    server = subprocess.Popen(
        [os.environ["KVSERVE_BIN"], "--port=0", "--http_port=-1", "--metrics_port=-1",
         "--host=127.0.0.1", *flags], stderr=subprocess.PIPE, text=True)
    for line in server.stderr:
        match = re.search(r"serving .* on [0-9.]+:(\d+)", line)
        if match:
            return server, f"127.0.0.1:{match.group(1)}"
    raise RuntimeError("kvserve exited before serving")


class Terminal:
    """kvserve-cli chat on the slave side of a pty, as a shell would run it."""

    def __init__(self, target, *args):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            env = dict(os.environ, TERM="xterm", LANG="C.UTF-8")
            os.execve(CLI, [CLI, "--target", target, "chat", *args], env)
        self.out = b""
        self.pos = 0  # where the last match ended

    def read_until(self, pattern, timeout=20):
        """Reads until `pattern` (bytes regex) matches past the last match."""
        start = self.pos
        deadline = time.monotonic() + timeout
        while True:
            match = re.compile(pattern).search(self.out, start)
            if match:
                self.pos = match.end()
                return match
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {pattern!r} in {self.out[start:]!r}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:  # the child closed the pty
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"exited before {pattern!r}: {self.out[start:]!r}")
                self.out += chunk

    def send(self, data):
        os.write(self.fd, data)

    def send_eof(self, timeout=10):
        """Ctrl-D once the line editor reads keys one by one. libedit prints
        its prompt before it leaves canonical mode; a Ctrl-D that reaches
        the terminal in that window is turned by Linux's line discipline
        into its end-of-line marker, which the editor then reads as a NUL
        byte (not as end of input). A person cannot type within that
        window (~0.1 ms); a test can, so it waits for the mode (the
        master's termios are the slave's)."""
        deadline = time.monotonic() + timeout
        while termios.tcgetattr(self.fd)[3] & termios.ICANON:
            if time.monotonic() > deadline:
                raise AssertionError("kvserve-cli never left canonical mode to read a key")
            time.sleep(0.01)
        os.write(self.fd, b"\x04")

    def wait(self, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                try:
                    self.out += os.read(self.fd, 65536)
                except OSError:
                    pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        raise AssertionError(f"kvserve-cli did not exit: {self.out[-400:]!r}")

    def close(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)


def prompt_tokens(match):
    return int(match.group(1))


SPEED = rb"finish: \w+ \| prompt (\d+) tokens\)"


class CliToolsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        data = os.environ["KVSERVE_TEST_DATA_DIR"]
        cls.server, cls.target = start_server(
            f"--chat_template={os.path.join(data, 'chat', 'chatml_strict.jinja')}")

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.wait(timeout=30)

    def terminal(self, *args):
        term = Terminal(self.target, *args)
        self.addCleanup(term.close)
        term.read_until(PROMPT)
        return term

    def cli(self, *args, expect_ok=True, env=None):
        result = subprocess.run([CLI, "--target", self.target, *args], capture_output=True,
                                text=True, timeout=60, env=env)
        if expect_ok:
            self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def test_ctrl_c_stops_the_answer_and_keeps_the_conversation(self):
        term = self.terminal("--ignore-eos")
        term.send(b"/max-tokens 4\r")
        term.read_until(rb"capped at 4 tokens")
        term.send(b"hi\r")
        first = prompt_tokens(term.read_until(SPEED))
        term.read_until(PROMPT)
        term.send(b"/max-tokens 1500\r")
        term.read_until(PROMPT)
        started = time.monotonic()
        term.send(b"tell me more\r")
        term.read_until(rb"assistant> .")  # the answer is streaming
        term.send(b"\x03")
        term.read_until(rb"\(stopped; the answer so far is kept")
        term.read_until(PROMPT)
        self.assertLess(time.monotonic() - started, 5)  # 1,500 tokens take ~8 s
        term.send(b"/max-tokens 1\r")
        term.read_until(PROMPT)
        term.send(b"and now?\r")
        third = prompt_tokens(term.read_until(SPEED))
        # The third prompt holds turn one (4 answer tokens), turn two's
        # question and the part of its answer that was shown.
        self.assertGreater(third, first + 4 + len("tell me more") + len("and now?") + 1)
        term.send(b"/exit\r")
        self.assertEqual(term.wait(), 0)

    def test_ctrl_c_at_the_prompt_says_how_to_leave(self):
        term = self.terminal()
        term.send(b"half a line")
        term.send(b"\x03")
        term.read_until(rb"Ctrl-D or /exit quits")
        term.read_until(PROMPT)
        term.send_eof()
        self.assertEqual(term.wait(), 0)

    def test_help_and_unknown_commands_are_not_sent(self):
        term = self.terminal()
        term.send(b"/help\r")
        help_text = term.read_until(rb"(?s)Commands:.*?" + PROMPT).group(0)
        for command in (b"/reset", b"/system", b"/exit", b"/max-tokens"):
            self.assertIn(command, help_text)
        term.send(b"/frobnicate\r")
        term.read_until(rb"unknown command /frobnicate")
        term.read_until(PROMPT)
        term.send(b"/exit\r")
        self.assertEqual(term.wait(), 0)
        self.assertNotIn(b"assistant>", term.out)

    def test_paste_is_one_turn_and_ctrl_d_ends_the_line(self):
        term = self.terminal("--max-tokens", "1")
        # Terminals send a pasted newline as \r (the tty may turn it into \n).
        term.send(b"\x1b[200~first line\rsecond line\nthird line\x1b[201~")
        time.sleep(0.2)  # a paste does not send: Enter does
        self.assertNotIn(b"assistant>", term.out)
        term.send(b"\r")
        pasted = prompt_tokens(term.read_until(SPEED))
        term.read_until(PROMPT)
        term.send(b"/reset\r")
        term.read_until(PROMPT)
        term.send(b"first line\r")
        single = prompt_tokens(term.read_until(SPEED))
        # One turn holding the three lines (byte tokens: one per character).
        self.assertEqual(pasted - single, len("\nsecond line\nthird line"))
        term.read_until(PROMPT)
        term.send_eof()
        self.assertEqual(term.wait(), 0)
        self.assertEqual(term.out.count(b"assistant> "), 2, term.out)
        self.assertTrue(term.out.endswith(b"\n"), term.out[-40:])

    def test_piped_continuations_and_the_servers_default_length(self):
        result = subprocess.run(
            [CLI, "--target", self.target, "chat", "--ignore-eos", "--json"],
            input='one \\\ntwo\n"""\nthree\nfour\n"""\n/max-tokens 2\nfive\n', capture_output=True,
            text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        turns = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        self.assertEqual(len(turns), 3, result.stdout)
        # No --max-tokens: the server's --default_max_new_tokens (256), not 64.
        self.assertEqual(turns[0]["completion_tokens"], 256)
        self.assertEqual(turns[2]["completion_tokens"], 2)

    def test_stop_is_repeatable_with_escapes(self):
        # Greedy: the same text each time. `c` is a character it holds.
        base = ["generate", "--prompt", "Hello", "--ignore-eos", "--max-tokens", "100", "--json"]
        full = json.loads(self.cli(*base).stdout)["text"]
        k, c = next((i, ch) for i, ch in enumerate(full) if i > 0 and ch.isalnum())
        # A comma stays in the string: "c,QQQ" never occurs, nothing stops.
        kept = json.loads(self.cli(*base, "--stop", f"{c},QQQ").stdout)
        self.assertEqual(kept["text"], full)
        # Two stop strings, the second an escape of `c`: it stops before `c`.
        stopped = json.loads(self.cli(*base, "--stop", "QQQ", "--stop",
                                      f"\\x{ord(c):02x}").stdout)
        self.assertEqual(stopped["finish_reason"], "stop")
        self.assertEqual(stopped["text"], full[:full.index(c)])
        newline = json.loads(self.cli("generate", "--prompt", "Hi", "--max-tokens", "1",
                                      "--stop", "\\n\\t\\u00e9", "--stop", "\\\\",
                                      "--json").stdout)
        self.assertIn(newline["finish_reason"], {"length", "stop"})
        bad = self.cli(*base, "--stop", "\\q", expect_ok=False)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("bad escape", bad.stderr)

    def test_tokens_show_their_text(self):
        out = self.cli("tokenize", "--prompt", 'Hi\t"x"\n').stdout
        self.assertEqual(out.splitlines(), [
            '     1  "<s>"', '    75  "H"', '   108  "i"', '    12  "\\t"', '    37  "\\""',
            '   123  "x"', '    37  "\\""', '    13  "\\n"', "(8 tokens)"])
        table = self.cli("generate", "--prompt", "Hi", "--max-tokens", "3", "--logprobs", "2",
                         "--ignore-eos").stdout
        rows = table.split("top alternatives):\n")[1].splitlines()
        self.assertEqual(len(rows), 3)
        for row in rows:
            self.assertRegex(row, r'^\d+ ".*" -?\d+\.\d{4} \| \d+ ".*" -?\d+\.\d{4}, \d+ ".*" ')
        logprobs = json.loads(self.cli("generate", "--prompt", "Hi", "--max-tokens", "3",
                                       "--logprobs", "1", "--json").stdout)["logprobs"]
        self.assertIn("text", logprobs[0])
        self.assertIn("text", logprobs[0]["top"][0])

    def test_bench_says_what_it_waits_for(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            dead = f"127.0.0.1:{s.getsockname()[1]}"
            started = time.monotonic()
            result = subprocess.run(
                [os.environ["KVSERVE_BENCH_BIN"], "--target", dead, "--concurrency", "1",
                 "--requests", "1", "--connect_timeout_s", "1"],
                capture_output=True, text=True, timeout=30)
        self.assertLess(time.monotonic() - started, 5)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn(f"waiting for {dead}", result.stderr)
        self.assertIn("--connect_timeout_s=1", result.stderr)
        bad = subprocess.run([os.environ["KVSERVE_BENCH_BIN"], "--target", dead, "--concurrency",
                              "1", "--requests", "1", "--connect_timeout_s", "0"],
                             capture_output=True, text=True, timeout=30)
        self.assertIn("--connect_timeout_s must be in (0, 3600]", bad.stderr)

    def test_bench_without_gnuplot(self):
        result = subprocess.run(
            [os.environ["KVSERVE_BENCH_BIN"], "--target", self.target, "--concurrency", "1",
             "--requests", "1", "--plot_out", "/tmp/never.png"],
            capture_output=True, text=True, timeout=30, env={"PATH": "/nonexistent"})
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("gnuplot not found", result.stderr)
        self.assertIn("drop --plot_out", result.stderr)
        self.assertNotIn("32512", result.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
