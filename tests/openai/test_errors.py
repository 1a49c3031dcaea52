#!/usr/bin/env python3
"""Errors as the official `openai` client sees them from a real
kvserve-server: a wrong model is openai.NotFoundError (404 model_not_found),
also from client.models.retrieve(); bad values, bad types, over-limit values,
unknown roles and unsupported parameters (code unsupported_parameter) are
openai.BadRequestError naming the parameter, a full queue is
openai.RateLimitError (429 with Retry-After);
every body is {"error": {"message", "type", "param", "code"}}. After every
error the server still serves, and no KV block stays used."""
import openai

import common
from common import ServerTestCase

CONTEXT = 1024  # tiny-qwen2's max_position_embeddings
VOCAB = 1000

# (parameter, bad value): out of range, wrong type, over the model's limits.
BAD_COMPLETION_PARAMS = [
    ("temperature", -0.5), ("temperature", "hot"),
    ("top_p", 1.5), ("top_p", "all"),
    ("max_tokens", 0), ("max_tokens", -3), ("max_tokens", "ten"), ("max_tokens", 10 * CONTEXT),
    ("n", 0), ("n", "two"),
    ("logprobs", 21), ("logprobs", -1),
    ("presence_penalty", 2.5), ("frequency_penalty", -3.0), ("presence_penalty", "x"),
    ("seed", "abc"),
    ("stop", 5),
]
BAD_EXTENSIONS = [
    ("top_k", "x"), ("min_p", 1.5), ("min_p", -0.1), ("repetition_penalty", 0.0),
    ("repetition_penalty", "x"), ("min_tokens", -1), ("ignore_eos", "yes"),
]
BAD_CHAT_PARAMS = [
    ("top_logprobs", 21), ("top_logprobs", -1), ("logprobs", "yes"),
    ("max_completion_tokens", 0), ("max_completion_tokens", 10 * CONTEXT),
    ("temperature", -1.0), ("n", -2),
]
MESSAGES = [{"role": "user", "content": "Hi"}]


