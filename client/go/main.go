// Command kvserve-go is the Go example client of kvserve: unary Generate,
// GenerateStream printing text as it arrives, Chat, a per-call deadline,
// cancelling a stream mid-way, a bearer token and TLS. The stubs come from
// proto/kvserve/v1/inference.proto, generated at build time (client/go/CMakeLists.txt).
//
//	kvserve-go [flags] generate|stream|chat|cancel
//
// Every command prints the text, then one summary line:
//
//	token_ids=1,2,3 finish=FINISH_REASON_LENGTH prompt_tokens=4 completion_tokens=3
//
// A failed call prints "error: CODE: the server's message" to stderr and exits 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	pb "kvserve/kvservev1"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

type options struct {
	target, prompt, promptIDs, system string
	maxTokens, cancelAfter            uint
	ignoreEOS                         bool
	deadlineMS                        uint
	conn                              connectionFlags
}

func main() {
	var o options
	flag.StringVar(&o.target, "target", "localhost:50051", "server HOST:PORT")
	flag.StringVar(&o.prompt, "prompt", "Hello", "prompt text (chat: the user message)")
	flag.StringVar(&o.promptIDs, "prompt-ids", "", "comma-separated token ids instead of --prompt")
	flag.StringVar(&o.system, "system", "You are a concise assistant.", "chat: the system message")
	flag.UintVar(&o.maxTokens, "max-tokens", 32, "tokens to generate at most")
	flag.BoolVar(&o.ignoreEOS, "ignore-eos", false, "keep going after end-of-sequence")
	flag.UintVar(&o.deadlineMS, "deadline-ms", 60000, "deadline of each call, in milliseconds")
	flag.UintVar(&o.cancelAfter, "cancel-after", 4, "cancel: tokens to read before cancelling")
	o.conn.register(flag.CommandLine)
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: kvserve-go [flags] generate|stream|chat|cancel   (flags first)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	dialOptions, err := o.conn.dialOptions()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	// Dial does not block: a server that is down shows up as UNAVAILABLE on the first call.
	conn, err := grpc.Dial(o.target, dialOptions...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	defer conn.Close()
	client := pb.NewInferenceClient(conn)

	// Every call gets a deadline: a stuck server must not hang the client.
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(o.deadlineMS)*time.Millisecond)
	defer cancel()
	switch flag.Arg(0) {
	case "generate":
		err = generate(ctx, client, &o)
	case "stream":
		err = stream(ctx, client, &o)
	case "chat":
		err = chat(ctx, client, &o)
	case "cancel":
		err = streamThenCancel(ctx, client, &o)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		os.Exit(reportError(err))
	}
}

func newRequest(o *options) (*pb.GenerateRequest, error) {
	request := &pb.GenerateRequest{
		// Temperature 0 (greedy): the same prompt gives the same tokens, unary or streamed.
		Sampling: &pb.SamplingParams{Temperature: proto.Float32(0)},
		Stopping: &pb.StoppingCriteria{
			MaxNewTokens: proto.Uint32(uint32(o.maxTokens)),
			IgnoreEos:    o.ignoreEOS,
		},
	}
	if o.promptIDs == "" {
		request.Input = &pb.GenerateRequest_Text{Text: o.prompt}
		return request, nil
	}
	ids := &pb.TokenIds{}
	for _, field := range strings.Split(o.promptIDs, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(field), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--prompt-ids: %q is not a token id", field)
		}
		ids.Ids = append(ids.Ids, int32(id))
	}
	request.Input = &pb.GenerateRequest_TokenIds{TokenIds: ids}
	return request, nil
}

func generate(ctx context.Context, client pb.InferenceClient, o *options) error {
	request, err := newRequest(o)
	if err != nil {
		return err
	}
	reply, err := client.Generate(ctx, request)
	if err != nil {
		return err
	}
	fmt.Println(reply.GetText())
	printSummary(reply.GetTokenIds(), reply)
	return nil
}

func stream(ctx context.Context, client pb.InferenceClient, o *options) error {
	request, err := newRequest(o)
	if err != nil {
		return err
	}
	calls, err := client.GenerateStream(ctx, request)
	if err != nil {
		return err
	}
	return printStream(calls)
}

func chat(ctx context.Context, client pb.InferenceClient, o *options) error {
	request := &pb.ChatRequest{
		Messages: []*pb.ChatMessage{
			{Role: "system", Content: o.system},
			{Role: "user", Content: o.prompt},
		},
		Sampling: &pb.SamplingParams{Temperature: proto.Float32(0)},
		Stopping: &pb.StoppingCriteria{MaxNewTokens: proto.Uint32(uint32(o.maxTokens))},
	}
	calls, err := client.ChatStream(ctx, request)
	if err != nil {
		return err
	}
	return printStream(calls)
}

// printStream prints each message's text as soon as it arrives.
func printStream(calls pb.Inference_GenerateStreamClient) error {
	var ids []int32
	for {
		message, err := calls.Recv()
		if err == io.EOF {
			return nil // the server ended the stream after the last message
		}
		if err != nil {
			return err
		}
		fmt.Print(message.GetText())
		ids = append(ids, message.GetTokenIds()...)
		if message.GetFinishReason() != pb.FinishReason_FINISH_REASON_UNSPECIFIED {
			fmt.Println()
			printSummary(ids, message)
		}
	}
}

// streamThenCancel reads a few tokens and cancels the call: the server stops
// generating and frees the request's KV cache blocks.
func streamThenCancel(ctx context.Context, client pb.InferenceClient, o *options) error {
	request, err := newRequest(o)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	calls, err := client.GenerateStream(ctx, request)
	if err != nil {
		return err
	}
	received := 0
	for received < int(o.cancelAfter) {
		message, err := calls.Recv()
		if err != nil {
			if err == io.EOF {
				err = errors.New("the stream finished before --cancel-after tokens")
			}
			return err
		}
		fmt.Print(message.GetText())
		received += len(message.GetTokenIds())
	}
	cancel()
	_, err = calls.Recv() // now fails with CANCELLED, on the client's side
	fmt.Printf("\ncancelled after %d tokens (%s)\n", received, codeName(err))
	return nil
}

func printSummary(ids []int32, last *pb.GenerateResponse) {
	text := make([]string, len(ids))
	for i, id := range ids {
		text[i] = strconv.Itoa(int(id))
	}
	fmt.Printf("token_ids=%s finish=%s prompt_tokens=%d completion_tokens=%d\n",
		strings.Join(text, ","), last.GetFinishReason(), last.GetUsage().GetPromptTokens(),
		last.GetUsage().GetCompletionTokens())
}
