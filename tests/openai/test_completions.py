#!/usr/bin/env python3
"""POST /v1/completions through the official `openai` client against a real
kvserve-server on the tiny Qwen2 fixture: response shape, usage, streaming
(equal to the non-streamed text), n > 1, logprobs, stop strings, seeds and the
kvserve extensions passed through `extra_body`."""
import common
from common import ServerTestCase

PROMPT_IDS = [5, 17, 42, 99, 7]
PROMPT_TEXT = "The quick brown fox"


def pick_stop_string(text):
    """Two characters from the middle of `text` (none of them whitespace or
    U+FFFD), and the text a stop on them must leave: everything before their
    first occurrence."""
    for start in range(len(text) // 2, len(text) - 1):
        stop = text[start:start + 2]
        if not any(c.isspace() or c == "\ufffd" for c in stop):
            return stop, text[:text.index(stop)]
    raise AssertionError(f"no usable stop string in {text!r}")


class CompletionsTest(ServerTestCase):
    def complete(self, prompt=PROMPT_TEXT, max_tokens=12, **kwargs):
        """Greedy and without EOS unless told otherwise, so lengths are exact."""
        kwargs.setdefault("temperature", 0)
        kwargs.setdefault("extra_body", {"ignore_eos": True})
        return self.client.completions.create(model=self.model, prompt=prompt,
                                              max_tokens=max_tokens, **kwargs)

    def test_response_shape_and_usage(self):
        response = self.complete(prompt=PROMPT_IDS, max_tokens=8)
        self.assertEqual(response.object, "text_completion")
        self.assertTrue(response.id)
        self.assertEqual(response.model, self.model)
        self.assertIsInstance(response.created, int)
        self.assertEqual(len(response.choices), 1)
        choice = response.choices[0]
        self.assertEqual(choice.index, 0)
        self.assertEqual(choice.finish_reason, "length")
        self.assertIsInstance(choice.text, str)
        # Token-id prompts are the whole input: no BOS is added for Qwen2.
        self.assertEqual(response.usage.prompt_tokens, len(PROMPT_IDS))
        self.assertEqual(response.usage.completion_tokens, 8)
        self.assertEqual(response.usage.total_tokens, len(PROMPT_IDS) + 8)

    def test_max_tokens_ends_with_length(self):
        for max_tokens in (1, 5, 20):
            with self.subTest(max_tokens=max_tokens):
                response = self.complete(max_tokens=max_tokens)
                self.assertEqual(response.choices[0].finish_reason, "length")
                self.assertEqual(response.usage.completion_tokens, max_tokens)

    def test_stream_equals_unary_and_reports_usage(self):
        unary = self.complete()
        chunks = list(self.complete(stream=True, stream_options={"include_usage": True}))
        self.assertGreater(len(chunks), 2)
        self.assertEqual(len({chunk.id for chunk in chunks}), 1)
        self.assertTrue(all(chunk.object == "text_completion" for chunk in chunks))
        # The usage chunk comes last, with no choices; the others carry no usage.
        usage_chunk, text_chunks = chunks[-1], chunks[:-1]
        self.assertEqual(usage_chunk.choices, [])
        self.assertEqual(usage_chunk.usage.completion_tokens, 12)
        self.assertEqual(usage_chunk.usage.prompt_tokens, unary.usage.prompt_tokens)
        self.assertEqual(usage_chunk.usage.total_tokens, unary.usage.total_tokens)
        self.assertTrue(all(chunk.usage is None for chunk in text_chunks))
        self.assertEqual("".join(chunk.choices[0].text for chunk in text_chunks),
                         unary.choices[0].text)
        finishes = [chunk.choices[0].finish_reason for chunk in text_chunks]
        self.assertEqual(finishes[-1], "length")
        self.assertTrue(all(f is None for f in finishes[:-1]), finishes)

    def test_stream_without_usage_option_has_no_usage(self):
        chunks = list(self.complete(max_tokens=4, stream=True))
        self.assertTrue(all(chunk.usage is None for chunk in chunks))
        self.assertEqual(chunks[-1].choices[0].finish_reason, "length")

    def test_n_greedy_choices_are_equal(self):
        response = self.complete(n=2)
        self.assertEqual(sorted(c.index for c in response.choices), [0, 1])
        self.assertEqual(response.choices[0].text, response.choices[1].text)
        self.assertEqual(response.usage.completion_tokens, 2 * 12)
        self.assertEqual(response.usage.prompt_tokens, self.complete().usage.prompt_tokens)

    def test_n_sampled_choices_are_independent(self):
        response = self.complete(prompt=PROMPT_IDS, n=3, temperature=1.0, seed=7, max_tokens=8)
        self.assertEqual(sorted(c.index for c in response.choices), [0, 1, 2])
        self.assertTrue(all(c.finish_reason == "length" for c in response.choices))
        self.assertEqual(response.usage.prompt_tokens, len(PROMPT_IDS))  # counted once
        self.assertEqual(response.usage.completion_tokens, 3 * 8)
        # Three 8-token samples at temperature 1 over a 1000-token vocabulary:
        # equal only if every choice reused one random stream.
        self.assertGreater(len({c.text for c in response.choices}), 1,
                           [c.text for c in response.choices])

    def test_n_streamed_choices_end_separately(self):
        unary = self.complete(n=2)
        texts, finishes = {0: "", 1: ""}, {0: [], 1: []}
        for chunk in self.complete(n=2, stream=True):
            for choice in chunk.choices:
                texts[choice.index] += choice.text
                if choice.finish_reason is not None:
                    finishes[choice.index].append(choice.finish_reason)
        self.assertEqual(finishes, {0: ["length"], 1: ["length"]})
        self.assertEqual(texts[0], unary.choices[0].text)
        self.assertEqual(texts[1], unary.choices[1].text)

    def test_logprobs(self):
        response = self.complete(prompt=PROMPT_IDS, max_tokens=6, logprobs=3)
        logprobs = response.choices[0].logprobs
        self.assertEqual(len(logprobs.tokens), 6)
        self.assertEqual(len(logprobs.token_logprobs), 6)
        self.assertEqual(len(logprobs.top_logprobs), 6)
        self.assertEqual(len(logprobs.text_offset), 6)
        self.assertEqual(logprobs.text_offset, sorted(logprobs.text_offset))
        for chosen, top in zip(logprobs.token_logprobs, logprobs.top_logprobs):
            self.assertLessEqual(chosen, 0.0)
            # A dict keyed by token text: tokens that decode alike collapse.
            self.assertTrue(1 <= len(top) <= 3, top)
            self.assertTrue(all(value <= 0.0 for value in top.values()), top)
            # Greedy: the chosen token is the most likely one.
            self.assertAlmostEqual(chosen, max(top.values()), places=4)

    def test_logprobs_stream_like_unary(self):
        unary = self.complete(prompt=PROMPT_IDS, max_tokens=6, logprobs=2)
        streamed = []
        for chunk in self.complete(prompt=PROMPT_IDS, max_tokens=6, logprobs=2, stream=True):
            if chunk.choices and chunk.choices[0].logprobs is not None:
                streamed.extend(chunk.choices[0].logprobs.token_logprobs)
        self.assertEqual(len(streamed), 6)
        for got, expected in zip(streamed, unary.choices[0].logprobs.token_logprobs):
            self.assertAlmostEqual(got, expected, places=5)

    def test_stop_string_cuts_the_text(self):
        full = self.complete(max_tokens=24).choices[0].text
        stop, expected = pick_stop_string(full)
        response = self.complete(max_tokens=24, stop=[stop, "never-generated-§§"])
        self.assertEqual(response.choices[0].text, expected)
        self.assertEqual(response.choices[0].finish_reason, "stop")
        streamed = list(self.complete(max_tokens=24, stop=stop, stream=True))
        self.assertEqual("".join(c.choices[0].text for c in streamed if c.choices), expected)
        self.assertEqual(streamed[-1].choices[0].finish_reason, "stop")

    def test_seed_reproduces_a_sample(self):
        def sample(seed):
            return self.complete(prompt=PROMPT_IDS, temperature=1.0, seed=seed,
                                 max_tokens=16).choices[0].text
        first = sample(1234)
        self.assertEqual(sample(1234), first)
        self.assertNotEqual(sample(4321), first)

    def test_extensions_through_extra_body(self):
        greedy = self.complete(prompt=PROMPT_IDS).choices[0].text
        # top_k = 1 and min_p = 1 both leave only the most likely token: any
        # seed at temperature 1 must then give the greedy text.
        for extension in ({"top_k": 1}, {"min_p": 1.0}):
            for seed in (1, 2):
                with self.subTest(extension=extension, seed=seed):
                    response = self.complete(prompt=PROMPT_IDS, temperature=1.0, seed=seed,
                                             extra_body={"ignore_eos": True, **extension})
                    self.assertEqual(response.choices[0].text, greedy)
        # Neutral penalties change nothing.
        neutral = self.complete(prompt=PROMPT_IDS, presence_penalty=0.0, frequency_penalty=0.0,
                                extra_body={"ignore_eos": True, "repetition_penalty": 1.0})
        self.assertEqual(neutral.choices[0].text, greedy)
        # Active penalties are accepted (their effect is tested in sampling_engine_test).
        penalized = self.complete(prompt=PROMPT_IDS, presence_penalty=1.0, frequency_penalty=0.5,
                                  extra_body={"ignore_eos": True, "repetition_penalty": 1.3})
        self.assertEqual(penalized.usage.completion_tokens, 12)
        # min_tokens = max_tokens: EOS cannot end it early, even without ignore_eos.
        response = self.complete(prompt=PROMPT_IDS, max_tokens=10, extra_body={"min_tokens": 10})
        self.assertEqual(response.usage.completion_tokens, 10)
        self.assertEqual(response.choices[0].finish_reason, "length")


if __name__ == "__main__":
    common.main()
