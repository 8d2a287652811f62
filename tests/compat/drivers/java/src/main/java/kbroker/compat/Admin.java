package kbroker.compat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
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
            default:
                throw new IllegalArgumentException("unknown admin op " + op);
        }
    }
}
