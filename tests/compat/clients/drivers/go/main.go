// Command franzgo-driver is the franz-go driver of the kbroker compatibility suite.
//
// "franzgo-driver serve" answers JSON-line commands on stdin; "franzgo-driver <op> [json]" runs one
// command (arguments from argv or stdin) and exits 1 on error. Commands: docs/compatibility.md.
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Request holds the arguments of every command; each command reads the fields it needs.
type Request struct {
	Op          string            `json:"op"`
	Bootstrap   string            `json:"bootstrap"`
	Security    *Security         `json:"security"`
	Topic       string            `json:"topic"`
	Records     []Rec             `json:"records"`
	Acks        string            `json:"acks"`
	Compression string            `json:"compression"`
	Partitions  json.RawMessage   `json:"partitions"` // a count for create_topic, a list for consume
	Start       json.RawMessage   `json:"start"`
	MaxRecords  int               `json:"max_records"`
	TimeoutMs   int64             `json:"timeout_ms"`
	Reset       string            `json:"reset"`
	Configs     map[string]string `json:"configs"`
	Key         string            `json:"key"`
	Value       string            `json:"value"`
	Total       int               `json:"total"`
	Partition   int32             `json:"partition"`
	Spec        json.RawMessage   `json:"spec"`
	Before      int64             `json:"before"`
	// Groups and transactions.
	ID                  string           `json:"id"`
	Group               string           `json:"group"`
	SessionTimeoutMs    int64            `json:"session_timeout_ms"`
	HeartbeatIntervalMs int64            `json:"heartbeat_interval_ms"`
	Assignor            string           `json:"assignor"`
	InstanceID          *string          `json:"instance_id"`
	Protocol            string           `json:"protocol"`
	TopicRegex          *string          `json:"topic_regex"`
	Isolation           string           `json:"isolation"`
	Offsets             map[string]int64 `json:"offsets"`
	TransactionalID     string           `json:"transactional_id"`
	Idempotent          bool             `json:"idempotent"`
	PaceMs              int64            `json:"pace_ms"`
}

// Rec is a record in the drivers' JSON form: base64 bytes, null for absent.
type Rec struct {
	Partition *int32      `json:"partition"`
	Offset    *int64      `json:"offset,omitempty"`
	Timestamp *int64      `json:"timestamp"`
	Key       *string     `json:"key"`
	Value     *string     `json:"value"`
	Headers   [][]*string `json:"headers"`
}

type answer map[string]any

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: franzgo-driver serve | franzgo-driver <op> [json-arguments]")
		os.Exit(2)
	}
	if os.Args[1] == "serve" {
		serve(os.Stdin, os.Stdout)
		return
	}
	var body []byte
	if len(os.Args) > 2 {
		body = []byte(os.Args[2])
	} else {
		body, _ = io.ReadAll(os.Stdin)
	}
	req := Request{}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			fail(os.Stdout, err)
			os.Exit(1)
		}
	}
	req.Op = os.Args[1]
	out := handle(req)
	write(os.Stdout, out)
	if out["ok"] != true {
		os.Exit(1)
	}
}

func serve(in io.Reader, out io.Writer) {
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), 256<<20)
	for scanner.Scan() {
		line := scanner.Bytes()
		if len(line) == 0 {
			continue
		}
		req := Request{}
		if err := json.Unmarshal(line, &req); err != nil {
			fail(out, err)
			continue
		}
		write(out, handle(req))
	}
}

func handle(req Request) (out answer) {
	defer func() {
		if r := recover(); r != nil {
			out = errorAnswer(fmt.Errorf("panic: %v", r))
		}
	}()
	var err error
	switch req.Op {
	case "produce":
		out, err = produce(req)
	case "consume":
		out, err = consume(req)
	case "partitions_for":
		out, err = partitionsFor(req)
	case "member_open":
		out, err = memberOpen(req)
	case "member_take":
		out, err = memberTake(req)
	case "member_commit":
		out, err = memberCommit(req)
	case "member_close":
		out, err = memberClose(req)
	case "describe_group":
		out, err = describeGroup(req)
	case "txn_open":
		out, err = txnOpen(req)
	case "txn_begin", "txn_send", "txn_offsets", "txn_commit", "txn_abort", "txn_close":
		out, err = txnOp(req)
	default:
		out, err = adminOp(req)
	}
	if err != nil {
		return errorAnswer(err)
	}
	out["ok"] = true
	return out
}

func errorAnswer(err error) answer {
	return answer{"ok": false, "error": map[string]string{"kind": kind(err), "message": err.Error()}}
}

func kind(err error) string {
	switch {
	case errors.Is(err, kerr.OffsetOutOfRange):
		return "offset_out_of_range"
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return "message_too_large"
	case errors.Is(err, kerr.TopicAlreadyExists):
		return "topic_exists"
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return "unknown_topic"
	case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch):
		return "fenced"
	case errors.Is(err, kerr.UnsupportedVersion):
		return "unsupported"
	case errors.Is(err, kerr.SaslAuthenticationFailed), strings.Contains(err.Error(), "tls: "):
		return "authentication" // a refused SASL login, or the broker's TLS alert
	}
	return "other"
}

func fail(out io.Writer, err error) { write(out, errorAnswer(err)) }

func write(out io.Writer, a answer) {
	data, err := json.Marshal(a)
	if err != nil {
		data, _ = json.Marshal(errorAnswer(err))
	}
	out.Write(append(data, '\n'))
}

func b64(data []byte) *string {
	if data == nil {
		return nil
	}
	s := base64.StdEncoding.EncodeToString(data)
	return &s
}

func unb64(s *string) ([]byte, error) {
	if s == nil {
		return nil, nil
	}
	data, err := base64.StdEncoding.DecodeString(*s)
	if data == nil && err == nil {
		data = []byte{}
	}
	return data, err
}
