package kbroker.compat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;

/** The admin commands, each with a fresh Admin client. */
final class Admin {
    private Admin() {}

    static ObjectNode run(String op, JsonNode r) throws Exception {
        java.util.Properties p = Driver.base(r);
        p.put("request.timeout.ms", "20000");
        p.put("default.api.timeout.ms", "30000");
        try (AdminClient admin = AdminClient.create(p)) {
            return call(admin, op, r);
        }
    }

    static ObjectNode call(AdminClient admin, String op, JsonNode r) throws Exception {
        String topic = r.path("topic").asText();
        ObjectNode answer = Driver.JSON.createObjectNode();
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        TopicPartition tp = new TopicPartition(topic, r.path("partition").asInt());
        switch (op) {
            case "create_topic": {
                NewTopic t = new NewTopic(topic, Optional.of(r.path("partitions").asInt()), Optional.empty());
                t.configs(Driver.stringMap(r.path("configs")));
                admin.createTopics(List.of(t)).all().get();
                return answer;
            }
            case "describe_topic": {
                TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
                List<Integer> ids = new ArrayList<>();
                for (TopicPartitionInfo info : d.partitions()) {
                    ids.add(info.partition());
                }
                Driver.intArray(answer, "partitions", ids);
                return answer;
            }
            case "topic_configs": {
                Config config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
                ObjectNode configs = answer.putObject("configs");
                for (ConfigEntry e : config.entries()) {
                    configs.put(e.name(), e.value());
                }
                return answer;
            }
            case "alter_config": {
                AlterConfigOp set = new AlterConfigOp(
                        new ConfigEntry(r.path("key").asText(), r.path("value").asText()), AlterConfigOp.OpType.SET);
                admin.incrementalAlterConfigs(Map.of(resource, List.of(set))).all().get();
                return answer;
            }
            case "create_partitions":
                admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(r.path("total").asInt()))).all().get();
                return answer;
            case "delete_topic":
                admin.deleteTopics(List.of(topic)).all().get();
                return answer;
            case "list_offset": {
                JsonNode spec = r.path("spec");
                OffsetSpec offsetSpec = spec.isTextual()
                        ? (spec.asText().equals("earliest") ? OffsetSpec.earliest() : OffsetSpec.latest())
                        : OffsetSpec.forTimestamp(spec.asLong());
                answer.put("offset", admin.listOffsets(Map.of(tp, offsetSpec)).partitionResult(tp).get().offset());
                return answer;
            }
            case "delete_records": {
                RecordsToDelete before = RecordsToDelete.beforeOffset(r.path("before").asLong());
                long low = admin.deleteRecords(Map.of(tp, before)).lowWatermarks().get(tp).get().lowWatermark();
                answer.put("low_watermark", low);
                return answer;
            }
            case "describe_group":
                return describeGroup(admin, r.path("group").asText(), topic);
            default:
                throw new IllegalArgumentException("unknown admin op " + op);
        }
    }

    /** DescribeGroups, the committed offsets (OffsetFetch) and the topic's end offsets (ListOffsets). */
    static ObjectNode describeGroup(AdminClient admin, String group, String topic) throws Exception {
        ObjectNode answer = Driver.JSON.createObjectNode();
        ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
        answer.put("state", state(d));
        ArrayNode members = answer.putArray("members");
        for (MemberDescription m : d.members()) {
            ObjectNode member = members.addObject();
            member.put("member_id", m.consumerId());
            member.put("instance_id", m.groupInstanceId().orElse(null));
            List<Integer> parts = new ArrayList<>();
            for (TopicPartition tp : m.assignment().topicPartitions()) {
                if (tp.topic().equals(topic)) {
                    parts.add(tp.partition());
                }
            }
            Driver.intArray(member, "partitions", parts);
        }
        Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        ObjectNode committedNode = answer.putObject("committed");
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : committed.entrySet()) {
            if (e.getKey().topic().equals(topic) && e.getValue() != null) {
                committedNode.put(Integer.toString(e.getKey().partition()), e.getValue().offset());
            }
        }
        TopicDescription t = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
        for (TopicPartitionInfo info : t.partitions()) {
            specs.put(new TopicPartition(topic, info.partition()), OffsetSpec.latest());
        }
        ObjectNode ends = answer.putObject("end_offsets");
        for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e
                : admin.listOffsets(specs).all().get().entrySet()) {
            ends.put(Integer.toString(e.getKey().partition()), e.getValue().offset());
        }
        return answer;
    }

    /** The group state's name: groupState() from kafka-clients 4.0, state() before. */
    static String state(ConsumerGroupDescription d) throws Exception {
        for (String name : new String[] {"groupState", "state"}) {
            try {
                return String.valueOf(d.getClass().getMethod(name).invoke(d));
            } catch (NoSuchMethodException e) {
                // try the older name
            }
        }
        return "unknown";
    }
}
