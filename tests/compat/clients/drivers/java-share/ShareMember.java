import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One member of a share group with Kafka's KafkaShareConsumer (kafka-clients 4.2+), for the compatibility suite.
 *
 * <p>JSON lines on stdin, one answer line each on stdout:
 * {"op":"start","bootstrap":..,"group":..,"topic":..,"configs":{..}} subscribes in explicit acknowledgement mode;
 * {"op":"poll","timeout_ms":..,"ack":"accept|release|reject|none"} polls once, acknowledges every record with
 * that type (none: holds them) and commits, answering the records (partition, offset, value, delivery_count);
 * {"op":"close"} closes the consumer. Answers carry "ok"; a failure gives "error".
 * Kept out of the main Java driver, which also builds against kafka-clients 3.9 (no share consumer).
 */
public final class ShareMember {
    static final ObjectMapper JSON = new ObjectMapper();
    static KafkaShareConsumer<String, String> consumer;

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode answer;
            try {
                answer = handle(JSON.readTree(line));
                answer.put("ok", true);
            } catch (Throwable t) {
                answer = JSON.createObjectNode();
                answer.put("ok", false);
                answer.put("error", t.getClass().getSimpleName() + ": " + t.getMessage());
            }
            System.out.println(JSON.writeValueAsString(answer));
            System.out.flush();
        }
    }

    static ObjectNode handle(JsonNode r) {
        ObjectNode answer = JSON.createObjectNode();
        switch (r.path("op").asText()) {
            case "start":
                Properties props = new Properties();
                props.put("bootstrap.servers", r.path("bootstrap").asText());
                props.put("group.id", r.path("group").asText());
                props.put("share.acknowledgement.mode", "explicit");
                props.put("key.deserializer", StringDeserializer.class.getName());
                props.put("value.deserializer", StringDeserializer.class.getName());
                Iterator<Map.Entry<String, JsonNode>> configs = r.path("configs").fields();
                while (configs.hasNext()) {
                    Map.Entry<String, JsonNode> entry = configs.next();
                    props.put(entry.getKey(), entry.getValue().asText());
                }
                consumer = new KafkaShareConsumer<>(props);
                consumer.subscribe(List.of(r.path("topic").asText()));
                return answer;
            case "poll":
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(r.path("timeout_ms").asLong(1000)));
                String ack = r.path("ack").asText("accept");
                ArrayNode out = answer.putArray("records");
                for (ConsumerRecord<String, String> record : records) {
                    ObjectNode item = out.addObject();
                    item.put("partition", record.partition());
                    item.put("offset", record.offset());
                    item.put("value", record.value());
                    item.put("delivery_count", record.deliveryCount().map(Short::intValue).orElse(-1));
                    if (!ack.equals("none")) {
                        consumer.acknowledge(record, AcknowledgeType.valueOf(ack.toUpperCase()));
                    }
                }
                if (!ack.equals("none") && !records.isEmpty()) {
                    consumer.commitSync(Duration.ofSeconds(10));
                }
                return answer;
            case "close":
                if (consumer != null) {
                    consumer.close(Duration.ofSeconds(10));
                    consumer = null;
                }
                return answer;
            default:
                throw new IllegalArgumentException("unknown op " + r.path("op").asText());
        }
    }
}
