// Command loadgen drives one benchmark workload against a Kafka-protocol broker with franz-go,
// then reads the topic back and checks every record (fails with exit status 1 otherwise).
//
//	loadgen -mode batch   -bootstrap HOST:PORT -topic T -records N -size 1024 -acks 1 -linger 5ms
//	loadgen -mode consume -bootstrap HOST:PORT -topic T -records N -size 1024   (read back a batch run)
//	loadgen -mode single  -bootstrap HOST:PORT -topic T -duration 10s        (one record per request)
//	loadgen -mode latency -bootstrap HOST:PORT -topic T -rate 2000 -duration 10s -acks all  (+1 s untimed)
//	loadgen -mode many    -clients 50 -rate 10 -duration 30s -acks all  (W7: a producer and a consumer per partition)
//	loadgen -mode cleaner -partitions 2 -rate 1000 -churn-rate 10000 -keys 1000 -topic-configs cleanup.policy=compact,...
//	loadgen -mode soak    -topics 20 -partitions 4 -clients 4 -groups 4 -rate 3000  (broker CPU per record)
//	loadgen -mode s4-create / s4-check -topics 100 -partitions 100  (many partitions: create, then check after restarts)
//
// With -tls-ca CA.pem every connection is TLS (the broker's certificate checked against that CA).
//
// Every record value starts with its sequence number (8 bytes, big endian) and its send time
// (8 bytes, Unix ns); record seq goes to partition seq % partitions, so partition p holds
// p, p+P, p+2P, ... at offsets 0, 1, 2, ...  The verification reads every partition from the
// start and checks exactly that: no loss, no duplicate, no reordering, dense offsets.
// The result is one JSON object on stdout.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// phaseStart: CPU times when the timed produce phase began.
var phaseStart cpuTimes

type options struct {
	mode             string
	bootstrap        string
	topic            string
	partitions       int
	records          int
	size             int
	acks             string
	linger           time.Duration
	batchBytes       int
	duration         time.Duration
	rate             int
	clients          int
	configs          string
	verify           bool
	brokerPid        int
	replication      int
	warm             time.Duration
	churnRate        int
	keys             int
	topics           int
	groups           int
	createBatch      int
	metadataRequests int
}

type result struct {
	Mode           string  `json:"mode"`
	Records        int64   `json:"records"`
	Bytes          int64   `json:"bytes"`
	Requests       int64   `json:"requests,omitempty"`
	ProduceSeconds float64 `json:"produce_seconds"`
	ProduceMBps    float64 `json:"produce_mb_per_s"`
	ProduceMsgsps  float64 `json:"produce_msgs_per_s"`
	RequestsPerSec float64 `json:"requests_per_s,omitempty"`
	ConsumeSeconds float64 `json:"consume_seconds"`
	ConsumeMBps    float64 `json:"consume_mb_per_s"`
	LatencyP50Ms   float64 `json:"latency_p50_ms,omitempty"`
	LatencyP99Ms   float64 `json:"latency_p99_ms,omitempty"`
	LatencyMaxMs   float64 `json:"latency_max_ms,omitempty"`
	// CPU seconds used during the produce and the read-back phase, by the broker (-broker-pid) and by loadgen
	ProduceBrokerCPU  float64 `json:"produce_broker_cpu_s"`
	ProduceLoadgenCPU float64 `json:"produce_loadgen_cpu_s"`
	ConsumeBrokerCPU  float64 `json:"consume_broker_cpu_s"`
	ConsumeLoadgenCPU float64 `json:"consume_loadgen_cpu_s"`
	Verified          bool    `json:"verified"`
}

