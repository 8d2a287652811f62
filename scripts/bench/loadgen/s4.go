package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// runS4Create creates o.topics topics of o.partitions partitions (o.createBatch topics per CreateTopics request),
// then writes one record (acks=all) to every partition: global partition g = t*P+p gets seq g at offset 0.
// create_ms: the CreateTopics requests; writable_ms: from the first request to the last record acknowledged.
func runS4Create(ctx context.Context, o options) (summary, error) {
	start := time.Now()
	if err := createTopics(ctx, o, nil); err != nil {
		return nil, err
	}
	created := sinceMs(start)
	po := o
	po.acks = "all"
	cl, err := newClient(append(producerOpts(po), kgo.RecordDeliveryTimeout(20*time.Minute))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var failed firstError
	topics := soakTopics(o)
	for g := 0; g < o.topics*o.partitions; g++ {
		rec := &kgo.Record{Topic: topics[g/o.partitions], Partition: int32(g % o.partitions),
			Value: value(make([]byte, o.size), int64(g), 0)}
		cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
			if err != nil {
				failed.set(fmt.Errorf("produce to %s/%d: %w", r.Topic, r.Partition, err))
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return nil, err
	}
	if err := failed.get(); err != nil {
		return nil, err
	}
	return summary{"mode": "s4-create", "partitions": o.topics * o.partitions, "create_ms": created,
		"writable_ms": sinceMs(start), "verified": true}, nil
}

// runS4Check waits until every partition of the s4 topics reports end offset 1 (ready_unix_ms: when it first
// did), then sends o.metadataRequests Metadata requests for all topics one after another (their latency),
// then reads every partition's record back and checks it (unless -verify=false).
func runS4Check(ctx context.Context, o options) (summary, error) {
	cl, err := newClient(kgo.SeedBrokers(o.bootstrap), kgo.RequestTimeoutOverhead(time.Minute))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	admin := kadm.NewClient(cl)
	topics := soakTopics(o)
	want := o.topics * o.partitions
	deadline := time.Now().Add(20 * time.Minute)
	var lastProblem error
	for {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("partitions not all ready after 20 minutes: %v", lastProblem)
		}
		ends, err := admin.ListEndOffsets(ctx, topics...)
		lastProblem = err
		if err == nil {
			ready := 0
			ends.Each(func(l kadm.ListedOffset) {
				switch {
				case l.Err != nil:
					lastProblem = fmt.Errorf("%s/%d: %w", l.Topic, l.Partition, l.Err)
				case l.Offset != 1:
					lastProblem = fmt.Errorf("%s/%d: end offset %d, want 1", l.Topic, l.Partition, l.Offset)
				default:
					ready++
				}
			})
			if ready == want {
				break
			}
			if lastProblem == nil {
				lastProblem = fmt.Errorf("%d of %d partitions listed", ready, want)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	readyAt := time.Now()
	brokers := cl.DiscoveredBrokers()
	if len(brokers) == 0 {
		return nil, fmt.Errorf("no broker discovered")
	}
	latencies := make([]float64, 0, o.metadataRequests)
	partitions := 0
	for i := 0; i < o.metadataRequests; i++ {
		req := kmsg.NewPtrMetadataRequest() // no topics: all of them
		sent := time.Now()
		resp, err := brokers[0].Request(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		latencies = append(latencies, sinceMs(sent))
		partitions = 0
		for _, t := range resp.(*kmsg.MetadataResponse).Topics {
			partitions += len(t.Partitions)
		}
	}
	if partitions < want {
		return nil, fmt.Errorf("metadata lists %d partitions, want at least %d", partitions, want)
	}
	s := summary{"mode": "s4-check", "ready_unix_ms": readyAt.UnixMilli(), "partitions": want, "verified": false}
	addPercentiles(s, "metadata", latencies)
	if o.verify {
		consumer, err := newClient(kgo.SeedBrokers(o.bootstrap), kgo.ConsumeTopics(topics...),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			return nil, err
		}
		defer consumer.Close()
		produced := make([]int64, want)
		for g := range produced {
			produced[g] = 1
		}
		done := make(chan struct{})
		close(done)
		if err := readAll(ctx, consumer, newGlobalChecker(o), done, produced); err != nil {
			return nil, fmt.Errorf("read-back: %w", err)
		}
		s["verified"] = true
	}
	return s, nil
}
