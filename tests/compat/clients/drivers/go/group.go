package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// member is a client consuming in a group, polling on its own goroutine; records wait in a buffer for member_take.
type member struct {
	cl       *kgo.Client
	topic    string
	mu       sync.Mutex
	buffer   []Rec
	assigned map[int32]bool
	err      error
	cancel   context.CancelFunc
	done     chan struct{}
}

var (
	members   = map[string]*member{}
	producers = map[string]*kgo.Client{}
)

func balancer(name string) (kgo.GroupBalancer, error) {
	switch name {
	case "", "range":
		return kgo.RangeBalancer(), nil
	case "roundrobin":
		return kgo.RoundRobinBalancer(), nil
	case "cooperative-sticky":
		return kgo.CooperativeStickyBalancer(), nil
	}
	return nil, fmt.Errorf("unknown assignor %q", name)
}

func serverBalancer(name string) (kgo.GroupBalancer, error) {
	switch name {
	case "", "uniform":
		return kgo.CooperativeStickyBalancer(), nil
	case "range":
		return kgo.RangeBalancer(), nil
	}
	return nil, fmt.Errorf("unknown server assignor %q", name)
}

func memberOpen(req Request) (answer, error) {
	consumerProtocol := req.Protocol == "consumer"
	var b kgo.GroupBalancer
	var err error
	if consumerProtocol {
		// KIP-848: the balancer only names the server-side assignor (sticky: uniform, range: range)
		b, err = serverBalancer(req.Assignor)
	} else {
		b, err = balancer(req.Assignor)
	}
	if err != nil {
		return nil, err
	}
	m := &member{topic: req.Topic, assigned: map[int32]bool{}, done: make(chan struct{})}
	reset, err := resetOffset(req.Reset)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(req.Bootstrap),
		kgo.ConsumerGroup(req.Group),
		kgo.Balancers(b),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(reset),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.MetadataMinAge(time.Second),
		kgo.MetadataMaxAge(2 * time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, got map[string][]int32) { m.change(got, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) { m.change(lost, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) { m.change(lost, false) }),
	}
	if req.TopicRegex != nil {
		opts = append(opts, kgo.ConsumeTopics(*req.TopicRegex), kgo.ConsumeRegex())
	} else {
		opts = append(opts, kgo.ConsumeTopics(req.Topic))
	}
	if consumerProtocol {
		opts = append(opts, kgo.ServerSideBalancer())
	} else {
		opts = append(opts,
			kgo.SessionTimeout(time.Duration(req.SessionTimeoutMs)*time.Millisecond),
			kgo.HeartbeatInterval(time.Duration(req.HeartbeatIntervalMs)*time.Millisecond))
	}
	if req.InstanceID != nil {
		opts = append(opts, kgo.InstanceID(*req.InstanceID))
	}
	opts = append(opts, isolation(req.Isolation))
	if m.cl, err = kgo.NewClient(opts...); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.poll(ctx)
	members[req.ID] = m
	return answer{}, nil
}

func (m *member) change(parts map[string][]int32, add bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range parts[m.topic] {
		if add {
			m.assigned[p] = true
		} else {
			delete(m.assigned, p)
		}
	}
}

func (m *member) poll(ctx context.Context) {
	defer close(m.done)
	for ctx.Err() == nil {
		fetches := m.cl.PollFetches(ctx)
		var got []Rec
		fetches.EachRecord(func(r *kgo.Record) { got = append(got, fromRecord(r)) })
		m.mu.Lock()
		m.buffer = append(m.buffer, got...)
		fetches.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil {
				m.err = err
			}
		})
		m.mu.Unlock()
	}
}

func lookup(id string) (*member, error) {
	m, ok := members[id]
	if !ok {
		return nil, fmt.Errorf("no member %s", id)
	}
	return m, nil
}

func memberTake(req Request) (answer, error) {
	m, err := lookup(req.ID)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := answer{"records": m.buffer, "assignment": sortedParts(m.assigned)}
	if m.buffer == nil {
		out["records"] = []Rec{}
	}
	m.buffer = nil
	if m.err != nil {
		out["error"] = map[string]string{"kind": kind(m.err), "message": m.err.Error()}
		m.err = nil
	}
	return out, nil
}

