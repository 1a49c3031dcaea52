#!/usr/bin/env python3
"""The official `openai` client against a kvserve-server started with
--auth_token_file: its api_key is the bearer token. The right key lists the
model, completes and streams a chat; a wrong key is
openai.AuthenticationError (401, code invalid_api_key), as OpenAI answers it;
/health needs no key."""
import os
import tempfile

import openai

import common
from common import ServerTestCase

TOKEN = "sk-kvserve-test-0123456789"
MESSAGES = [{"role": "user", "content": "Hi"}]

_TOKEN_DIR = tempfile.TemporaryDirectory()
TOKEN_FILE = os.path.join(_TOKEN_DIR.name, "tokens")
with open(os.open(TOKEN_FILE, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
    f.write(f"# the test's key\n{TOKEN}\n")


class AuthTest(ServerTestCase):
    api_key = TOKEN

    @classmethod
    def server_flags(cls):
        return common.tiny_chat_model_flags() + [f"--auth_token_file={TOKEN_FILE}"]

    def test_the_right_key_completes_and_streams(self):
        completion = self.client.completions.create(model=self.model, prompt="Hello",
                                                    max_tokens=3,
                                                    extra_body={"ignore_eos": True})
        self.assertEqual(completion.usage.completion_tokens, 3)
        chunks = list(self.client.chat.completions.create(model=self.model, messages=MESSAGES,
                                                          max_tokens=3, stream=True))
        self.assertEqual(chunks[-1].choices[0].finish_reason, "length")

    def test_a_wrong_key_is_an_authentication_error(self):
        wrong = openai.OpenAI(base_url=self.server.base_url, api_key="sk-wrong",
                              max_retries=0, timeout=common.CLIENT_TIMEOUT_S)
        with self.assertRaises(openai.AuthenticationError) as caught:
            wrong.chat.completions.create(model=self.model, messages=MESSAGES, max_tokens=3)
        fields = self.assert_openai_error(caught.exception, 401, code="invalid_api_key")
        self.assertEqual(fields["type"], "invalid_request_error")
        self.assertEqual(caught.exception.response.headers["www-authenticate"],
                         'Bearer error="invalid_token"')
        with self.assertRaises(openai.AuthenticationError):
            wrong.models.list()
        wrong.close()

    def test_health_needs_no_key(self):
        self.assertEqual(self.server.health_status(), 200)


if __name__ == "__main__":
    common.main()
