package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// adminOp runs one admin command with a fresh client.
func adminOp(req Request) (answer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(req.Bootstrap))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch req.Op {
	case "create_topic":
		configs := map[string]*string{}
		for k, v := range req.Configs {
			value := v
			configs[k] = &value
		}
		var count int32
		if err := json.Unmarshal(req.Partitions, &count); err != nil {
			return nil, err
		}
		resp, err := adm.CreateTopic(ctx, count, 1, configs, req.Topic)
		if err == nil {
			err = resp.Err
		}
		return answer{}, err
	case "describe_topic":
		details, err := adm.ListTopics(ctx, req.Topic)
		if err != nil {
			return nil, err
		}
		detail, ok := details[req.Topic]
		if !ok {
			return nil, kerr.UnknownTopicOrPartition
		}
		if detail.Err != nil {
			return nil, detail.Err
		}
		return answer{"partitions": detail.Partitions.Numbers()}, nil
	case "topic_configs":
		resources, err := adm.DescribeTopicConfigs(ctx, req.Topic)
		if err != nil {
			return nil, err
		}
		configs := map[string]string{}
		for _, rc := range resources {
			if rc.Err != nil {
				return nil, rc.Err
			}
			for _, c := range rc.Configs {
				configs[c.Key] = c.MaybeValue()
			}
		}
		return answer{"configs": configs}, nil
	case "alter_config":
		value := req.Value
		alter := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: req.Key, Value: &value}}
		resps, err := adm.AlterTopicConfigs(ctx, alter, req.Topic)
		if err != nil {
			return nil, err
		}
		for _, r := range resps {
			if r.Err != nil {
				return nil, fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
			}
		}
		return answer{}, nil
	case "create_partitions":
		resps, err := adm.UpdatePartitions(ctx, req.Total, req.Topic)
		if err == nil {
			err = resps.Error()
		}
		return answer{}, err
	case "delete_topic":
		resps, err := adm.DeleteTopics(ctx, req.Topic)
		if err == nil {
			err = resps.Error()
		}
		return answer{}, err
	case "delete_records":
		offsets := kadm.Offsets{}
		offsets.Add(kadm.Offset{Topic: req.Topic, Partition: req.Partition, At: req.Before, LeaderEpoch: -1})
		resps, err := adm.DeleteRecords(ctx, offsets)
		if err != nil {
			return nil, err
		}
		resp, ok := resps.Lookup(req.Topic, req.Partition)
		if !ok {
			return nil, fmt.Errorf("no DeleteRecords answer for %s/%d", req.Topic, req.Partition)
		}
		if resp.Err != nil {
			return nil, resp.Err
		}
		return answer{"low_watermark": resp.LowWatermark}, nil
	case "list_offset":
		return listOffset(ctx, cl, req)
	}
	return nil, fmt.Errorf("unknown op %q", req.Op)
}

// listOffset sends ListOffsets itself, so the broker's own answer (-1 when no record is late enough) comes back.
func listOffset(ctx context.Context, cl *kgo.Client, req Request) (answer, error) {
	var timestamp int64
	var named string
	if err := json.Unmarshal(req.Spec, &named); err == nil {
		switch named {
		case "earliest":
			timestamp = -2
		case "latest":
			timestamp = -1
		default:
			return nil, fmt.Errorf("unknown spec %q", named)
		}
	} else if err := json.Unmarshal(req.Spec, &timestamp); err != nil {
		return nil, err
	}
	request := kmsg.NewPtrListOffsetsRequest()
	request.ReplicaID = -1
	topic := kmsg.NewListOffsetsRequestTopic()
	topic.Topic = req.Topic
	partition := kmsg.NewListOffsetsRequestTopicPartition()
	partition.Partition = req.Partition
	partition.Timestamp = timestamp
	partition.CurrentLeaderEpoch = -1
	topic.Partitions = append(topic.Partitions, partition)
	request.Topics = append(request.Topics, topic)
	resp, err := request.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, err
			}
			return answer{"offset": p.Offset}, nil
		}
	}
	return nil, fmt.Errorf("no ListOffsets answer for %s/%d", req.Topic, req.Partition)
}
