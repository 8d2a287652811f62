// A share consumer that acknowledges every record explicitly (KIP-932), for scripts/bench/queue.py.
// Run as a single source file against Kafka's client jars:
//   java -cp '<kafka libs>/*' ShareAck.java BOOTSTRAP TOPIC GROUP RECORDS MODE
// MODE "poll": acknowledgements travel with the next poll (the client's usual way);
// MODE "commit": commitSync after each poll's records, so each poll's acknowledgements are durable
// before the next poll. Prints one JSON line: records, seconds from the first record to the last
// acknowledgement, and how many polls returned records.
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareAck {
    public static void main(String[] args) {
        String bootstrap = args[0], topic = args[1], group = args[2], mode = args[4];
        long wanted = Long.parseLong(args[3]);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("share.acknowledgement.mode", "explicit");
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        long seen = 0, polls = 0, first = 0;
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(topic));
            while (seen < wanted) {
                if (System.nanoTime() > deadline) {
                    System.err.println("timed out with " + seen + " of " + wanted + " records");
                    System.exit(1);
                }
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                if (seen == 0) {
                    first = System.nanoTime();
                }
                polls++;
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                    seen++;
                }
                if (mode.equals("commit")) {
                    consumer.commitSync();
                }
            }
            consumer.commitSync();  // the last poll's acknowledgements, in both modes
            double seconds = (System.nanoTime() - first) / 1e9;
            System.out.printf("{\"records\": %d, \"seconds\": %.4f, \"polls\": %d}%n", seen, seconds, polls);
        }
    }
}
