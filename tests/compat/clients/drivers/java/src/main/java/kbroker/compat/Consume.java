package kbroker.compat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** consume: assign partitions without a group, position them, poll until max_records or the timeout. */
final class Consume {
    private Consume() {}

    static ObjectNode run(JsonNode r) {
        String topic = r.path("topic").asText();
        Properties p = Driver.base(r);
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", r.path("reset").asText("earliest"));
        p.put("max.poll.records", "2000");
        p.put("fetch.max.wait.ms", "200");
        p.put("isolation.level", r.path("isolation").asText("read_uncommitted"));
        List<TopicPartition> tps = new ArrayList<>();
        for (Integer partition : Driver.ints(r.path("partitions"))) {
            tps.add(new TopicPartition(topic, partition));
        }
        int max = r.path("max_records").asInt();
        long deadline = System.currentTimeMillis() + r.path("timeout_ms").asLong();
        ObjectNode answer = Driver.JSON.createObjectNode();
        ArrayNode records = answer.putArray("records");
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(tps);
            JsonNode start = r.path("start");
            if (start.isTextual() && start.asText().equals("earliest")) {
                consumer.seekToBeginning(tps);
            } else if (start.isTextual() && start.asText().equals("latest")) {
                consumer.seekToEnd(tps);
            } else {
                start.fields().forEachRemaining(e ->
                        consumer.seek(new TopicPartition(topic, Integer.parseInt(e.getKey())), e.getValue().asLong()));
            }
            try {
                while (records.size() < max && System.currentTimeMillis() < deadline) {
                    long wait = Math.max(1, Math.min(500, deadline - System.currentTimeMillis()));
                    for (ConsumerRecord<byte[], byte[]> rec : consumer.poll(Duration.ofMillis(wait))) {
                        if (records.size() < max) {
                            records.add(toJson(rec));
                        }
                    }
                }
                ObjectNode positions = answer.putObject("positions");
                for (TopicPartition tp : tps) {
                    positions.put(Integer.toString(tp.partition()), consumer.position(tp, Duration.ofSeconds(10)));
                }
            } catch (RuntimeException e) {
                ObjectNode failed = Driver.error(e);
                answer.set("error", failed.get("error"));
                answer.remove("positions");
            }
        }
        return answer;
    }

    static ObjectNode toJson(ConsumerRecord<byte[], byte[]> rec) {
        ObjectNode out = Driver.JSON.createObjectNode();
        out.put("partition", rec.partition());
        out.put("offset", rec.offset());
        out.put("timestamp", rec.timestamp());
        out.put("key", Driver.b64(rec.key()));
        out.put("value", Driver.b64(rec.value()));
        ArrayNode headers = out.putArray("headers");
        for (Header h : rec.headers()) {
            headers.addArray().add(h.key()).add(Driver.b64(h.value()));
        }
        return out;
    }
}
