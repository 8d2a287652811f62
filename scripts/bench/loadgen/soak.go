package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// soakTopics: the topics of the soak and s4 modes, o.topic-000, o.topic-001, ...
func soakTopics(o options) []string {
	names := make([]string, o.topics)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%03d", o.topic, i)
	}
	return names
}

// createTopics creates o.topics topics of o.partitions partitions, o.createBatch topics per request.
func createTopics(ctx context.Context, o options, configs map[string]*string) error {
	cl, err := newClient(kgo.SeedBrokers(o.bootstrap), kgo.RequestTimeoutOverhead(2*time.Minute))
	if err != nil {
		return err
	}
	defer cl.Close()
	admin := kadm.NewClient(cl)
	admin.SetTimeoutMillis(120000)
	names := soakTopics(o)
	for i := 0; i < len(names); i += o.createBatch {
		resp, err := admin.CreateTopics(ctx, int32(o.partitions), 1, configs, names[i:min(len(names), i+o.createBatch)]...)
		if err != nil {
			return fmt.Errorf("create topics: %w", err)
		}
		if err := resp.Error(); err != nil {
			return fmt.Errorf("create topics: %w", err)
		}
	}
	return waitReady(ctx, admin, names, o.partitions)
}

// waitReady polls until every partition of topics lists an end offset (it has a leader that serves it):
// a broker may answer CreateTopics before its metadata and logs have the new partitions.
func waitReady(ctx context.Context, admin *kadm.Client, topics []string, partitions int) error {
	deadline := time.Now().Add(15 * time.Minute)
	for {
		ends, err := admin.ListEndOffsets(ctx, topics...)
		if err == nil {
			ready := 0
			ends.Each(func(l kadm.ListedOffset) {
				if l.Err == nil {
					ready++
				}
			})
			if ready == len(topics)*partitions {
				return nil
			}
			err = fmt.Errorf("%d of %d partitions ready", ready, len(topics)*partitions)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topics not ready after 15 minutes: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// globalChecker checks records of many topics: partition p of topic t is global partition t*P+p, whose k-th
// record sits at offset k and carries seq g + k*T*P.
type globalChecker struct {
	index map[string]int
	o     options
	chk   *checker
}

func newGlobalChecker(o options) *globalChecker {
	index := map[string]int{}
	for i, name := range soakTopics(o) {
		index[name] = i
	}
	return &globalChecker{index: index, o: o, chk: newChecker(o.topics*o.partitions, o.size)}
}

func (g *globalChecker) check(r *kgo.Record) error {
	t, ok := g.index[r.Topic]
	if !ok {
		return fmt.Errorf("record from unknown topic %q", r.Topic)
	}
	copy := *r
	copy.Partition = int32(t*g.o.partitions) + r.Partition
	return g.chk.check(&copy)
}

// runSoak is the CPU-efficiency load: o.topics topics of o.partitions partitions, o.clients producers (each owns
// every o.clients-th partition, so each partition has one writer and a defined order) writing o.rate records/s
// in all (acks as -acks, linger as -linger: small batches spread over many partitions), and o.groups consumer
// groups (one member each) reading every topic from the start. After o.warm untimed, the broker's CPU time
// is taken over o.duration; every group must then read every record (checked).
func runSoak(ctx context.Context, o options) (summary, error) {
	if err := createTopics(ctx, o, nil); err != nil {
		return nil, err
	}
	G := o.topics * o.partitions
	topics := soakTopics(o)
	produced := make([]int64, G) // per global partition, final once the producers are done
	done := make(chan struct{})
	var failed firstError
	var consumers sync.WaitGroup
	for g := 0; g < o.groups; g++ {
		cl, err := newClient(kgo.SeedBrokers(o.bootstrap), kgo.ConsumerGroup(fmt.Sprintf("%s-group-%d", o.topic, g)),
			kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			return nil, err
		}
		consumers.Add(1)
		go func() {
			defer consumers.Done()
			defer cl.Close()
			if err := readAll(ctx, cl, newGlobalChecker(o), done, produced); err != nil {
				failed.set(fmt.Errorf("group %d: %w", g, err))
			}
		}()
	}
	perTick := max(1, o.rate/o.clients/100) // records per producer per 10 ms
	total := int64(o.warm.Seconds()+o.duration.Seconds()) * int64(o.rate)
	var producers sync.WaitGroup
	var cpu0, cpu1 cpuTimes
	var windowStart, windowEnd time.Time
	var windowRecords int64
	var sentMu sync.Mutex
	var sent int64
	start := time.Now()
	for c := 0; c < o.clients; c++ {
		producers.Add(1)
		go func(c int) {
			defer producers.Done()
			cl, err := newClient(producerOpts(o)...)
			if err != nil {
				failed.set(err)
				return
			}
			defer cl.Close()
			mine := []int{}
			for g := c; g < G; g += o.clients {
				mine = append(mine, g)
			}
			k := make([]int64, len(mine))
			next := 0
			for i := 0; failed.get() == nil; i++ {
				sentMu.Lock()
				over := sent >= total
				if !over {
					sent += int64(perTick)
				}
				sentMu.Unlock()
				if over {
					break
				}
				if wait := time.Until(start.Add(time.Duration(i) * 10 * time.Millisecond)); wait > 0 {
					time.Sleep(wait)
				}
				for j := 0; j < perTick; j++ {
					g := mine[next]
					seq := int64(g) + k[next]*int64(G)
					k[next]++
					rec := &kgo.Record{Topic: topics[g/o.partitions], Partition: int32(g % o.partitions),
						Value: value(make([]byte, o.size), seq, time.Now().UnixNano())}
					cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
						if err != nil {
							failed.set(fmt.Errorf("produce: %w", err))
						}
					})
					next = (next + 1) % len(mine)
				}
			}
			if err := cl.Flush(ctx); err != nil {
				failed.set(err)
			}
			for i, g := range mine {
				produced[g] = k[i]
			}
		}(c)
	}
	go func() {
		time.Sleep(o.warm)
		sentMu.Lock()
		cpu0, windowStart, windowRecords = takeCPU(o.brokerPid), time.Now(), sent
		sentMu.Unlock()
	}()
	producers.Wait()
	sentMu.Lock()
	cpu1, windowEnd, windowRecords = takeCPU(o.brokerPid), time.Now(), sent-windowRecords
	sentMu.Unlock()
	close(done)
	consumers.Wait()
	if err := failed.get(); err != nil {
		return nil, err
	}
	var n int64
	for _, c := range produced {
		n += c
	}
	cpu := cpu1.broker - cpu0.broker
	seconds := windowEnd.Sub(windowStart).Seconds()
	return summary{"mode": "soak", "records": n, "window_records": windowRecords, "produce_seconds": seconds,
		"records_per_s":        float64(windowRecords) / seconds,
		"produce_broker_cpu_s": cpu, "produce_loadgen_cpu_s": cpu1.self - cpu0.self,
		"broker_cpu_s_per_10k": cpu / float64(windowRecords) * 10000, "verified": true}, nil
}

// readAll polls a consumer of many topics until done is closed and every global partition g reached
// produced[g] records, checking each record.
func readAll(ctx context.Context, cl *kgo.Client, gc *globalChecker, done <-chan struct{}, produced []int64) error {
	last := time.Now()
	for {
		if closed(done) {
			complete := true
			for g, want := range produced {
				if gc.chk.seen[g] > want {
					return fmt.Errorf("partition %d: %d records, %d produced", g, gc.chk.seen[g], want)
				}
				complete = complete && gc.chk.seen[g] == want
			}
			if complete {
				return nil
			}
		}
		if time.Since(last) > 30*time.Second {
			return fmt.Errorf("no progress for 30 s (read %d records)", gc.chk.total)
		}
		pollCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fetches := cl.PollFetches(pollCtx)
		cancel()
		var failure error
		fetches.EachError(func(topic string, p int32, err error) {
			if err != context.DeadlineExceeded && failure == nil {
				failure = fmt.Errorf("fetch %s/%d: %w", topic, p, err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if failure == nil {
				failure = gc.check(r)
				last = time.Now()
			}
		})
		if failure != nil {
			return failure
		}
	}
}
