package kbroker.compat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** Transactional producers kept across commands: txn_open (initTransactions), begin, send, offsets, commit, abort. */
final class Txn {
    static final Map<String, KafkaProducer<byte[], byte[]>> PRODUCERS = new ConcurrentHashMap<>();

    private Txn() {}

    static ObjectNode run(String op, JsonNode r) throws Exception {
        String id = r.path("id").asText();
        ObjectNode answer = Driver.JSON.createObjectNode();
        if (op.equals("txn_open")) {
            Properties p = Driver.base(r);
            p.put("transactional.id", r.path("transactional_id").asText());
            p.put("transaction.timeout.ms", r.path("timeout_ms").asText("60000"));
            p.put("linger.ms", "5");
            p.put("max.block.ms", "30000");
            p.put("delivery.timeout.ms", "30000");
            p.put("request.timeout.ms", "20000");
            KafkaProducer<byte[], byte[]> created =
                    new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
            PRODUCERS.put(id, created);
            created.initTransactions();
            return answer;
        }
        KafkaProducer<byte[], byte[]> producer = PRODUCERS.get(id);
        if (producer == null) {
            throw new IllegalArgumentException("no producer " + id);
        }
        switch (op) {
            case "txn_begin":
                producer.beginTransaction();
                break;
            case "txn_send":
                List<Future<RecordMetadata>> futures = new ArrayList<>();
                for (JsonNode rec : r.path("records")) {
                    Integer partition = rec.path("partition").isNull() ? null : rec.path("partition").asInt();
                    futures.add(producer.send(new ProducerRecord<>(r.path("topic").asText(), partition,
                            Driver.unb64(rec.get("key")), Driver.unb64(rec.get("value")))));
                }
                producer.flush();
                for (Future<RecordMetadata> f : futures) {
                    f.get();
                }
                break;
            case "txn_offsets":
                String topic = r.path("topic").asText();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (Map.Entry<String, JsonNode> e : Group.iterable(r.path("offsets"))) {
                    offsets.put(new TopicPartition(topic, Integer.parseInt(e.getKey())),
                            new OffsetAndMetadata(e.getValue().asLong()));
                }
                ConsumerGroupMetadata metadata = new ConsumerGroupMetadata(r.path("group").asText());
                if (r.hasNonNull("member")) {
                    Group.Member member = Group.member(r.path("member").asText());
                    metadata = (ConsumerGroupMetadata) member.call(() -> member.consumer.groupMetadata());
                }
                producer.sendOffsetsToTransaction(offsets, metadata);
                break;
            case "txn_commit":
                producer.commitTransaction();
                break;
            case "txn_abort":
                producer.abortTransaction();
                break;
            case "txn_close":
                PRODUCERS.remove(id).close(Duration.ofSeconds(5));
                break;
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
        return answer;
    }
}
