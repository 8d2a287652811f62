package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	probePartition = 0 // the probe producer's records: one unique key each, never compacted away
	churnPartition = 1 // the churn: many updates per key, what the cleaner works on
)

// runCleaner measures produce and end-to-end latency while a log cleaner works. The topic (created by main
// with -topic-configs, 2 partitions) is compacted, or not for the baseline. Partition 1 gets the churn:
// o.churnRate records/s, key k%05d (seq mod o.keys), acks=1, linger 5 ms. Partition 0 gets the probe: o.rate
// records/s with a unique key each, acks as -acks, linger 0, tailed by a consumer. After o.warm untimed the
// probe's ack and end-to-end latencies are measured for o.duration. Then every probe record is checked (dense
// offsets, in order) and the churn partition is read back from its start: offsets and sequence numbers
// rise, each key matches its sequence number, and each key's last record is the last one written for it.
// window_start_unix_ms / window_end_unix_ms tell the caller when the measured window was (it checks that
// the cleaner worked then).
func runCleaner(ctx context.Context, o options) (summary, error) {
	if o.partitions != 2 {
		return nil, fmt.Errorf("cleaner mode needs -partitions 2")
	}
	warm := int64(o.warm.Seconds() * float64(o.rate))
	probeTotal := warm + int64(o.duration.Seconds()*float64(o.rate))
	t, err := newTail(o, probePartition)
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	var failed firstError
	var probed int64
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		if err := t.run(ctx, done, func() int64 { return probed }); err != nil {
			failed.set(err)
		}
	}()
	time.Sleep(time.Second)

	stopChurn := make(chan struct{})
	churnDone := make(chan int64, 1)
	go func() { churnDone <- churn(ctx, o, stopChurn, &failed) }()

	po := o
	po.linger = 0
	prod, err := newClient(producerOpts(po)...)
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	var mu sync.Mutex
	acks := make([]float64, 0, probeTotal)
	interval := time.Second / time.Duration(o.rate)
	start := time.Now()
	var cpu0 cpuTimes
	var windowStart time.Time
	for k := int64(0); k < probeTotal && failed.get() == nil; k++ {
		if wait := time.Until(start.Add(time.Duration(k) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		if k == warm {
			cpu0, windowStart = takeCPU(o.brokerPid), time.Now()
		}
		sent := time.Now()
		seq := int64(probePartition) + k*2
		rec := &kgo.Record{Partition: probePartition, Key: []byte(fmt.Sprintf("p%012d", k)),
			Value: value(make([]byte, o.size), seq, sent.UnixNano())}
		prod.Produce(ctx, rec, func(r *kgo.Record, err error) {
			if err != nil {
				failed.set(fmt.Errorf("probe produce: %w", err))
				return
			}
			if k >= warm {
				ms := sinceMs(sent)
				mu.Lock()
				acks = append(acks, ms)
				mu.Unlock()
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		failed.set(err)
	}
	windowEnd := time.Now()
	cpu1 := takeCPU(o.brokerPid)
	close(stopChurn)
	churned := <-churnDone
	probed = probeTotal
	close(done)
	<-consumed
	if err := failed.get(); err != nil {
		return nil, err
	}
	kept, err := verifyChurn(ctx, o, churned)
	if err != nil {
		return nil, err
	}
	s := summary{"mode": "cleaner", "records": probeTotal, "churn_records": churned, "churn_records_kept": kept,
		"produce_seconds":      windowEnd.Sub(windowStart).Seconds(),
		"produce_broker_cpu_s": cpu1.broker - cpu0.broker, "produce_loadgen_cpu_s": cpu1.self - cpu0.self,
		"window_start_unix_ms": windowStart.UnixMilli(), "window_end_unix_ms": windowEnd.UnixMilli(),
		"verified": true}
	addPercentiles(s, "ack", acks)
	addPercentiles(s, "e2e", window(t.samples, windowStart, windowEnd.Add(time.Hour)))
	return s, nil
}

// churn writes o.churnRate records/s to the churn partition until stop is closed; returns how many.
func churn(ctx context.Context, o options, stop <-chan struct{}, failed *firstError) int64 {
	co := o
	co.acks = "1"
	co.linger = 5 * time.Millisecond
	cl, err := newClient(producerOpts(co)...)
	if err != nil {
		failed.set(err)
		return 0
	}
	defer cl.Close()
	const tick = 10 * time.Millisecond
	perTick := max(1, o.churnRate/int(time.Second/tick))
	var n int64
	start := time.Now()
	for i := 0; !closed(stop) && failed.get() == nil; i++ {
		if wait := time.Until(start.Add(time.Duration(i) * tick)); wait > 0 {
			time.Sleep(wait)
		}
		for j := 0; j < perTick; j++ {
			rec := &kgo.Record{Partition: churnPartition, Key: churnKey(n, o.keys), Value: value(make([]byte, o.size), n, 0)}
			cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
				if err != nil {
					failed.set(fmt.Errorf("churn produce: %w", err))
				}
			})
			n++
		}
	}
	if err := cl.Flush(ctx); err != nil {
		failed.set(err)
	}
	return n
}

func churnKey(seq int64, keys int) []byte { return []byte(fmt.Sprintf("k%05d", seq%int64(keys))) }

// verifyChurn reads the churn partition from its start to its end offset: offsets and sequence numbers rise,
// each record's key is its sequence number's key, and each key's last record read is the last written for it
// (what compaction must keep). Returns how many records are left.
func verifyChurn(ctx context.Context, o options, written int64) (int64, error) {
	admin, err := newClient(kgo.SeedBrokers(o.bootstrap))
	if err != nil {
		return 0, err
	}
	ends, err := kadm.NewClient(admin).ListEndOffsets(ctx, o.topic)
	admin.Close()
	if err != nil {
		return 0, err
	}
	end, ok := ends.Lookup(o.topic, churnPartition)
	if !ok || end.Err != nil {
		return 0, fmt.Errorf("end offset of the churn partition: %v", end.Err)
	}
	if end.Offset != written {
		return 0, fmt.Errorf("churn partition ends at offset %d, %d records were written", end.Offset, written)
	}
	cl, err := newClient(kgo.SeedBrokers(o.bootstrap),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.topic: {churnPartition: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	last := map[string]int64{}
	var kept int64
	prevOffset, prevSeq := int64(-1), int64(-1)
	progress := time.Now()
	for prevOffset < written-1 {
		if time.Since(progress) > 30*time.Second {
			return 0, fmt.Errorf("churn read-back: no progress for 30 s at offset %d of %d", prevOffset, written)
		}
		pollCtx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := cl.PollFetches(pollCtx)
		cancel()
		var failure error
		fetches.EachError(func(topic string, p int32, err error) {
			if err != context.DeadlineExceeded && failure == nil {
				failure = fmt.Errorf("fetch %s/%d: %w", topic, p, err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if failure != nil {
				return
			}
			seq := int64(binary.BigEndian.Uint64(r.Value[0:8]))
			switch {
			case len(r.Value) != o.size:
				failure = fmt.Errorf("churn offset %d: value of %d bytes", r.Offset, len(r.Value))
			case r.Offset <= prevOffset || seq <= prevSeq || seq >= written:
				failure = fmt.Errorf("churn offset %d seq %d after offset %d seq %d (of %d)", r.Offset, seq, prevOffset, prevSeq, written)
			case string(r.Key) != string(churnKey(seq, o.keys)):
				failure = fmt.Errorf("churn offset %d: key %q carries seq %d", r.Offset, r.Key, seq)
			}
			prevOffset, prevSeq = r.Offset, seq
			last[string(r.Key)] = seq
			kept++
			progress = time.Now()
		})
		if failure != nil {
			return 0, failure
		}
	}
	for seq := max(0, written-int64(o.keys)); seq < written; seq++ {
		if got := last[string(churnKey(seq, o.keys))]; got != seq {
			return 0, fmt.Errorf("churn key %s: last record read carries seq %d, the last written was %d", churnKey(seq, o.keys), got, seq)
		}
	}
	return kept, nil
}
