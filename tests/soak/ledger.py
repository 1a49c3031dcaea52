"""The soak's account of every request: each one ends exactly once, with the
status the client saw and the outcome the server should have counted in
kvserve_requests_total{api, outcome}; at the end, the client's account is
compared with the server's counters.

Two kinds of difference are not errors, because they depend on which side
noticed first, not on the server's correctness:
- a request the client cancelled, let expire or disconnected may have
  finished on the server just before (client "early", server "completed");
- the rapid-reset burst's streams may or may not reach the server's handler
  before their reset (server "early" beyond the client's, at most the
  burst's stream count, gRPC only).
Everything else must match exactly, label by label."""
import collections
import threading

COMPLETED = ("length", "eos", "stop")
EARLY = ("cancelled", "deadline_exceeded")
ERRORS = ("invalid_argument", "not_found", "resource_exhausted", "unavailable", "error")
APIS = ("grpc", "http")


class Request:
    def __init__(self, ledger, scenario, api):
        self.ledger = ledger
        self.scenario = scenario
        self.api = api
        self.ended = False

    def end(self, client_status, server_outcome, expected=True):
        """client_status: what the client saw ("OK", "CANCELLED", "HTTP 400",
        ...); server_outcome: the kvserve_requests_total outcome it implies;
        expected: False when this scenario should never end this way."""
        with self.ledger.lock:
            if self.ended:
                self.ledger.failures.append(
                    f"{self.scenario}: a second terminal status {client_status}")
                return
            self.ended = True
            self.ledger.ended += 1
            self.ledger.statuses[(self.scenario, client_status)] += 1
            self.ledger.outcomes[(self.api, server_outcome)] += 1
            if not expected:
                self.ledger.failures.append(
                    f"{self.scenario}: unexpected status {client_status}")

    def violation(self, what):
        """A protocol error seen by the client (e.g. two finish reasons)."""
        with self.ledger.lock:
            self.ledger.failures.append(f"{self.scenario}: {what}")


class Ledger:
    def __init__(self):
        self.lock = threading.Lock()
        self.begun = 0
        self.ended = 0
        self.statuses = collections.Counter()  # (scenario, client status) -> count
        self.outcomes = collections.Counter()  # (api, server outcome) -> count
        self.failures = []

    def begin(self, scenario, api):
        with self.lock:
            self.begun += 1
        return Request(self, scenario, api)

    def fail(self, what):
        with self.lock:
            self.failures.append(what)

    def compare_with_server(self, before, after, burst_streams):
        """before/after: {(api, outcome): count} from kvserve_requests_total.
        Returns (failures, {api: figures})."""
        failures = []
        figures = {}
        delta = collections.Counter({key: after.get(key, 0) - before.get(key, 0)
                                     for key in set(before) | set(after)})
        for api in APIS:
            for label in ERRORS:
                if delta[(api, label)] != self.outcomes[(api, label)]:
                    failures.append(f"{api} {label}: server counted {delta[(api, label)]:.0f}, "
                                    f"clients saw {self.outcomes[(api, label)]}")
            server_completed = sum(delta[(api, label)] for label in COMPLETED)
            client_completed = sum(self.outcomes[(api, label)] for label in COMPLETED)
            server_early = sum(delta[(api, label)] for label in EARLY)
            client_early = sum(self.outcomes[(api, label)] for label in EARLY)
            finished_first = server_completed - client_completed
            extra = server_early - (client_early - finished_first)
            slack = burst_streams if api == "grpc" else 0
            if finished_first < 0 or finished_first > client_early:
                failures.append(f"{api}: server completed {server_completed:.0f}, clients saw "
                                f"{client_completed} completed and {client_early} ended early")
            if not 0 <= extra <= slack:
                failures.append(f"{api}: server ended {server_early:.0f} early, clients "
                                f"{client_early} ({finished_first:.0f} finished first), "
                                f"burst allowance {slack}")
            figures[api] = {"server": {k[1]: int(v) for k, v in delta.items() if k[0] == api and v},
                            "finished_before_cancel": int(finished_first),
                            "burst_streams_counted": int(extra)}
        if self.begun != self.ended:
            failures.append(f"{self.begun - self.ended} requests never ended on the client")
        return failures, figures
