#!/usr/bin/env python3
"""A real trained model through the `openai` client: SmolLM2-135M-Instruct
(GGUF, its own chat template) answers that the capital of France is Paris,
unstreamed and streamed. Skipped (77) when the model could not be fetched."""
import os
import sys

import common
from common import ServerTestCase

GGUF = os.environ.get("KVSERVE_SMOLLM2_GGUF", "")
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


class SmolLM2ChatTest(ServerTestCase):
    @classmethod
    def server_flags(cls):
        # float32 activations: this 135M model at 4 bits loops on the question
        # with int8 ones (as llama.cpp does); this test is the chat API's.
        return [f"--model={GGUF}", "--cpu_activations=float32"]

    def test_the_capital_of_france_is_paris(self):
        response = self.client.chat.completions.create(
            model=self.model, messages=QUESTION, max_completion_tokens=32, temperature=0)
        answer = response.choices[0].message.content
        self.assertIn("Paris", answer)
        self.assertEqual(response.choices[0].finish_reason, "stop", answer)  # its end of turn
        streamed = "".join(
            chunk.choices[0].delta.content or ""
            for chunk in self.client.chat.completions.create(
                model=self.model, messages=QUESTION, max_completion_tokens=32, temperature=0,
                stream=True)
            if chunk.choices)
        self.assertEqual(streamed, answer)


if __name__ == "__main__":
    if not os.path.isfile(GGUF):
        print(f"no SmolLM2 GGUF at {GGUF!r} (offline?): skipped")
        sys.exit(common.SKIP)
    common.main()