func sortedParts(set map[int32]bool) []int32 {
	out := []int32{}
	for p := range set {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func memberCommit(req Request) (answer, error) {
	m, err := lookup(req.ID)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if req.Offsets == nil {
		return answer{}, m.cl.CommitUncommittedOffsets(ctx)
	}
	offsets := map[int32]kgo.EpochOffset{}
	for p, o := range req.Offsets {
		partition, err := strconv.Atoi(p)
		if err != nil {
			return nil, err
		}
		offsets[int32(partition)] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	var failure error
	m.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{m.topic: offsets},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			failure = err
			if err == nil {
				failure = commitError(resp)
			}
		})
	return answer{}, failure
}

func memberClose(req Request) (answer, error) {
	m, err := lookup(req.ID)
	if err != nil {
		return nil, err
	}
	delete(members, req.ID)
	m.cancel()
	<-m.done
	m.cl.Close() // leaves the group unless the member is static
	return answer{}, nil
}

func describeGroup(req Request) (answer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(req.Bootstrap))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	described, err := adm.DescribeGroups(ctx, req.Group)
	if err != nil {
		return nil, err
	}
	group, ok := described[req.Group]
	if !ok || group.Err != nil {
		return nil, fmt.Errorf("describe %s: %v", req.Group, group.Err)
	}
	memberList := []map[string]any{}
	for _, dm := range group.Members {
		parts := []int32{}
		if assigned, ok := dm.Assigned.AsConsumer(); ok {
			for _, t := range assigned.Topics {
				if t.Topic == req.Topic {
					parts = append(parts, t.Partitions...)
				}
			}
		}
		memberList = append(memberList, map[string]any{"member_id": dm.MemberID, "instance_id": dm.InstanceID, "partitions": parts})
	}
	fetched, err := adm.FetchOffsets(ctx, req.Group)
	if err != nil {
		return nil, err
	}
	committed := map[string]int64{}
	fetched.Each(func(o kadm.OffsetResponse) {
		if o.Topic == req.Topic && o.Err == nil {
			committed[strconv.Itoa(int(o.Partition))] = o.At
		}
	})
	listed, err := adm.ListEndOffsets(ctx, req.Topic)
	if err != nil {
		return nil, err
	}
	ends := map[string]int64{}
	listed.Each(func(l kadm.ListedOffset) { ends[strconv.Itoa(int(l.Partition))] = l.Offset })
	return answer{"state": group.State, "members": memberList, "committed": committed, "end_offsets": ends}, nil
}

func txnOpen(req Request) (answer, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(req.Bootstrap),
		kgo.TransactionalID(req.TransactionalID),
		kgo.TransactionTimeout(time.Duration(req.TimeoutMs)*time.Millisecond),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, _, err := cl.ProducerID(ctx); err != nil { // InitProducerId now, as the other clients' init does
		cl.Close()
		return nil, err
	}
	producers[req.ID] = cl
	return answer{}, nil
}

func txnOp(req Request) (answer, error) {
	cl, ok := producers[req.ID]
	if !ok {
		return nil, fmt.Errorf("no producer %s", req.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch req.Op {
	case "txn_begin":
		return answer{}, cl.BeginTransaction()
	case "txn_send":
		records := make([]*kgo.Record, 0, len(req.Records))
		for _, r := range req.Records {
			rec, err := toRecord(req.Topic, r)
			if err != nil {
				return nil, err
			}
			records = append(records, rec)
		}
		return answer{}, cl.ProduceSync(ctx, records...).FirstErr()
	case "txn_commit":
		if err := cl.Flush(ctx); err != nil {
			return nil, err
		}
		return answer{}, cl.EndTransaction(ctx, kgo.TryCommit)
	case "txn_abort":
		if err := cl.AbortBufferedRecords(ctx); err != nil {
			return nil, err
		}
		return answer{}, cl.EndTransaction(ctx, kgo.TryAbort)
	case "txn_close":
		delete(producers, req.ID)
		cl.Close()
		return answer{}, nil
	}
	return nil, fmt.Errorf("unsupported op %s: franz-go sends transactional offsets only through GroupTransactSession", req.Op)
}

func commitError(resp *kmsg.OffsetCommitResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}
