#!/usr/bin/python3
"""Differential test: kvserve's Jinja interpreter against Python jinja2.

Renders every template in tests/data/chat_templates/ over many conversations
(no system, system, multi-turn, tools with calls and results, Unicode, empty
content, roles the template rejects, add_generation_prompt both ways) with
jinja2 configured as transformers' apply_chat_template configures it, and with
kvserve-render-template (one process per template, all contexts in a batch).
Every case must give identical text, or an error from both; for a template's
raise_exception, the message must match too.

Usage: chat_template_differential_test.py --tool PATH --templates DIR
Run with Debian's /usr/bin/python3 (python3-jinja2).
"""
import argparse
import copy
import datetime
import json
import os
import random
import subprocess
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


class TemplateException(Exception):
    """What raise_exception raises (transformers raises jinja2's TemplateError)."""


def make_environment():
    # transformers' _compile_jinja_template: the same settings, globals and
    # tojson filter (json.dumps without ASCII escaping).
    def raise_exception(message):
        raise TemplateException(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city — «quoted» 天气",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Zürich"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7.5},
            },
            "required": ["city"],
        },
        "return": {"type": "object"},
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "top_k": {"type": "number"}}},
    },
}
TRIP_TOOL = {
    "type": "function",
    "function": {
        "name": "plan_trip",
        "description": "Plan a trip with stops",
        "parameters": {
            "type": "object",
            "properties": {
                "stops": {"type": "array", "items": {"type": "string"}, "description": " ordered stops "},
                "budget": {"type": ["number", "integer"], "description": "EUR"},
                "prefs": {"type": "object", "additionalProperties": {"type": "boolean"}},
                "notes": {"description": "free text"},
            },
            "required": ["stops"],
        },
        "return": {"type": "array", "items": {"type": "object"}, "description": "the itinerary"},
    },
}
TOOLS = [WEATHER_TOOL, SEARCH_TOOL]


def user(text):
    return {"role": "user", "content": text}


def assistant(text):
    return {"role": "assistant", "content": text}


def system(text):
    return {"role": "system", "content": text}


