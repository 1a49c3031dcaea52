#!/usr/bin/env python3
"""Tool calling through the official `openai` client (docs/structured_outputs.md,
"Tool calling"): bad tools, tool_choice values and conversation tool calls are
openai.BadRequestError naming the parameter; a tool_choice naming a function
comes back as one tool call of OpenAI's shape (unstreamed: message.tool_calls,
finish_reason; streamed: a first delta with id, type and name, then argument
fragments), and a conversation with an assistant's tool_calls and a tool
result is accepted. On SmolLM2 (a real model), the forced call's arguments
parse and validate against the function's parameters schema (Python
`jsonschema`), streamed and not, at temperature 0 and 0.8."""
import json
import os
import re
import sys
import unittest

import openai

import common
from common import ServerTestCase

try:
    import jsonschema
except ImportError:  # the venv has only `openai`: Debian's python3-jsonschema
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import jsonschema
    except ImportError:
        jsonschema = None

GGUF = os.environ.get("KVSERVE_SMOLLM2_GGUF", "")
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 20},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
    },
}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"tz": {"type": "string", "maxLength": 8}},
    "required": ["tz"], "additionalProperties": False}}}
NAMED = {"type": "function", "function": {"name": "get_weather"}}
CALL_ID = re.compile(r"call_[0-9A-Za-z]{24}")


PENDING = "is not supported by this build"  # engine/grammar/converters_pending.cc


def create(test, **kwargs):
    """chat.completions.create, skipping the test while this build's grammar
    engine lacks the JSON Schema converter (UNIMPLEMENTED, a 500 saying so):
    named and "required" tool choices are json_schema constraints."""
    try:
        return test.client.chat.completions.create(**kwargs)
    except openai.InternalServerError as error:
        if PENDING in str(error):
            test.skipTest(f"the JSON Schema constraint is not in this build yet: {error}")
        raise


def streamed_calls(stream):
    """The streamed tool calls reassembled as a client does, the content,
    the finish reason, and the deltas in order."""
    calls, content, finish, deltas = {}, "", None, []
    for chunk in stream:
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        content += choice.delta.content or ""
        for d in choice.delta.tool_calls or []:
            deltas.append(d)
            call = calls.setdefault(d.index, {"id": None, "name": None, "arguments": ""})
            if d.id:
                call["id"] = d.id
            if d.function and d.function.name:
                call["name"] = d.function.name
            if d.function and d.function.arguments:
                call["arguments"] += d.function.arguments
        finish = choice.finish_reason or finish
    return [calls[i] for i in sorted(calls)], content, finish, deltas


