package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// summary is a result of the modes that report many figures (many, cleaner, soak, s4-*): one JSON object.
type summary map[string]any

func printSummary(s summary) {
	out, _ := json.Marshal(s)
	fmt.Println(string(out))
}

// addPercentiles puts name_p50_ms, name_p99_ms, name_p999_ms and name_max_ms of samples (ms) into s.
func addPercentiles(s summary, name string, samples []float64) {
	sort.Float64s(samples)
	s[name+"_p50_ms"] = quantile(samples, 0.50)
	s[name+"_p99_ms"] = quantile(samples, 0.99)
	s[name+"_p999_ms"] = quantile(samples, 0.999)
	if len(samples) > 0 {
		s[name+"_max_ms"] = samples[len(samples)-1]
	}
	s[name+"_samples"] = len(samples)
}

func sinceMs(t time.Time) float64 { return float64(time.Since(t).Nanoseconds()) / 1e6 }

// firstError keeps the first of many goroutines' errors.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// tail is a consumer of one partition from its start, in its own client (its own connection), that checks
// every record (partition p's k-th record at offset k carrying seq p + k*partitions) and keeps each record's
// send time (written in the value) and end-to-end latency (arrival - send time).
type tail struct {
	partition int
	client    *kgo.Client
	chk       *checker
	samples   []sample
}

// sample: a latency (ms) and when its record was sent (Unix ns), to keep only those of a measured window.
type sample struct {
	sent int64
	ms   float64
}

// window: the latencies of the samples sent in [from, to).
func window(samples []sample, from, to time.Time) []float64 {
	out := make([]float64, 0, len(samples))
	for _, s := range samples {
		if s.sent >= from.UnixNano() && s.sent < to.UnixNano() {
			out = append(out, s.ms)
		}
	}
	return out
}

