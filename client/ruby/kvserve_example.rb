#!/usr/bin/env ruby
# frozen_string_literal: true

# The Ruby example client of kvserve: unary Generate, GenerateStream printing
# text as it arrives, Chat, a per-call deadline, cancelling a stream mid-way,
# a bearer token and TLS. The stubs come from proto/kvserve/v1/inference.proto,
# generated at build time by grpc_ruby_plugin (client/ruby/CMakeLists.txt):
#
#   ruby -I build/client/ruby/gen client/ruby/kvserve_example.rb [options] generate|stream|chat|cancel
#
# Every command prints the text, then one summary line:
#   token_ids=1,2,3 finish=FINISH_REASON_LENGTH prompt_tokens=4 completion_tokens=3
# A failed call prints "error: CODE: the server's message" to stderr and exits 1.

require 'grpc'
require 'optparse'
require 'kvserve/v1/inference_services_pb'
require_relative 'kvserve_connection'

COMMANDS = %w[generate stream chat cancel].freeze

# What a client usually does about the codes kvserve returns (docs/errors.md).
HINTS = {
  GRPC::Core::StatusCodes::INVALID_ARGUMENT =>
    'the request is wrong: fix the field the message names; retrying will not help',
  GRPC::Core::StatusCodes::RESOURCE_EXHAUSTED =>
    'the server is full (queue or KV cache): retry later, with backoff',
  GRPC::Core::StatusCodes::UNAVAILABLE =>
    'the server is down, starting or draining: retry, or try another replica',
  GRPC::Core::StatusCodes::DEADLINE_EXCEEDED =>
    'the deadline passed first: raise it or ask for fewer tokens',
  GRPC::Core::StatusCodes::UNAUTHENTICATED => "send the server's bearer token (--auth-token-file)"
}.freeze
CODE_NAMES = GRPC::Core::StatusCodes.constants.to_h { |c| [GRPC::Core::StatusCodes.const_get(c), c.to_s] }

def parse_options(argv)
  options = { target: 'localhost:50051', prompt: 'Hello', prompt_ids: nil,
              system: 'You are a concise assistant.', max_tokens: 32, ignore_eos: false,
              deadline_ms: 60_000, cancel_after: 4 }
  parser = OptionParser.new do |o|
    o.banner = "usage: #{$PROGRAM_NAME} [options] #{COMMANDS.join('|')}"
    o.on('--target HOST:PORT') { |v| options[:target] = v }
    o.on('--prompt TEXT', 'prompt text (chat: the user message)') { |v| options[:prompt] = v }
    o.on('--prompt-ids IDS', Array, 'comma-separated token ids instead of --prompt') do |v|
      options[:prompt_ids] = v.map { |id| Integer(id) }
    end
    o.on('--system TEXT', 'chat: the system message') { |v| options[:system] = v }
    o.on('--max-tokens N', Integer) { |v| options[:max_tokens] = v }
    o.on('--ignore-eos', 'keep going after end-of-sequence') { options[:ignore_eos] = true }
    o.on('--deadline-ms N', Integer, 'deadline of each call') { |v| options[:deadline_ms] = v }
    o.on('--cancel-after N', Integer, 'cancel: tokens to read before cancelling') do |v|
      options[:cancel_after] = v
    end
    KvserveConnection.add_options(o, options)
  end
  command, *rest = parser.parse(argv)
  abort(parser.banner) unless COMMANDS.include?(command) && rest.empty?
  [command, options]
rescue OptionParser::ParseError, ArgumentError => e
  abort("error: #{e.message}")
end

# Temperature 0 (greedy): the same prompt gives the same tokens, unary or streamed.
def generate_request(options)
  request = Kvserve::V1::GenerateRequest.new(
    sampling: Kvserve::V1::SamplingParams.new(temperature: 0.0),
    stopping: Kvserve::V1::StoppingCriteria.new(max_new_tokens: options[:max_tokens],
                                                ignore_eos: options[:ignore_eos])
  )
  if options[:prompt_ids]
    request.token_ids = Kvserve::V1::TokenIds.new(ids: options[:prompt_ids])
  else
    request.text = options[:prompt]
  end
  request
end

def chat_request(options)
  Kvserve::V1::ChatRequest.new(
    messages: [Kvserve::V1::ChatMessage.new(role: 'system', content: options[:system]),
               Kvserve::V1::ChatMessage.new(role: 'user', content: options[:prompt])],
    sampling: Kvserve::V1::SamplingParams.new(temperature: 0.0),
    stopping: Kvserve::V1::StoppingCriteria.new(max_new_tokens: options[:max_tokens])
  )
end

def print_summary(ids, last)
  puts "token_ids=#{ids.join(',')} finish=#{last.finish_reason} " \
       "prompt_tokens=#{last.usage&.prompt_tokens.to_i} " \
       "completion_tokens=#{last.usage&.completion_tokens.to_i}"
end

# Prints each message's text as soon as it arrives.
def print_stream(messages)
  ids = []
  messages.each do |message|
    print message.text
    $stdout.flush
    ids.concat(message.token_ids.to_a)
    next if message.finish_reason == :FINISH_REASON_UNSPECIFIED

    puts
    print_summary(ids, message)
  end
end

# Reads a few tokens and cancels the call: the server stops generating and
# frees the request's KV cache blocks.
def stream_then_cancel(stub, options, call_options)
  operation = stub.generate_stream(generate_request(options), return_op: true, **call_options)
  received = 0
  operation.execute.each do |message|
    print message.text
    received += message.token_ids.size
    break if received >= options[:cancel_after]
  end
  raise 'the stream finished before --cancel-after tokens' if received < options[:cancel_after]

  operation.cancel
  puts "\ncancelled after #{received} tokens (CANCELLED)"
end

def main
  command, options = parse_options(ARGV)
  credentials, keywords = KvserveConnection.credentials(options)
  stub = Kvserve::V1::Inference::Stub.new(options[:target], credentials, **keywords)
  # Every call gets a deadline: a stuck server must not hang the client.
  deadline = Time.now + options[:deadline_ms] / 1000.0
  call_options = { deadline: deadline, metadata: KvserveConnection.metadata(options) }
  case command
  when 'generate'
    reply = stub.generate(generate_request(options), **call_options)
    puts reply.text
    print_summary(reply.token_ids.to_a, reply)
  when 'stream' then print_stream(stub.generate_stream(generate_request(options), **call_options))
  when 'chat' then print_stream(stub.chat_stream(chat_request(options), **call_options))
  when 'cancel' then stream_then_cancel(stub, options, call_options)
  end
rescue GRPC::BadStatus => e
  report(e.code, e.details)
rescue GRPC::Core::CallError => e
  # ruby-grpc 1.51 sometimes fails this way instead of raising
  # GRPC::DeadlineExceeded when a stream's deadline passes before its first
  # message (a read still outstanding when it asks for the status).
  raise unless deadline && Time.now >= deadline

  report(GRPC::Core::StatusCodes::DEADLINE_EXCEEDED, "Deadline Exceeded (ruby-grpc: #{e.message})")
end

def report(code, details)
  warn "error: #{CODE_NAMES.fetch(code, code)}: #{details}"
  warn "hint: #{HINTS[code]}" if HINTS.key?(code)
  exit 1
end

main if $PROGRAM_NAME == __FILE__
