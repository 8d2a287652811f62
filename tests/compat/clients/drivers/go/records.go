package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.NoCompression(), fmt.Errorf("unknown compression %q", name)
}

func producerOpts(req Request) ([]kgo.Opt, error) {
	c, err := codec(req.Compression)
	if err != nil {
		return nil, err
	}
	if req.Idempotent && req.Acks != "" && req.Acks != "all" && req.Acks != "-1" {
		return nil, fmt.Errorf("an idempotent producer needs acks=all")
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(req.Bootstrap),
		kgo.ProducerBatchCompression(c),
		kgo.ProducerLinger(5 * time.Millisecond),
		// franz-go does not ask for auto-creation unless told; the other clients' producers do by default.
		kgo.AllowAutoTopicCreation(),
	}
	switch req.Acks {
	case "", "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("unknown acks %q", req.Acks)
	}
	for _, r := range req.Records {
		if r.Partition != nil {
			opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			break
		}
	}
	secure, err := securityOpts(req.Security)
	if err != nil {
		return nil, err
	}
	return append(opts, secure...), nil
}

func toRecord(topic string, r Rec) (*kgo.Record, error) {
	key, err := unb64(r.Key)
	if err != nil {
		return nil, err
	}
	value, err := unb64(r.Value)
	if err != nil {
		return nil, err
	}
	rec := &kgo.Record{Topic: topic, Key: key, Value: value}
	if r.Key == nil {
		rec.Key = nil
	}
	if r.Value == nil {
		rec.Value = nil
	}
	if r.Partition != nil {
		rec.Partition = *r.Partition
	}
	if r.Timestamp != nil {
		rec.Timestamp = time.UnixMilli(*r.Timestamp)
	}
	for _, h := range r.Headers {
		v, err := unb64(h[1])
		if err != nil {
			return nil, err
		}
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: *h[0], Value: v})
	}
	return rec, nil
}

func produce(req Request) (answer, error) {
	opts, err := producerOpts(req)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	if err := authenticated(cl, req.Security); err != nil {
		return nil, err
	}
	records := make([]*kgo.Record, 0, len(req.Records))
	for _, r := range req.Records {
		rec, err := toRecord(req.Topic, r)
		if err != nil {
			return nil, err
		}
		records = append(records, rec)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if req.PaceMs > 0 {
		// A long run: one record at a time, a pause after each, all acks awaited at the end.
		var wg sync.WaitGroup
		var mu sync.Mutex
		var failure error
		for _, rec := range records {
			wg.Add(1)
			cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				if err != nil && failure == nil {
					failure = err
				}
				mu.Unlock()
			})
			time.Sleep(time.Duration(req.PaceMs) * time.Millisecond)
		}
		wg.Wait()
		if failure != nil {
			return nil, failure
		}
	} else if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		return nil, err
	}
	// ProduceSync answers in completion order; report in the order the records were given.
	offsets := make([][2]int64, len(records))
	for i, rec := range records {
		offset := rec.Offset
		if req.Acks == "0" {
			offset = -1
		}
		offsets[i] = [2]int64{int64(rec.Partition), offset}
	}
	return answer{"offsets": offsets}, nil
}

func startOffsets(req Request) (map[int32]kgo.Offset, error) {
	out := map[int32]kgo.Offset{}
	var partitions []int32
	if err := json.Unmarshal(req.Partitions, &partitions); err != nil {
		return nil, err
	}
	var named string
	if err := json.Unmarshal(req.Start, &named); err == nil {
		for _, p := range partitions {
			switch named {
			case "earliest":
				out[p] = kgo.NewOffset().AtStart()
			case "latest":
				out[p] = kgo.NewOffset().AtEnd()
			default:
				return nil, fmt.Errorf("unknown start %q", named)
			}
		}
		return out, nil
	}
	explicit := map[string]int64{}
	if err := json.Unmarshal(req.Start, &explicit); err != nil {
		return nil, err
	}
	for p, o := range explicit {
		partition, err := strconv.Atoi(p)
		if err != nil {
			return nil, err
		}
		out[int32(partition)] = kgo.NewOffset().At(o)
	}
	return out, nil
}

func resetOffset(reset string) (kgo.Offset, error) {
	switch reset {
	case "", "earliest":
		return kgo.NewOffset().AtStart(), nil
	case "latest":
		return kgo.NewOffset().AtEnd(), nil
	case "none":
		return kgo.NoResetOffset(), nil
	}
	return kgo.Offset{}, fmt.Errorf("unknown reset %q", reset)
}

func consume(req Request) (answer, error) {
	starts, err := startOffsets(req)
	if err != nil {
		return nil, err
	}
	reset, err := resetOffset(req.Reset)
	if err != nil {
		return nil, err
	}
	secure, err := securityOpts(req.Security)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(req.Bootstrap),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{req.Topic: starts}),
		kgo.ConsumeResetOffset(reset),
		kgo.FetchMaxWait(200 * time.Millisecond),
		isolation(req.Isolation),
	}, secure...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(req.TimeoutMs)*time.Millisecond)
	defer cancel()
	records := []Rec{}
	out := answer{"positions": nil}
	for len(records) < req.MaxRecords && ctx.Err() == nil {
		fetches := cl.PollRecords(ctx, req.MaxRecords-len(records))
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				continue
			}
			out["records"] = records
			out["error"] = map[string]string{"kind": kind(fe.Err), "message": fe.Err.Error()}
			return out, nil
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if len(records) < req.MaxRecords {
				records = append(records, fromRecord(r))
			}
		})
	}
	out["records"] = records
	return out, nil
}

func fromRecord(r *kgo.Record) Rec {
	partition, offset, ts := r.Partition, r.Offset, r.Timestamp.UnixMilli()
	out := Rec{Partition: &partition, Offset: &offset, Timestamp: &ts, Key: b64(r.Key), Value: b64(r.Value)}
	out.Headers = [][]*string{}
	for _, h := range r.Headers {
		key := h.Key
		out.Headers = append(out.Headers, []*string{&key, b64(h.Value)})
	}
	return out
}

// partitionsFor sends a Metadata request that allows auto-creation until the topic has partitions.
func partitionsFor(req Request) (answer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(req.Bootstrap), kgo.AllowAutoTopicCreation())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		metadata := kmsg.NewPtrMetadataRequest()
		topic := kmsg.NewMetadataRequestTopic()
		topic.Topic = kmsg.StringPtr(req.Topic)
		metadata.Topics = append(metadata.Topics, topic)
		metadata.AllowAutoTopicCreation = true
		resp, err := metadata.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		for _, t := range resp.Topics {
			if t.Topic != nil && *t.Topic == req.Topic && t.ErrorCode == 0 && len(t.Partitions) > 0 {
				ids := []int32{}
				for _, p := range t.Partitions {
					ids = append(ids, p.Partition)
				}
				return answer{"partitions": ids}, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func isolation(level string) kgo.Opt {
	if level == "read_committed" {
		return kgo.FetchIsolationLevel(kgo.ReadCommitted())
	}
	return kgo.FetchIsolationLevel(kgo.ReadUncommitted())
}
