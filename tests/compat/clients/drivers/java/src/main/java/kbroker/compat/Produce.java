package kbroker.compat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** produce and partitions_for (a producer's metadata request, which may auto-create the topic). */
final class Produce {
    private Produce() {}

    static KafkaProducer<byte[], byte[]> producer(JsonNode r, String acks, String compression) {
        Properties p = Driver.base(r);
        p.put("acks", acks);
        p.put("compression.type", compression);
        p.put("linger.ms", "5");
        p.put("max.block.ms", "20000");
        p.put("delivery.timeout.ms", "30000");
        p.put("request.timeout.ms", "20000");
        if (!acks.equals("all") && !acks.equals("-1")) {
            p.put("enable.idempotence", "false");
        }
        if (r.path("idempotent").asBoolean(false)) {
            p.put("enable.idempotence", "true");
            p.put("delivery.timeout.ms", "90000");
        }
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    static ObjectNode run(JsonNode r) throws Exception {
        String topic = r.path("topic").asText();
        String acks = r.path("acks").asText("all");
        String compression = r.path("compression").asText("none");
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = producer(r, acks, compression)) {
            for (JsonNode rec : r.path("records")) {
                List<Header> headers = new ArrayList<>();
                for (JsonNode h : rec.path("headers")) {
                    headers.add(new RecordHeader(h.get(0).asText(), Driver.unb64(h.get(1))));
                }
                Integer partition = rec.path("partition").isNull() || rec.path("partition").isMissingNode()
                        ? null : rec.path("partition").asInt();
                Long timestamp = rec.path("timestamp").isNull() || rec.path("timestamp").isMissingNode()
                        ? null : rec.path("timestamp").asLong();
                futures.add(producer.send(new ProducerRecord<>(
                        topic, partition, timestamp, Driver.unb64(rec.get("key")), Driver.unb64(rec.get("value")),
                        headers)));
                long pace = r.path("pace_ms").asLong(0);
                if (pace > 0) {
                    Thread.sleep(pace);
                }
            }
            producer.flush();
            ObjectNode answer = Driver.JSON.createObjectNode();
            ArrayNode offsets = answer.putArray("offsets");
            for (Future<RecordMetadata> f : futures) {
                RecordMetadata m = f.get();
                offsets.addArray().add(m.partition()).add(m.hasOffset() ? m.offset() : -1);
            }
            return answer;
        }
    }

    static ObjectNode partitionsFor(JsonNode r) {
        try (KafkaProducer<byte[], byte[]> producer = producer(r, "all", "none")) {
            List<Integer> ids = new ArrayList<>();
            for (PartitionInfo info : producer.partitionsFor(r.path("topic").asText())) {
                ids.add(info.partition());
            }
            ObjectNode answer = Driver.JSON.createObjectNode();
            Driver.intArray(answer, "partitions", ids);
            producer.close(Duration.ofSeconds(5));
            return answer;
        }
    }
}
