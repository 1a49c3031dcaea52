"""Which server log lines the soak counts as failures: an error (kvserve's
`E hh:mm:ss file:line]`, gRPC's and Abseil's `E1124 hh:mm:ss ...`), a fatal
line, or a crash report, unless the line is one a client causes on purpose
in the soak (CLIENT_CAUSED: each pattern with the scenario behind it)."""
import re

ERROR_LINE = re.compile(r"^(?:[EF] \d\d:\d\d:\d\d|[EF]\d{4} \d\d:\d\d:\d\d)")
CRASH = re.compile(r"Segmentation fault|terminate called|Assertion .* failed|AddressSanitizer|"
                   r"ThreadSanitizer|LeakSanitizer|runtime error:|Aborted|stack trace",
                   re.IGNORECASE)
CLIENT_CAUSED = [
]


def unexplained_lines(lines):
    """The lines that fail the soak."""
    return [line for line in lines
            if (ERROR_LINE.match(line) or CRASH.search(line))
            and not any(re.search(pattern, line) for pattern, _ in CLIENT_CAUSED)]
