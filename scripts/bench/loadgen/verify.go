package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// checker holds, per partition, how many records were seen; a record must be the next one.
type checker struct {
	partitions int
	size       int
	seen       []int64
	total      int64
}

func newChecker(partitions, size int) *checker {
	return &checker{partitions: partitions, size: size, seen: make([]int64, partitions)}
}

// check validates one record: partition p's k-th record sits at offset k and carries seq p + k*P.
func (c *checker) check(r *kgo.Record) error {
	p := int(r.Partition)
	if p < 0 || p >= c.partitions {
		return fmt.Errorf("record from unknown partition %d", p)
	}
	k := c.seen[p]
	if len(r.Value) != c.size {
		return fmt.Errorf("partition %d offset %d: value of %d bytes, want %d", p, r.Offset, len(r.Value), c.size)
	}
	seq := int64(binary.BigEndian.Uint64(r.Value[0:8]))
	want := int64(p) + k*int64(c.partitions)
	if r.Offset != k || seq != want {
		return fmt.Errorf("partition %d: record #%d at offset %d carries seq %d, want offset %d seq %d (lost, duplicated or reordered)",
			p, k, r.Offset, seq, k, want)
	}
	c.seen[p] = k + 1
	c.total++
	return nil
}

func consumerClient(o options) (*kgo.Client, error) {
	offsets := map[int32]kgo.Offset{}
	for p := 0; p < o.partitions; p++ {
		offsets[int32(p)] = kgo.NewOffset().AtStart()
	}
	return newClient(
		kgo.SeedBrokers(o.bootstrap),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
}

// verifyTopic reads every partition from the start until counts[p] records each were seen, checking
// each; onRecord (optional) sees every record. Returns the seconds spent; fails after 30 s without progress.
func verifyTopic(ctx context.Context, o options, counts []int64, onRecord func(*kgo.Record)) (float64, error) {
	cl, err := consumerClient(o)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	return consumeAll(ctx, cl, o, counts, nil, onRecord)
}

// consumeAll polls cl until every partition reached counts[p] (or, when done is non-nil, until done is
// closed and then counts are reached).
func consumeAll(ctx context.Context, cl *kgo.Client, o options, counts []int64, done <-chan struct{},
	onRecord func(*kgo.Record)) (float64, error) {
	chk := newChecker(o.partitions, o.size)
	start := time.Now()
	lastProgress := start
	for {
		if done == nil || closed(done) {
			complete := true
			for p, want := range counts {
				if chk.seen[p] > want {
					return 0, fmt.Errorf("partition %d: %d records, only %d were produced", p, chk.seen[p], want)
				}
				if chk.seen[p] < want {
					complete = false
				}
			}
			if complete {
				return time.Since(start).Seconds(), nil
			}
		}
		if time.Since(lastProgress) > 30*time.Second {
			return 0, fmt.Errorf("no progress for 30 s: read %v of %v records per partition", chk.seen, counts)
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
		if failure != nil {
			return 0, failure
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if failure != nil {
				return
			}
			if err := chk.check(r); err != nil {
				failure = err
				return
			}
			if onRecord != nil {
				onRecord(r)
			}
			lastProgress = time.Now()
		})
		if failure != nil {
			return 0, failure
		}
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// runLatency produces o.rate records per second for o.duration while a consumer reads them; the
// latency of a record is its arrival at the consumer minus its send time.
func runLatency(ctx context.Context, o options) (result, []int64, error) {
	cons, err := consumerClient(o)
	if err != nil {
		return result{}, nil, err
	}
	defer cons.Close()
	po := producerOpts(o)
	prod, err := newClient(po...)
	if err != nil {
		return result{}, nil, err
	}
	defer prod.Close()
	// The first second's records warm up the connections and producer id; they are checked, not timed.
	warm := o.rate
	total := warm + int(o.duration.Seconds()*float64(o.rate))
	counts := make([]int64, o.partitions)
	for seq := 0; seq < total; seq++ {
		counts[seq%o.partitions]++
	}
	var mu sync.Mutex
	latencies := make([]float64, 0, total)
	done := make(chan struct{})
	type outcome struct {
		seconds float64
		err     error
	}
	consumed := make(chan outcome, 1)
	go func() {
		s, err := consumeAll(ctx, cons, o, counts, done, func(r *kgo.Record) {
			if int64(binary.BigEndian.Uint64(r.Value[0:8])) < int64(warm) {
				return
			}
			sent := int64(binary.BigEndian.Uint64(r.Value[8:16]))
			mu.Lock()
			latencies = append(latencies, float64(time.Now().UnixNano()-sent)/1e6)
			mu.Unlock()
		})
		consumed <- outcome{s, err}
	}()
	failed := make(chan error, 1)
	onDone := func(r *kgo.Record, err error) {
		if err != nil {
			select {
			case failed <- err:
			default:
			}
		}
	}
	time.Sleep(500 * time.Millisecond) // let the consumer's first fetches reach the broker
	interval := time.Second / time.Duration(o.rate)
	start := time.Now()
	for seq := 0; seq < total; seq++ {
		if wait := time.Until(start.Add(time.Duration(seq) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		v := value(make([]byte, o.size), int64(seq), time.Now().UnixNano())
		prod.Produce(ctx, &kgo.Record{Partition: int32(seq % o.partitions), Value: v}, onDone)
	}
	if err := prod.Flush(ctx); err != nil {
		return result{}, nil, err
	}
	elapsed := time.Since(start).Seconds()
	close(done)
	select {
	case err := <-failed:
		return result{}, nil, fmt.Errorf("produce: %w", err)
	default:
	}
	out := <-consumed
	if out.err != nil {
		return result{}, nil, out.err
	}
	sort.Float64s(latencies)
	n := int64(total)
	return result{
		Mode: "latency", Records: n, Bytes: n * int64(o.size), ProduceSeconds: elapsed,
		ProduceMBps: float64(n*int64(o.size)) / elapsed / 1e6, ProduceMsgsps: float64(n) / elapsed,
		LatencyP50Ms: quantile(latencies, 0.50), LatencyP99Ms: quantile(latencies, 0.99),
		LatencyMaxMs: latencies[len(latencies)-1], Verified: true,
	}, counts, nil
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i]
}