func main() {
	o := options{}
	flag.StringVar(&o.mode, "mode", "batch", "batch, single, latency or consume")
	flag.StringVar(&o.bootstrap, "bootstrap", "127.0.0.1:9092", "broker address")
	flag.StringVar(&o.topic, "topic", "bench", "topic to create and use")
	flag.IntVar(&o.partitions, "partitions", 6, "partitions of the topic")
	flag.IntVar(&o.records, "records", 100000, "records to produce (batch mode)")
	flag.IntVar(&o.size, "size", 1024, "record value size in bytes (>= 16)")
	flag.StringVar(&o.acks, "acks", "1", "1 or all")
	flag.DurationVar(&o.linger, "linger", 5*time.Millisecond, "producer linger")
	flag.IntVar(&o.batchBytes, "batch-bytes", 1<<20, "producer batch size")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "run time (single, latency)")
	flag.IntVar(&o.rate, "rate", 2000, "records per second (latency)")
	flag.IntVar(&o.clients, "clients", 6, "producers, one connection each (single)")
	flag.StringVar(&o.configs, "topic-configs", "", "k=v,k=v topic configs at creation")
	flag.BoolVar(&o.verify, "verify", true, "read the topic back and check every record")
	flag.IntVar(&o.brokerPid, "broker-pid", 0, "broker process whose CPU time to report (0: none)")
	flag.IntVar(&o.replication, "replication-factor", 1, "replication factor of the topics it creates")
	flag.DurationVar(&o.warm, "warm", 3*time.Second, "untimed start of the cleaner and soak modes")
	flag.IntVar(&o.churnRate, "churn-rate", 10000, "records/s of many updates per key (cleaner)")
	flag.IntVar(&o.keys, "keys", 1000, "keys the churn updates (cleaner)")
	flag.IntVar(&o.topics, "topics", 20, "topics (soak, s4-*), named TOPIC-000, TOPIC-001, ...")
	flag.IntVar(&o.groups, "groups", 4, "consumer groups reading every topic (soak)")
	flag.IntVar(&o.createBatch, "create-batch", 10, "topics per CreateTopics request (soak, s4-create)")
	flag.IntVar(&o.metadataRequests, "metadata-requests", 50, "Metadata requests timed (s4-check)")
	tlsCA := flag.String("tls-ca", "", "connect with TLS, trusting these PEM CA certificates")
	flag.Parse()
	if *tlsCA != "" {
		if err := useTLS(*tlsCA); err != nil {
			die(err)
		}
	}
	if o.size < 16 {
		die(fmt.Errorf("-size must be at least 16"))
	}
	limit := 10 * time.Minute
	if strings.HasPrefix(o.mode, "s4-") {
		limit = 30 * time.Minute // 10,000 partitions: a JVM broker takes minutes to create and to recover them
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if o.mode == "many" {
		o.partitions = o.clients // one producer and one consumer per partition
	}
	modes := map[string]func(context.Context, options) (summary, error){
		"many": runMany, "cleaner": runCleaner, "soak": runSoak, "s4-create": runS4Create, "s4-check": runS4Check,
	}
	if run, ok := modes[o.mode]; ok {
		if o.mode == "many" || o.mode == "cleaner" {
			if err := createTopic(ctx, o); err != nil {
				die(err)
			}
		}
		s, err := run(ctx, o)
		if err != nil {
			die(err)
		}
		printSummary(s)
		return
	}
	if o.mode != "consume" {
		if err := createTopic(ctx, o); err != nil {
			die(err)
		}
	}
	var res result
	var counts []int64
	var err error
	phaseStart = takeCPU(o.brokerPid) // runBatch moves it past its buffer filling
	switch o.mode {
	case "batch":
		res, counts, err = runBatch(ctx, o)
	case "single":
		res, counts, err = runSingle(ctx, o)
	case "latency":
		res, counts, err = runLatency(ctx, o)
	case "consume": // only read back (and check) what an earlier batch run with the same -records wrote
		counts = batchCounts(o)
		n := int64(o.records)
		res = result{Mode: "consume", Records: n, Bytes: n * int64(o.size)}
		o.verify = true
	default:
		err = fmt.Errorf("unknown mode %q", o.mode)
	}
	if err != nil {
		die(err)
	}
	cpu0 := phaseStart
	cpu1 := takeCPU(o.brokerPid)
	res.ProduceBrokerCPU, res.ProduceLoadgenCPU = cpu1.broker-cpu0.broker, cpu1.self-cpu0.self
	if o.verify && o.mode != "latency" {
		seconds, err := verifyTopic(ctx, o, counts, nil)
		if err != nil {
			die(err)
		}
		cpu2 := takeCPU(o.brokerPid)
		res.ConsumeBrokerCPU, res.ConsumeLoadgenCPU = cpu2.broker-cpu1.broker, cpu2.self-cpu1.self
		res.ConsumeSeconds = seconds
		res.ConsumeMBps = float64(res.Bytes) / seconds / 1e6
		res.Verified = true
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

func die(err error) {
	fmt.Fprintln(os.Stderr, "loadgen: FAILED:", err)
	os.Exit(1)
}

func createTopic(ctx context.Context, o options) error {
	cl, err := newClient(kgo.SeedBrokers(o.bootstrap))
	if err != nil {
		return err
	}
	defer cl.Close()
	configs := map[string]*string{}
	if o.configs != "" {
		for _, kv := range strings.Split(o.configs, ",") {
			k, v, _ := strings.Cut(kv, "=")
			configs[k] = &v
		}
	}
	admin := kadm.NewClient(cl)
	resp, err := admin.CreateTopic(ctx, int32(o.partitions), int16(o.replication), configs, o.topic)
	if err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	if resp.Err != nil {
		return resp.Err
	}
	return waitReady(ctx, admin, []string{o.topic}, o.partitions)
}

func producerOpts(o options) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.bootstrap),
		kgo.DefaultProduceTopic(o.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(o.linger),
		kgo.ProducerBatchMaxBytes(int32(o.batchBytes)),
		kgo.MaxBufferedRecords(1 << 20),
	}
	if o.acks == "all" {
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	} else {
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
			kgo.MaxProduceRequestsInflightPerBroker(5))
	}
	return opts
}

