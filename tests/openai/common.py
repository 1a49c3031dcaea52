"""Shared pieces of the `openai` client tests: the skip rule, the served
fixtures, a test case that owns one server, and the error-shape check.

Run by ctest (tests/CMakeLists.txt) with the venv's python and KVSERVE_BIN,
KVSERVE_TEST_DATA_DIR (and KVSERVE_SMOLLM2_GGUF for the SmolLM2 test)."""
import os
import sys
import unittest

from kvserve_server import KvserveServer

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests

try:
    import openai
except ImportError:  # the venv fixture could not reach PyPI
    print("the `openai` package is not installed (offline?): skipped")
    sys.exit(SKIP)

API_KEY = "kvserve-needs-no-key"  # the client insists on one; kvserve without --auth_token_file ignores it
CLIENT_TIMEOUT_S = 300


def data_path(*parts):
    return os.path.join(os.environ["KVSERVE_TEST_DATA_DIR"], *parts)


def tiny_chat_model_flags():
    """The tiny Qwen2 fixture (tokenizer.json, vocab 1000, context 1024)
    served with a ChatML template; its random weights make noise, but
    deterministic noise: greedy decoding is reproducible."""
    return [f"--model={data_path('tiny-qwen2')}",
            f"--chat_template={data_path('chat', 'chatml_strict.jinja')}"]


def render_chatml(messages):
    """What chatml_strict.jinja renders for `messages` with a generation prompt."""
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return text + "<|im_start|>assistant\n"


class ServerTestCase(unittest.TestCase):
    """One kvserve-server per test class, the sync client on its HTTP API, and
    the served model's name as GET /v1/models lists it. On teardown every KV
    block must be back in the pool (no request leaked one)."""

    api_key = API_KEY  # what the client sends as "Authorization: Bearer <api_key>"

    @classmethod
    def server_flags(cls):
        return tiny_chat_model_flags()

    @classmethod
    def setUpClass(cls):
        cls.server = KvserveServer(*cls.server_flags())
        cls.server.start()
        # No retries: a 429 or 5xx must reach the test, not be retried away.
        cls.client = openai.OpenAI(base_url=cls.server.base_url, api_key=cls.api_key,
                                   max_retries=0, timeout=CLIENT_TIMEOUT_S)
        models = cls.client.models.list().data
        assert len(models) == 1, models
        cls.model = models[0].id

    @classmethod
    def tearDownClass(cls):
        try:
            cls.client.close()
            used = cls.server.wait_for_metric("kvserve_kv_blocks_used", lambda v: v == 0)
            assert used == 0, f"{used} KV blocks still used after every request ended"
        finally:
            cls.server.stop()

    def assert_openai_error(self, error, status, param=None, code=None):
        """`error` is an openai.APIStatusError: the HTTP status, the body
        {"error": {"message", "type", "param", "code"}}, and, where given, the
        parameter it names (in `param` and in the message) and its code."""
        self.assertEqual(error.status_code, status, error.response.text)
        body = error.response.json()
        self.assertEqual(set(body), {"error"}, body)
        fields = body["error"]
        self.assertLessEqual({"message", "type", "param", "code"}, set(fields), body)
        self.assertIsInstance(fields["message"], str)
        self.assertTrue(fields["message"], body)
        self.assertIsInstance(fields["type"], str)
        if status == 400:
            self.assertEqual(fields["type"], "invalid_request_error", body)
        if param is not None:
            self.assertEqual(fields["param"], param, body)
            self.assertIn(param, fields["message"], body)
        if code is not None:
            self.assertEqual(fields["code"], code, body)
        return fields


def main():
    """unittest's main with this suite's exit codes (0 pass, 1 fail)."""
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