class ToolRequestsTest(ServerTestCase):
    """The tiny random fixture with Qwen2.5's template (hermes tool calls):
    request validation and the reply's shape (its text is noise, so the
    arguments are not checked here)."""

    @classmethod
    def server_flags(cls):
        return [f"--model={common.data_path('tiny-qwen2')}",
                f"--chat_template={common.data_path('chat_templates', 'qwen2.5.jinja')}"]

    def bad_chat(self, param, **kwargs):
        with self.assertRaises(openai.BadRequestError) as caught:
            self.client.chat.completions.create(model=self.model, max_completion_tokens=4,
                                                **kwargs)
        return self.assert_openai_error(caught.exception, 400, param=param)

    def test_bad_tools_are_refused_by_name(self):
        for tools, expected in [
            ([{"type": "function", "function": {"name": "has space"}}],
             "tools[0].function.name"),
            ([{"type": "function", "function": {"name": "x" * 65}}], "tools[0].function.name"),
            ([{"type": "function", "function": {"description": "no name"}}],
             "tools[0].function.name"),
            ([WEATHER, {"type": "code_interpreter"}], "tools[1].type"),
            ([{"type": "function", "function": {"name": "f", "parameters": "none"}}],
             "tools[0].function.parameters"),
            ([{"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}],
             "tools[0].function.parameters"),
        ]:
            fields = self.bad_chat("tools", messages=MESSAGES, tools=tools)
            self.assertIn(expected, fields["message"])
        self.bad_chat("tools", messages=MESSAGES, tools={"type": "function"})

    def test_bad_tool_choices_are_refused_by_name(self):
        for tools, choice, expected in [
            ([WEATHER], "sometimes", "tool_choice must be"),
            ([WEATHER], {"type": "function", "function": {"name": "get_time"}}, "get_time"),
            ([WEATHER], {"type": "function"}, "tool_choice.function.name"),
            ([WEATHER], {"type": "retrieval", "function": {"name": "get_weather"}},
             "tool_choice.type"),
            (None, "required", "tool_choice needs tools"),
            (None, NAMED, "tool_choice needs tools"),
        ]:
            kwargs = {"tools": tools} if tools else {}
            fields = self.bad_chat("tool_choice", messages=MESSAGES, tool_choice=choice, **kwargs)
            self.assertIn(expected, fields["message"])
        self.bad_chat("parallel_tool_calls", messages=MESSAGES, tools=[WEATHER],
                      parallel_tool_calls="yes")

    def test_forced_call_cannot_take_another_constraint(self):
        kwargs = dict(model=self.model, messages=MESSAGES, tools=[WEATHER], tool_choice="required",
                      max_completion_tokens=4, extra_body={"guided_regex": "a+"})
        try:
            create(self, **kwargs)
        except openai.BadRequestError as error:
            fields = self.assert_openai_error(error, 400, param="tool_choice")
            self.assertIn("cannot be combined", fields["message"])
            return
        self.skipTest("this build ignores guided_regex (the HTTP constraint parameters of "
                      "issue 24 are not merged): nothing to conflict with")

    def test_bad_conversation_tool_calls_are_refused_by_name(self):
        call = {"id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\": "}}
        fields = self.bad_chat("messages", messages=MESSAGES + [
            {"role": "assistant", "content": None, "tool_calls": [call]}])
        self.assertIn("messages[1].tool_calls[0].function.arguments", fields["message"])
        fields = self.bad_chat("messages", messages=MESSAGES + [
            {"role": "assistant", "tool_calls": [{"type": "function", "function": {}}]}])
        self.assertIn("messages[1].tool_calls[0].function.name", fields["message"])

    def test_conversation_with_tool_calls_and_results_is_accepted(self):
        response = self.client.chat.completions.create(
            model=self.model, max_completion_tokens=4, temperature=0, tools=[WEATHER],
            messages=MESSAGES + [
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_abc", "type": "function", "function": {
                        "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
                {"role": "tool", "tool_call_id": "call_abc", "content": "sunny"}])
        self.assertEqual(response.choices[0].finish_reason, "length")

    def test_named_tool_choice_is_one_call_of_openais_shape(self):
        kwargs = dict(model=self.model, messages=MESSAGES, tools=[WEATHER, TIME],
                      tool_choice=NAMED, max_completion_tokens=6, temperature=0)
        response = create(self, **kwargs)
        choice = response.choices[0]
        self.assertIsNone(choice.message.content)
        self.assertEqual(len(choice.message.tool_calls), 1)
        call = choice.message.tool_calls[0]
        self.assertRegex(call.id, CALL_ID)
        self.assertEqual(call.type, "function")
        self.assertEqual(call.function.name, "get_weather")
        self.assertIsInstance(call.function.arguments, str)
        # Cut by max_completion_tokens: "length" (else "tool_calls").
        self.assertIn(choice.finish_reason, {"length", "tool_calls"})

        calls, content, finish, deltas = streamed_calls(
            self.client.chat.completions.create(stream=True, **kwargs))
        self.assertEqual(content, "")
        self.assertEqual(len(calls), 1)
        self.assertRegex(calls[0]["id"], CALL_ID)
        self.assertEqual(calls[0]["name"], "get_weather")
        self.assertEqual(calls[0]["arguments"], call.function.arguments)  # greedy: same text
        first = deltas[0]
        self.assertEqual((first.index, first.type, first.function.arguments),
                         (0, "function", ""))
        self.assertTrue(all(d.id is None and d.function.name is None for d in deltas[1:]))
        self.assertEqual(finish, choice.finish_reason)

    def test_auto_parses_the_models_hermes_calls(self):
        """A GBNF grammar makes the random model write a sentence and two
        hermes calls; "auto" turns them into content and tool_calls, and the
        stream sends the content, then each call whole as it closes."""
        call = ('<tool_call>\\n{\\"name\\": \\"get_weather\\", \\"arguments\\": '
                '{\\"city\\": \\"%s\\", \\"unit\\": \\"celsius\\"}}\\n</tool_call>')
        grammar = 'root ::= "Checking.\\n%s\\n%s"' % (call % "Paris", call % "Oslo")
        kwargs = dict(model=self.model, messages=MESSAGES, tools=[WEATHER],
                      max_completion_tokens=300, temperature=0,
                      extra_body={"guided_grammar": grammar})
        response = self.client.chat.completions.create(**kwargs)
        choice = response.choices[0]
        self.assertEqual(choice.message.content, "Checking.")
        self.assertEqual(choice.finish_reason, "tool_calls")
        got = [(c.type, c.function.name, json.loads(c.function.arguments))
               for c in choice.message.tool_calls]
        self.assertEqual(got, [("function", "get_weather", {"city": city, "unit": "celsius"})
                               for city in ("Paris", "Oslo")])
        for c in choice.message.tool_calls:
            self.assertRegex(c.id, CALL_ID)

        calls, content, finish, deltas = streamed_calls(
            self.client.chat.completions.create(stream=True, **kwargs))
        self.assertEqual(content.strip(), "Checking.")
        self.assertEqual(finish, "tool_calls")
        self.assertEqual([(c["name"], json.loads(c["arguments"])) for c in calls],
                         [(name, args) for _, name, args in got])
        self.assertEqual(len(deltas), 2)  # each call whole, in one delta
        self.assertEqual([d.index for d in deltas], [0, 1])

    def test_tool_choice_none_is_plain_text(self):
        response = self.client.chat.completions.create(
            model=self.model, messages=MESSAGES, tools=[WEATHER], tool_choice="none",
            max_completion_tokens=4, temperature=0)
        self.assertIsNone(response.choices[0].message.tool_calls)
        self.assertIsInstance(response.choices[0].message.content, str)


@unittest.skipUnless(os.path.isfile(GGUF), f"no SmolLM2 GGUF at {GGUF!r} (offline?)")
@unittest.skipIf(jsonschema is None, "no jsonschema module (apt install python3-jsonschema)")
class SmolLM2ForcedToolCallTest(ServerTestCase):
    """A real model under the constraint: the forced call's arguments are
    JSON that validates against the function's parameters schema."""

    @classmethod
    def server_flags(cls):
        return [f"--model={GGUF}"]

    def check_call(self, call, tool):
        self.assertRegex(call["id"], CALL_ID)
        self.assertEqual(call["name"], tool["function"]["name"])
        arguments = json.loads(call["arguments"])
        jsonschema.validate(arguments, tool["function"]["parameters"])

    def test_named_function_arguments_validate(self):
        for temperature in (0, 0.8):
            kwargs = dict(model=self.model, messages=MESSAGES, tools=[WEATHER, TIME],
                          tool_choice=NAMED, max_completion_tokens=64, temperature=temperature,
                          seed=7)
            response = create(self, **kwargs)
            choice = response.choices[0]
            self.assertEqual(choice.finish_reason, "tool_calls", choice)
            self.assertEqual(len(choice.message.tool_calls), 1)
            c = choice.message.tool_calls[0]
            self.check_call({"id": c.id, "name": c.function.name,
                             "arguments": c.function.arguments}, WEATHER)
            calls, content, finish, _ = streamed_calls(
                self.client.chat.completions.create(stream=True, **kwargs))
            self.assertEqual((content, finish, len(calls)), ("", "tool_calls", 1))
            self.check_call(calls[0], WEATHER)

    def test_required_calls_validate(self):
        tools = {"get_weather": WEATHER, "get_time": TIME}
        for parallel in (False, True):
            kwargs = dict(model=self.model, messages=MESSAGES, tools=list(tools.values()),
                          tool_choice="required", parallel_tool_calls=parallel,
                          max_completion_tokens=128, temperature=0)
            response = create(self, **kwargs)
            choice = response.choices[0]
            self.assertEqual(choice.finish_reason, "tool_calls", choice)
            self.assertGreaterEqual(len(choice.message.tool_calls), 1)
            if not parallel:
                self.assertEqual(len(choice.message.tool_calls), 1)
            for c in choice.message.tool_calls:
                self.check_call({"id": c.id, "name": c.function.name,
                                 "arguments": c.function.arguments}, tools[c.function.name])
            calls, _, finish, _ = streamed_calls(
                self.client.chat.completions.create(stream=True, **kwargs))
            self.assertEqual(finish, "tool_calls")
            self.assertEqual([c["name"] for c in calls],
                             [c.function.name for c in choice.message.tool_calls])
            for c in calls:
                self.check_call(c, tools[c["name"]])


if __name__ == "__main__":
    common.main()