class ErrorsTest(ServerTestCase):
    def bad_completion(self, **kwargs):
        with self.assertRaises(openai.BadRequestError) as caught:
            self.client.completions.create(model=self.model, **kwargs)
        return caught.exception

    def bad_chat(self, **kwargs):
        with self.assertRaises(openai.BadRequestError) as caught:
            self.client.chat.completions.create(model=self.model, **kwargs)
        return caught.exception

    def test_wrong_model_is_not_found(self):
        for create in (lambda: self.client.completions.create(model="no-such-model", prompt="a"),
                       lambda: self.client.chat.completions.create(model="no-such-model",
                                                                   messages=MESSAGES)):
            with self.assertRaises(openai.NotFoundError) as caught:
                create()
            fields = self.assert_openai_error(caught.exception, 404, code="model_not_found")
            self.assertIn("no-such-model", fields["message"])

    def test_bad_completion_parameters_name_the_parameter(self):
        for param, value in BAD_COMPLETION_PARAMS:
            with self.subTest(param=param, value=value):
                error = self.bad_completion(prompt="Hello", **{param: value})
                self.assert_openai_error(error, 400, param=param)

    def test_bad_extensions_name_the_parameter(self):
        for param, value in BAD_EXTENSIONS:
            with self.subTest(param=param, value=value):
                error = self.bad_completion(prompt="Hello", max_tokens=4, extra_body={param: value})
                self.assert_openai_error(error, 400, param=param)

    def test_bad_prompts(self):
        for prompt in ([VOCAB + 5], [-1], 5, [1.5], list(range(2 * CONTEXT)), ""):
            with self.subTest(prompt=str(prompt)[:40]):
                error = self.bad_completion(prompt=prompt, max_tokens=4)
                self.assert_openai_error(error, 400, param="prompt")

    def test_prompt_plus_max_tokens_over_the_context(self):
        error = self.bad_completion(prompt=[1] * (CONTEXT - 10), max_tokens=100)
        fields = self.assert_openai_error(error, 400)
        self.assertIn(fields["param"], ("max_tokens", "prompt"), fields)
        self.assertIn(str(CONTEXT), fields["message"])  # the limit is named

    def test_bad_chat_parameters_name_the_parameter(self):
        for param, value in BAD_CHAT_PARAMS:
            with self.subTest(param=param, value=value):
                error = self.bad_chat(messages=MESSAGES, **{param: value})
                self.assert_openai_error(error, 400, param=param)

    def test_bad_messages(self):
        for messages in ([], "Hi", [{"content": "no role"}], [{"role": "user", "content": 5}],
                         [{"role": "user", "content": [{"type": "image_url",
                                                        "image_url": {"url": "x"}}]}]):
            with self.subTest(messages=messages):
                error = self.bad_chat(messages=messages)
                fields = self.assert_openai_error(error, 400)
                self.assertTrue(str(fields["param"]).startswith("messages"), fields)

    def test_template_error_is_bad_request_with_its_message(self):
        # chatml_strict.jinja has no tool messages.
        error = self.bad_chat(messages=[{"role": "tool", "content": "beep", "tool_call_id": "1"}])
        fields = self.assert_openai_error(error, 400)
        self.assertIn("Unknown role: tool", fields["message"])

    def test_unknown_role_is_bad_request_naming_the_message(self):
        error = self.bad_chat(messages=[{"role": "user", "content": "Hi"},
                                        {"role": "robot", "content": "beep"}])
        fields = self.assert_openai_error(error, 400, param="messages")
        self.assertIn('messages[1].role must be one of system, user, assistant, tool',
                      fields["message"])
        self.assertIn('"robot"', fields["message"])

    def test_unsupported_parameters_are_bad_request_with_their_code(self):
        error = self.bad_completion(prompt="Hello", suffix="the end")
        self.assert_openai_error(error, 400, param="suffix", code="unsupported_parameter")
        error = self.bad_completion(prompt="Hello", best_of=2)
        self.assert_openai_error(error, 400, param="best_of", code="unsupported_parameter")
        error = self.bad_chat(messages=MESSAGES, logit_bias={"5": 10})
        self.assert_openai_error(error, 400, param="logit_bias", code="unsupported_parameter")

    def test_models_retrieve(self):
        model = self.client.models.retrieve(self.model)
        self.assertEqual(model.id, self.model)
        self.assertEqual(model.object, "model")
        self.assertEqual(model, self.client.models.list().data[0])
        with self.assertRaises(openai.NotFoundError) as caught:
            self.client.models.retrieve("no-such-model")
        fields = self.assert_openai_error(caught.exception, 404, param="model",
                                          code="model_not_found")
        self.assertIn("no-such-model", fields["message"])

    def test_missing_required_fields(self):
        # The typed methods refuse to send these; the client's raw post does.
        for path, body, param in (("/completions", {"max_tokens": 4}, "prompt"),
                                  ("/chat/completions", {}, "messages")):
            with self.subTest(path=path, missing=param):
                with self.assertRaises(openai.BadRequestError) as caught:
                    self.client.post(path, body={"model": self.model, **body}, cast_to=object)
                self.assert_openai_error(caught.exception, 400, param=param)

    def test_server_still_serves_after_errors(self):
        self.bad_completion(prompt="Hello", temperature="hot")
        response = self.client.completions.create(model=self.model, prompt="Hello", max_tokens=3,
                                                  extra_body={"ignore_eos": True})
        self.assertEqual(response.usage.completion_tokens, 3)


class QueueFullTest(ServerTestCase):
    """One running sequence and no queue: while one stream runs, the next
    request is refused with 429 and Retry-After, and a retry after the stream
    ends gets through."""

    @classmethod
    def server_flags(cls):
        # The built-in model (context 2048) so that the holding stream lasts
        # seconds rather than the milliseconds of the tiny fixture.
        return ["--max_num_seqs=1", "--max_queued_requests=0"]

    def test_queue_full_is_rate_limit_with_retry_after(self):
        holder = self.client.completions.create(
            model=self.model, prompt="hold", max_tokens=2000, stream=True,
            extra_body={"ignore_eos": True})
        try:
            next(iter(holder))  # the holder is running once its first token arrived
            with self.assertRaises(openai.RateLimitError) as caught:
                self.client.completions.create(model=self.model, prompt="refused", max_tokens=4)
            fields = self.assert_openai_error(caught.exception, 429)
            self.assertIn("max_queued_requests", fields["message"])
            retry_after = caught.exception.response.headers.get("retry-after")
            self.assertIsNotNone(retry_after, "429 without Retry-After")
            self.assertGreaterEqual(int(retry_after), 0)
        finally:
            holder.close()  # a client that goes away cancels its request
        # The cancelled holder frees its slot at the engine's next step; a
        # client that honours Retry-After then gets through.
        retrying = self.client.with_options(max_retries=20)
        response = retrying.completions.create(model=self.model, prompt="after", max_tokens=4,
                                               extra_body={"ignore_eos": True})
        self.assertEqual(response.usage.completion_tokens, 4)


if __name__ == "__main__":
    common.main()