func newTail(o options, partition int) (*tail, error) {
	cl, err := newClient(
		kgo.SeedBrokers(o.bootstrap),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.topic: {int32(partition): kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	return &tail{partition: partition, client: cl, chk: newChecker(o.partitions, o.size)}, nil
}

// run polls until done is closed and want records were read (or an error, or 30 s without progress).
func (t *tail) run(ctx context.Context, done <-chan struct{}, want func() int64) error {
	defer t.client.Close()
	last := time.Now()
	for {
		if closed(done) && t.chk.seen[t.partition] >= want() {
			if t.chk.seen[t.partition] > want() {
				return fmt.Errorf("partition %d: read %d records, %d were produced", t.partition, t.chk.seen[t.partition], want())
			}
			return nil
		}
		if time.Since(last) > 30*time.Second {
			return fmt.Errorf("partition %d: no progress for 30 s (read %d records)", t.partition, t.chk.seen[t.partition])
		}
		pollCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fetches := t.client.PollFetches(pollCtx)
		cancel()
		var failure error
		fetches.EachError(func(topic string, p int32, err error) {
			if err != context.DeadlineExceeded && failure == nil {
				failure = fmt.Errorf("fetch %s/%d: %w", topic, p, err)
			}
		})
		now := time.Now().UnixNano()
		fetches.EachRecord(func(r *kgo.Record) {
			if failure != nil {
				return
			}
			if err := t.chk.check(r); err != nil {
				failure = err
				return
			}
			sent := int64(binary.BigEndian.Uint64(r.Value[8:16]))
			t.samples = append(t.samples, sample{sent, float64(now-sent) / 1e6})
			last = time.Now()
		})
		if failure != nil {
			return failure
		}
	}
}

// runMany is W7: o.clients producers and o.clients consumers, each its own client, one partition each of an
// o.clients-partition topic. Producer p sends o.rate records/s to partition p (acks as -acks, linger 0) for
// o.warm + o.duration, the first record at the common start, the next ones evenly spread over the clients;
// consumer p tails partition p. Figures: the time from the common start (all clients created then) to each
// producer's first acknowledgement; produce acknowledgement and end-to-end latency of the records sent in the
// measured window, which opens o.warm after the start or 1 s after the last producer's first acknowledgement,
// whichever is later (records queued behind a slow first acknowledgement are start-up, not steady state).
func runMany(ctx context.Context, o options) (summary, error) {
	P := o.clients
	perProducer := int((o.warm + o.duration).Seconds() * float64(o.rate))
	tails := make([]*tail, P)
	for p := range tails {
		t, err := newTail(o, p)
		if err != nil {
			return nil, err
		}
		tails[p] = t
	}
	done := make(chan struct{})
	var failed firstError
	var consumers sync.WaitGroup
	produced := make([]int64, P) // written once all producers are done
	for _, t := range tails {
		consumers.Add(1)
		go func(t *tail) {
			defer consumers.Done()
			if err := t.run(ctx, done, func() int64 { return produced[t.partition] }); err != nil {
				failed.set(err)
			}
		}(t)
	}
	time.Sleep(time.Second) // the consumers' first fetches reach the broker
	so := o
	so.linger = 0
	interval := time.Second / time.Duration(o.rate)
	firstAck := make([]float64, P)
	acks := make([][]sample, P)
	var producers sync.WaitGroup
	start := time.Now()
	cpuStart := make(chan cpuTimes, 1)
	go func() { // the CPU figures cover the measured part (o.warm on) only
		time.Sleep(o.warm)
		cpuStart <- takeCPU(o.brokerPid)
	}()
	for p := 0; p < P; p++ {
		producers.Add(1)
		go func(p int) {
			defer producers.Done()
			cl, err := newClient(producerOpts(so)...)
			if err != nil {
				failed.set(err)
				return
			}
			defer cl.Close()
			phase := time.Duration(p) * interval / time.Duration(P)
			var mu sync.Mutex
			var acked int64
			lat := make([]sample, 0, perProducer)
			for k := 0; k < perProducer && failed.get() == nil; k++ {
				if k > 0 {
					if wait := time.Until(start.Add(time.Duration(k)*interval + phase)); wait > 0 {
						time.Sleep(wait)
					}
				}
				sent := time.Now()
				v := value(make([]byte, o.size), int64(p)+int64(k)*int64(P), sent.UnixNano())
				cl.Produce(ctx, &kgo.Record{Partition: int32(p), Value: v}, func(r *kgo.Record, err error) {
					if err != nil {
						failed.set(fmt.Errorf("produce to partition %d: %w", p, err))
						return
					}
					ms := sinceMs(sent)
					mu.Lock()
					if k == 0 {
						firstAck[p] = sinceMs(start)
					}
					lat = append(lat, sample{sent.UnixNano(), ms})
					acked++
					mu.Unlock()
				})
			}
			if err := cl.Flush(ctx); err != nil {
				failed.set(err)
			}
			mu.Lock()
			acks[p], produced[p] = lat, acked
			mu.Unlock()
		}(p)
	}
	producers.Wait()
	end := time.Now()
	cpu0, cpu1 := <-cpuStart, takeCPU(o.brokerPid)
	close(done)
	consumers.Wait()
	if err := failed.get(); err != nil {
		return nil, err
	}
	var total int64
	for p := 0; p < P; p++ {
		if produced[p] != int64(perProducer) {
			return nil, fmt.Errorf("producer %d: %d of %d records acknowledged", p, produced[p], perProducer)
		}
		total += produced[p]
	}
	sorted := append([]float64(nil), firstAck...)
	sort.Float64s(sorted)
	from := start.Add(o.warm)
	if settled := start.Add(time.Duration(sorted[P-1]*1e6) + time.Second); settled.After(from) {
		from = settled
	}
	var ackMs, e2eMs []float64
	for p := 0; p < P; p++ {
		ackMs = append(ackMs, window(acks[p], from, end)...)
		e2eMs = append(e2eMs, window(tails[p].samples, from, end)...)
	}
	if len(ackMs) == 0 {
		return nil, fmt.Errorf("no record in the measured window: the last first acknowledgement came %.0f ms after the start", sorted[P-1])
	}
	s := summary{"mode": "many", "records": total, "clients": P, "produce_seconds": end.Sub(start.Add(o.warm)).Seconds(),
		"window_seconds": end.Sub(from).Seconds(), "window_start_unix_ms": from.UnixMilli(), "window_end_unix_ms": end.UnixMilli(),
		"produce_broker_cpu_s": cpu1.broker - cpu0.broker, "produce_loadgen_cpu_s": cpu1.self - cpu0.self,
		"first_ack_p50_ms": quantile(sorted, 0.5), "first_ack_max_ms": sorted[P-1], "verified": true}
	addPercentiles(s, "ack", ackMs)
	addPercentiles(s, "e2e", e2eMs)
	return s, nil
}