// value builds a record value of o.size bytes carrying seq and the send time.
func value(slab []byte, seq int64, now int64) []byte {
	binary.BigEndian.PutUint64(slab[0:8], uint64(seq))
	binary.BigEndian.PutUint64(slab[8:16], uint64(now))
	return slab
}

func runBatch(ctx context.Context, o options) (result, []int64, error) {
	cl, err := newClient(producerOpts(o)...)
	if err != nil {
		return result{}, nil, err
	}
	defer cl.Close()
	slab := make([]byte, o.records*o.size)
	for i := range slab {
		slab[i] = byte(i * 7)
	}
	failed := make(chan error, 1)
	onDone := func(r *kgo.Record, err error) {
		if err != nil {
			select {
			case failed <- err:
			default:
			}
		}
	}
	phaseStart = takeCPU(o.brokerPid)
	start := time.Now()
	for seq := 0; seq < o.records; seq++ {
		v := value(slab[seq*o.size:(seq+1)*o.size:(seq+1)*o.size], int64(seq), 0)
		cl.Produce(ctx, &kgo.Record{Partition: int32(seq % o.partitions), Value: v}, onDone)
	}
	if err := cl.Flush(ctx); err != nil {
		return result{}, nil, err
	}
	elapsed := time.Since(start).Seconds()
	select {
	case err := <-failed:
		return result{}, nil, fmt.Errorf("produce: %w", err)
	default:
	}
	counts := batchCounts(o)
	n := int64(o.records)
	return result{
		Mode: "batch", Records: n, Bytes: n * int64(o.size), ProduceSeconds: elapsed,
		ProduceMBps: float64(n*int64(o.size)) / elapsed / 1e6, ProduceMsgsps: float64(n) / elapsed,
	}, counts, nil
}

// batchCounts: records per partition after a batch run of o.records records.
func batchCounts(o options) []int64 {
	counts := make([]int64, o.partitions)
	for seq := 0; seq < o.records; seq++ {
		counts[seq%o.partitions]++
	}
	return counts
}

// runSingle: o.clients producers, one per partition, each with one single-record request in flight.
func runSingle(ctx context.Context, o options) (result, []int64, error) {
	if o.clients != o.partitions {
		return result{}, nil, fmt.Errorf("single mode needs -clients == -partitions (one producer per partition)")
	}
	so := o
	so.linger = 0
	counts := make([]int64, o.partitions)
	errs := make(chan error, o.clients)
	start := time.Now()
	deadline := start.Add(o.duration)
	for c := 0; c < o.clients; c++ {
		go func(p int) {
			cl, err := newClient(producerOpts(so)...)
			if err != nil {
				errs <- err
				return
			}
			defer cl.Close()
			buf := make([]byte, o.size)
			for k := int64(0); time.Now().Before(deadline); k++ {
				v := append([]byte(nil), value(buf, int64(p)+k*int64(o.partitions), 0)...)
				if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(p), Value: v}).FirstErr(); err != nil {
					errs <- err
					return
				}
				counts[p] = k + 1
			}
			errs <- nil
		}(c)
	}
	for c := 0; c < o.clients; c++ {
		if err := <-errs; err != nil {
			return result{}, nil, fmt.Errorf("produce: %w", err)
		}
	}
	elapsed := time.Since(start).Seconds()
	var n int64
	for _, c := range counts {
		n += c
	}
	return result{
		Mode: "single", Records: n, Bytes: n * int64(o.size), Requests: n, ProduceSeconds: elapsed,
		ProduceMBps: float64(n*int64(o.size)) / elapsed / 1e6, ProduceMsgsps: float64(n) / elapsed,
		RequestsPerSec: float64(n) / elapsed,
	}, counts, nil
}
