"""The bearer token of the Python examples, as kvserve-cli takes it:
--auth-token-file (its first line that is not a # comment), else
--auth-token, else $KVSERVE_AUTH_TOKEN. A file or the environment keeps the
token out of `ps` and shell history. Sent as per-call metadata
"authorization: Bearer <token>" (kvserve --auth_token_file)."""
import os


def add_auth_arguments(parser):
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--auth-token-file", help="file holding the bearer token")
    group.add_argument("--auth-token",
                       help="bearer token (prefer --auth-token-file or $KVSERVE_AUTH_TOKEN)")


def call_metadata(args):
    """The metadata to pass to every call: () when no token is set."""
    token = None
    if args.auth_token_file:
        with open(args.auth_token_file) as f:
            token = next((line.strip() for line in f
                          if line.strip() and not line.strip().startswith("#")), None)
        if token is None:
            raise SystemExit(f"--auth-token-file: no token in {args.auth_token_file}")
    elif args.auth_token:
        token = args.auth_token.strip()
    else:
        token = os.environ.get("KVSERVE_AUTH_TOKEN", "").strip() or None
    return (("authorization", f"Bearer {token}"),) if token else ()