def tool_call(name, arguments, call_id="call12345"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def conversations():
    """(name, messages, extra variables) triples."""
    weather_call = {"role": "assistant", "content": None,
                    "tool_calls": [tool_call("get_weather", {"city": "Paris", "unit": "celsius", "days": 2})]}
    weather_call_empty = {"role": "assistant", "content": "",
                          "tool_calls": [tool_call("get_weather", {"city": "東京"})]}
    two_calls = {"role": "assistant", "content": "Let me check both.",
                 "tool_calls": [tool_call("get_weather", {"city": "Oslo"}, "abcdefghi"),
                                tool_call("search", {"query": "Oslo events", "top_k": 3.0}, "jklmnopqr")]}
    string_args_call = {"role": "assistant", "content": None,
                        "tool_calls": [tool_call("search", '{"query": "raw json"}', "strargs01")]}
    tool_result = {"role": "tool", "tool_call_id": "call12345", "name": "get_weather",
                   "content": '{"temperature": 21.5, "sky": "clear"}'}
    tool_result2 = {"role": "tool", "tool_call_id": "jklmnopqr", "content": "3 events found"}
    tool_result_dict = {"role": "tool", "tool_call_id": "call12345", "content": {"temperature": 21, "ok": True}}
    unicode_text = "Grüße aus Zürich! 你好，世界。 مرحبا 🌍🚀 e\u0301 \u00a0nbsp\u3000 ideographic"
    long_turns = []
    for i in range(12):
        long_turns.append(user(f"Question {i}: what is {i} * {i}?"))
        long_turns.append(assistant(f"{i} * {i} = {i * i}."))
    return [
        ("single_user", [user("Hello!")], {}),
        ("system_user", [system("You are a helpful assistant."), user("Hi there, who are you?")], {}),
        ("multi_turn", [user("Hi"), assistant("Hello! How can I help?"), user("Tell me a joke.")], {}),
        ("system_multi_turn", [system("Be brief."), user("Hi"), assistant("Hello."), user("What's 2+2?"),
                               assistant("4."), user("And 3+3?")], {}),
        ("ends_with_assistant", [user("Hi"), assistant("Hello!")], {}),
        ("whitespace_content", [system("  padded system  \n"), user("\n\n  lots of space \t \n"),
                                assistant("  answer with trailing newline\n")], {}),
        ("unicode", [system("Réponds en français. 🇫🇷"), user(unicode_text),
                     assistant("Привет! こんにちは 😀"), user("\u3000全角スペース\u3000")], {}),
        ("empty_content", [user(""), assistant(""), user("")], {}),
        ("special_chars", [user('Quotes \' and " and backslash \\ and {{ braces }} {% tag %} {# c #}'),
                           assistant("Tabs\tand\r\nCRLF and <|im_end|> literal"), user("</s> [INST] <s>")], {}),
        ("think", [user("Solve it"), assistant("<think>\nLet me think.\n</think>\n\nThe answer is 42."),
                   user("Again?")], {}),
        ("long_conversation", long_turns + [user("Last one.")], {}),
        ("assistant_first", [assistant("I speak first."), user("Odd.")], {}),
        ("two_users", [user("One"), user("Two")], {}),
        ("unknown_role", [user("Hi"), {"role": "narrator", "content": "Meanwhile..."}], {}),
        ("system_only", [system("Only a system prompt.")], {}),
        ("empty_messages", [], {}),
        ("tools_no_calls", [user("What's the weather in Paris?")], {"tools": TOOLS}),
        ("three_tools", [system("Plan."), user("Plan Rome then Naples")], {"tools": TOOLS + [TRIP_TOOL]}),
        ("tools_system", [system("You can use tools."), user("Weather in Paris?")], {"tools": TOOLS}),
        ("tool_call_flow", [user("What's the weather in Paris?"), weather_call, tool_result,
                            assistant("It is 21.5°C and clear in Paris.")], {"tools": TOOLS}),
        ("tool_call_pending", [system("Use tools."), user("Weather in Tokyo?"), weather_call_empty],
         {"tools": [WEATHER_TOOL]}),
        ("parallel_calls", [user("Oslo weather and events?"), two_calls,
                            {"role": "tool", "tool_call_id": "abcdefghi", "content": "Sunny, 12°C"},
                            tool_result2, assistant("Sunny, and 3 events.")], {"tools": TOOLS}),
        ("tool_result_dict", [user("Weather?"), weather_call, tool_result_dict], {"tools": [WEATHER_TOOL]}),
        ("string_arguments", [user("Search for raw json"), string_args_call,
                              {"role": "tool", "tool_call_id": "strargs01", "content": "found"}], {"tools": [SEARCH_TOOL]}),
        ("tool_calls_without_tools", [user("Weather?"), weather_call, tool_result], {}),
        ("builtin_tools", [user("Search the web for kvserve")],
         {"builtin_tools": ["brave_search", "wolfram_alpha", "code_interpreter"], "tools": [SEARCH_TOOL]}),
        ("tools_in_system", [system("sys"), user("Weather?")], {"tools": [WEATHER_TOOL], "tools_in_user_message": False,
                                                                 "date_string": "01 Jan 2025"}),
        ("no_thinking", [user("Quick answer please")], {"enable_thinking": False}),
        ("named_message", [user("Hi"), {"role": "assistant", "content": "Hello", "name": "bot"}], {}),
        ("content_parts", [{"role": "system", "content": [{"type": "text", "text": "Describe images."}]},
                           {"role": "user", "content": [{"type": "text", "text": " What is this? "}, {"type": "image"}]},
                           assistant("A cat."), {"role": "user", "content": [{"type": "text", "text": "Más 🐱"}]}], {}),
        ("none_content", [user("Hi"), {"role": "assistant", "content": None}], {}),
        ("numbers_content", [user("1.0 and 1e16 and -0.0"), assistant("ok")], {"custom_number": 1.0}),
    ]


def random_conversations(count, seed=20261124):
    """Seeded random conversations: role orders templates accept and reject,
    tool calls and results, and content drawn from awkward strings."""
    rng = random.Random(seed)
    texts = ["Hello", "", " padded ", "multi\nline\n\ntext", "emoji 😀🎉 and CJK 漢字かな",
             "tabs\tand\r\nCRLF", "quotes ' \" \\ backslash", "{{ not a tag }} {% nor this %}",
             "<think>\nreasoning\n</think>\n\nanswer", "  \u3000wide space\u00a0", "ÀÉÎÕÜ straße ǅ",
             "<tool_response>x</tool_response>", "1.0", "a" * 300]
    out = []
    for i in range(count):
        messages = []
        if rng.random() < 0.4:
            messages.append(system(rng.choice(texts)))
        for _ in range(rng.randint(0, 7)):
            r = rng.random()
            if r < 0.4:
                messages.append(user(rng.choice(texts)))
            elif r < 0.75:
                messages.append(assistant(rng.choice(texts)))
            elif r < 0.85:
                calls = [tool_call(rng.choice(["get_weather", "search"]),
                                   {"city": rng.choice(texts), "n": rng.choice([1, 2.5, True, None])},
                                   rng.choice(["call12345", "short", "abcdefghi"]))
                         for _ in range(rng.randint(1, 2))]
                messages.append({"role": "assistant", "content": rng.choice([None, "", "Calling."]),
                                 "tool_calls": calls})
            elif r < 0.95:
                messages.append({"role": "tool", "tool_call_id": "call12345", "content": rng.choice(texts)})
            else:
                messages.append({"role": rng.choice(["narrator", "function", "developer"]),
                                 "content": rng.choice(texts)})
        extra = {}
        if rng.random() < 0.3:
            extra["tools"] = rng.choice([TOOLS, [WEATHER_TOOL], [TRIP_TOOL, SEARCH_TOOL], []])
        out.append((f"random{i}", messages, extra))
    return out


def python_render(template, context):
    if isinstance(template, jinja2.TemplateError):
        return {"error": f"syntax: {template}", "exception": False}
    try:
        return {"text": template.render(**context)}
    except TemplateException as e:
        return {"error": str(e), "exception": True}
    except Exception as e:  # jinja2 errors and Python errors inside the template
        return {"error": f"{type(e).__name__}: {e}", "exception": False}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True)
    parser.add_argument("--templates", required=True)
    parser.add_argument("--work-dir", default=None)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    env = make_environment()
    templates = sorted(f for f in os.listdir(args.templates) if f.endswith(".jinja"))
    if len(templates) < 10:
        print(f"expected at least 10 templates in {args.templates}, found {len(templates)}")
        return 1

    contexts, names = [], []
    for name, messages, extra in conversations() + random_conversations(60):
        for add_generation_prompt in (False, True):
            context = {"messages": copy.deepcopy(messages), "add_generation_prompt": add_generation_prompt,
                       "bos_token": "<s>", "eos_token": "</s>"}
            context.update(copy.deepcopy(extra))
            contexts.append(context)
            names.append(f"{name}/agp={add_generation_prompt}")

    total = identical = both_error = 0
    failures = []
    for template_name in templates:
        path = os.path.join(args.templates, template_name)
        with open(path, encoding="utf-8") as f:
            source = f.read()
        proc = subprocess.run([args.tool, "--batch", path, "-"], input=json.dumps(contexts).encode(),
                              capture_output=True, timeout=120)
        if proc.returncode != 0:
            failures.append(f"{template_name}: tool failed: {proc.stderr.decode(errors='replace')}")
            continue
        ours = json.loads(proc.stdout)
        try:
            template = env.from_string(source)
        except jinja2.TemplateError as e:
            template = e
        template_identical = 0
        for case, context, got in zip(names, contexts, ours):
            total += 1
            want = python_render(template, copy.deepcopy(context))
            if "text" in want and "text" in got and want["text"] == got["text"]:
                identical += 1
                template_identical += 1
                continue
            if "error" in want and "error" in got:
                if want["exception"] and (not got["exception"] or got["error"] != want["error"]):
                    failures.append(f"{template_name} {case}: raise_exception message differs:\n"
                                    f"  jinja2:  {want['error']!r}\n  kvserve: {got['error']!r} "
                                    f"(exception={got['exception']})")
                    continue
                both_error += 1
                continue
            failures.append(f"{template_name} {case}:\n  jinja2:  {json.dumps(want, ensure_ascii=False)[:2000]}\n"
                            f"  kvserve: {json.dumps(got, ensure_ascii=False)[:2000]}")
        if args.verbose:
            print(f"{template_name}: {template_identical}/{len(contexts)} identical text")

    print(f"chat template differential test: {len(templates)} templates x {len(contexts)} conversations "
          f"= {total} renders; identical text {identical}, error from both {both_error}, "
          f"mismatches {len(failures)}")
    for failure in failures[:30]:
        print("MISMATCH", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
