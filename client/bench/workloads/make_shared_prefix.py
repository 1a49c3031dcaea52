#!/usr/bin/env python3
"""Writes the prefix-caching workload: N requests (one JSON object a line)
that share a system prompt of S token ids and differ in a short user part.
Deterministic: the same arguments give the same file.

    make_shared_prefix.py --requests 17 --system_tokens 1000 --user_tokens 24 \
        --max_new_tokens 8 > shared_system_prompt_1000.jsonl
"""
import argparse
import json
import random

parser = argparse.ArgumentParser()
parser.add_argument("--requests", type=int, default=17)
parser.add_argument("--system_tokens", type=int, default=1000)
parser.add_argument("--user_tokens", type=int, default=24)
parser.add_argument("--max_new_tokens", type=int, default=8)
parser.add_argument("--vocab", type=int, default=320, help="ids are drawn from [3, vocab)")
parser.add_argument("--seed", type=int, default=1)
args = parser.parse_args()

rng = random.Random(args.seed)
system = [rng.randrange(3, args.vocab) for _ in range(args.system_tokens)]
for _ in range(args.requests):
    user = [rng.randrange(3, args.vocab) for _ in range(args.user_tokens)]
    print(json.dumps({"token_ids": system + user, "max_new_tokens": args.max_new_tokens},
                     separators=(",", ":")))
