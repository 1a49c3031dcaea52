#!/usr/bin/env python3
"""50 concurrent streams through openai.AsyncOpenAI against one real
kvserve-server (the tiny Qwen2 fixture): every stream ends with `length`, its
usage is right, and its greedy text equals the same request made alone and
unstreamed; batching changes nothing. Afterwards no KV block is used."""
import asyncio

import openai

import common
from common import API_KEY, CLIENT_TIMEOUT_S, ServerTestCase

NUM_STREAMS = 50
MAX_TOKENS = 16
PROMPTS = ["Once upon a time", "def main():", "1, 2, 3,", "Dear colleague", "Grüße, 世界"]


class AsyncStreamsTest(ServerTestCase):
    def test_fifty_concurrent_streams(self):
        expected = {}
        for prompt in PROMPTS:
            alone = self.client.completions.create(model=self.model, prompt=prompt,
                                                   max_tokens=MAX_TOKENS, temperature=0,
                                                   extra_body={"ignore_eos": True})
            expected[prompt] = alone.choices[0].text
        results = asyncio.run(self.run_streams())
        self.assertEqual(len(results), NUM_STREAMS)
        for i, (prompt, text, finish, usage) in enumerate(results):
            with self.subTest(stream=i):
                self.assertEqual(text, expected[prompt])
                self.assertEqual(finish, "length")
                self.assertEqual(usage.completion_tokens, MAX_TOKENS)

    async def run_streams(self):
        async with openai.AsyncOpenAI(base_url=self.server.base_url, api_key=API_KEY,
                                      max_retries=0, timeout=CLIENT_TIMEOUT_S) as client:
            return await asyncio.gather(*(self.one_stream(client, PROMPTS[i % len(PROMPTS)])
                                          for i in range(NUM_STREAMS)))

    async def one_stream(self, client, prompt):
        stream = await client.completions.create(
            model=self.model, prompt=prompt, max_tokens=MAX_TOKENS, temperature=0, stream=True,
            stream_options={"include_usage": True}, extra_body={"ignore_eos": True})
        text, finish, usage = "", None, None
        async for chunk in stream:
            for choice in chunk.choices:
                text += choice.text
                finish = choice.finish_reason or finish
            usage = chunk.usage or usage
        return prompt, text, finish, usage


if __name__ == "__main__":
    common.main()
