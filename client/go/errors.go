package main

import (
	"fmt"
	"os"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// hints say what a client usually does about the codes kvserve returns (docs/errors.md).
var hints = map[codes.Code]string{
	codes.InvalidArgument:   "the request is wrong: fix the field the message names; retrying will not help",
	codes.ResourceExhausted: "the server is full (queue or KV cache): retry later, with backoff",
	codes.Unavailable:       "the server is down, starting or draining: retry, or try another replica",
	codes.DeadlineExceeded:  "the deadline passed first: raise it or ask for fewer tokens",
	codes.Unauthenticated:   "send the server's bearer token (--auth-token-file)",
}

// codeName is the code as gRPC's spec and the proto spell it (INVALID_ARGUMENT),
// not Go's String() (InvalidArgument).
func codeName(err error) string {
	names := [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
		"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
		"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
		"UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}
	if code := status.Code(err); int(code) < len(names) {
		return names[code]
	}
	return status.Code(err).String()
}

// reportError prints "error: CODE: message" and a hint; returns the exit code.
func reportError(err error) int {
	st, ok := status.FromError(err)
	if !ok { // not from gRPC: a bad flag
		fmt.Fprintln(os.Stderr, "error:", err)
		return 2
	}
	fmt.Fprintf(os.Stderr, "error: %s: %s\n", codeName(err), st.Message())
	if hint, ok := hints[st.Code()]; ok {
		fmt.Fprintln(os.Stderr, "hint:", hint)
	}
	return 1
}
