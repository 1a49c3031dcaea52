#!/usr/bin/env python3
"""POST /v1/chat/completions through the official `openai` client against a
real kvserve-server on the tiny Qwen2 fixture with a ChatML template: shape,
usage (equal to the rendered prompt's), streaming, n > 1, logprobs and
top_logprobs, stop strings, content parts, seeds and the extensions."""
import common
from common import ServerTestCase, render_chatml
from test_completions import pick_stop_string

MESSAGES = [{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hello there"}]


class ChatCompletionsTest(ServerTestCase):
    def chat(self, messages=MESSAGES, **kwargs):
        """Greedy, 12 tokens, no EOS unless told otherwise, so lengths are exact."""
        kwargs.setdefault("temperature", 0)
        kwargs.setdefault("extra_body", {"ignore_eos": True})
        if "max_tokens" not in kwargs:
            kwargs.setdefault("max_completion_tokens", 12)
        return self.client.chat.completions.create(model=self.model, messages=messages, **kwargs)

    def test_response_shape_and_usage(self):
        response = self.chat()
        self.assertEqual(response.object, "chat.completion")
        self.assertTrue(response.id)
        self.assertEqual(response.model, self.model)
        self.assertIsInstance(response.created, int)
        self.assertEqual(len(response.choices), 1)
        choice = response.choices[0]
        self.assertEqual(choice.index, 0)
        self.assertEqual(choice.message.role, "assistant")
        self.assertIsInstance(choice.message.content, str)
        self.assertEqual(choice.finish_reason, "length")
        self.assertEqual(response.usage.completion_tokens, 12)
        self.assertEqual(response.usage.total_tokens,
                         response.usage.prompt_tokens + response.usage.completion_tokens)

    def test_usage_and_text_equal_the_rendered_prompt_completed(self):
        """The chat prompt is the template's rendering: completing that text
        gives the same prompt token count and the same greedy text."""
        chat = self.chat()
        completion = self.client.completions.create(
            model=self.model, prompt=render_chatml(MESSAGES), max_tokens=12, temperature=0,
            extra_body={"ignore_eos": True})
        self.assertEqual(chat.usage.prompt_tokens, completion.usage.prompt_tokens)
        self.assertEqual(chat.choices[0].message.content, completion.choices[0].text)

    def test_max_tokens_is_an_alias(self):
        response = self.chat(max_tokens=5)
        self.assertEqual(response.usage.completion_tokens, 5)
        self.assertEqual(response.choices[0].finish_reason, "length")

    def test_stream_equals_unary_and_reports_usage(self):
        unary = self.chat()
        chunks = list(self.chat(stream=True, stream_options={"include_usage": True}))
        self.assertEqual(len({chunk.id for chunk in chunks}), 1)
        self.assertTrue(all(chunk.object == "chat.completion.chunk" for chunk in chunks))
        usage_chunk, deltas = chunks[-1], chunks[:-1]
        self.assertEqual(usage_chunk.choices, [])
        self.assertEqual(usage_chunk.usage.prompt_tokens, unary.usage.prompt_tokens)
        self.assertEqual(usage_chunk.usage.completion_tokens, 12)
        self.assertTrue(all(chunk.usage is None for chunk in deltas))
        self.assertEqual(deltas[0].choices[0].delta.role, "assistant")
        self.assertEqual("".join(c.choices[0].delta.content or "" for c in deltas),
                         unary.choices[0].message.content)
        finishes = [c.choices[0].finish_reason for c in deltas]
        self.assertEqual(finishes[-1], "length")
        self.assertTrue(all(f is None for f in finishes[:-1]), finishes)

    def test_n_choices(self):
        greedy = self.chat(n=2)
        self.assertEqual(sorted(c.index for c in greedy.choices), [0, 1])
        self.assertEqual(greedy.choices[0].message.content, greedy.choices[1].message.content)
        self.assertEqual(greedy.usage.completion_tokens, 24)
        sampled = self.chat(n=3, temperature=1.0, seed=11)
        self.assertEqual(sorted(c.index for c in sampled.choices), [0, 1, 2])
        self.assertEqual(sampled.usage.prompt_tokens, greedy.usage.prompt_tokens)
        self.assertGreater(len({c.message.content for c in sampled.choices}), 1)

    def test_n_streamed(self):
        unary = self.chat(n=2)
        texts, finishes = {0: "", 1: ""}, {0: [], 1: []}
        for chunk in self.chat(n=2, stream=True):
            for choice in chunk.choices:
                texts[choice.index] += choice.delta.content or ""
                if choice.finish_reason is not None:
                    finishes[choice.index].append(choice.finish_reason)
        self.assertEqual(finishes, {0: ["length"], 1: ["length"]})
        self.assertEqual([texts[0], texts[1]], [c.message.content for c in unary.choices])

    def test_logprobs_and_top_logprobs(self):
        response = self.chat(max_completion_tokens=6, logprobs=True, top_logprobs=3)
        content = response.choices[0].logprobs.content
        self.assertEqual(len(content), 6)
        for entry in content:
            self.assertIsInstance(entry.token, str)
            self.assertLessEqual(entry.logprob, 0.0)
            tops = [top.logprob for top in entry.top_logprobs]
            self.assertEqual(len(tops), 3)
            self.assertEqual(tops, sorted(tops, reverse=True))
            # Greedy: the chosen token is the most likely one.
            self.assertAlmostEqual(entry.logprob, tops[0], places=4)
            self.assertEqual(entry.token, entry.top_logprobs[0].token)

    def test_logprob_bytes_are_unsigned(self):
        """UTF-8 byte values, 0..255 (they once came out signed: -17 for 0xEF)."""
        response = self.chat(max_completion_tokens=12, logprobs=True, top_logprobs=2)
        for entry in response.choices[0].logprobs.content:
            for values in [entry.bytes] + [top.bytes for top in entry.top_logprobs]:
                self.assertTrue(all(0 <= b < 256 for b in values), values)

    def test_logprob_bytes_join_to_the_content(self):
        """OpenAI: `bytes` are a token's own UTF-8 bytes, so that characters
        split over tokens can be put back together: joined, they decode to the
        content (the tiny model's byte-level tokens split many characters)."""
        response = self.chat(max_completion_tokens=12, logprobs=True)
        joined = bytes(b for entry in response.choices[0].logprobs.content for b in entry.bytes)
        self.assertEqual(joined.decode("utf-8", errors="replace"),
                         response.choices[0].message.content)

    def test_logprobs_without_top_logprobs(self):
        response = self.chat(max_completion_tokens=4, logprobs=True)
        content = response.choices[0].logprobs.content
        self.assertEqual(len(content), 4)
        self.assertTrue(all(entry.top_logprobs == [] for entry in content))
        self.assertIsNone(self.chat(max_completion_tokens=4).choices[0].logprobs)

    def test_logprobs_streamed(self):
        unary = self.chat(max_completion_tokens=6, logprobs=True, top_logprobs=2)
        streamed = []
        for chunk in self.chat(max_completion_tokens=6, logprobs=True, top_logprobs=2,
                               stream=True):
            if chunk.choices and chunk.choices[0].logprobs is not None:
                streamed.extend(chunk.choices[0].logprobs.content or [])
        self.assertEqual([e.token for e in streamed],
                         [e.token for e in unary.choices[0].logprobs.content])

    def test_stop_string(self):
        full = self.chat(max_completion_tokens=24).choices[0].message.content
        stop, expected = pick_stop_string(full)
        response = self.chat(max_completion_tokens=24, stop=[stop])
        self.assertEqual(response.choices[0].message.content, expected)
        self.assertEqual(response.choices[0].finish_reason, "stop")
        streamed = list(self.chat(max_completion_tokens=24, stop=stop, stream=True))
        self.assertEqual("".join(c.choices[0].delta.content or "" for c in streamed if c.choices),
                         expected)
        self.assertEqual(streamed[-1].choices[0].finish_reason, "stop")

    def test_content_as_text_parts(self):
        parts = [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
                 {"role": "user", "content": [{"type": "text", "text": "Hello "},
                                              {"type": "text", "text": "there"}]}]
        self.assertEqual(self.chat(messages=parts).choices[0].message.content,
                         self.chat().choices[0].message.content)

    def test_seed_reproduces_a_sample(self):
        def sample(seed):
            return self.chat(temperature=1.0, seed=seed).choices[0].message.content
        first = sample(99)
        self.assertEqual(sample(99), first)
        self.assertNotEqual(sample(100), first)

    def test_extensions_through_extra_body(self):
        greedy = self.chat().choices[0].message.content
        sampled_top1 = self.chat(temperature=1.0, seed=5,
                                 extra_body={"ignore_eos": True, "top_k": 1})
        self.assertEqual(sampled_top1.choices[0].message.content, greedy)
        sampled_min_p = self.chat(temperature=1.0, seed=6,
                                  extra_body={"ignore_eos": True, "min_p": 1.0})
        self.assertEqual(sampled_min_p.choices[0].message.content, greedy)
        response = self.chat(max_completion_tokens=10, extra_body={"min_tokens": 10})
        self.assertEqual(response.usage.completion_tokens, 10)
        penalized = self.chat(extra_body={"ignore_eos": True, "repetition_penalty": 1.2})
        self.assertEqual(penalized.usage.completion_tokens, 12)


if __name__ == "__main__":
    common.main()
