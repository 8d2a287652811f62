package kbroker.compat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

/**
 * The Java driver of the kbroker compatibility suite.
 *
 * <p>{@code Driver serve} answers JSON-line commands on stdin; {@code Driver <op> [json]} runs one command
 * (arguments from argv or stdin) and exits 1 on error. Commands are documented in docs/compatibility.md.
 */
public final class Driver {
    static final ObjectMapper JSON = new ObjectMapper();

    private Driver() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            System.err.println("usage: Driver serve | Driver <op> [json-arguments]");
            System.exit(2);
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (args[0].equals("serve")) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                ObjectNode answer = handle(line);
                System.out.println(JSON.writeValueAsString(answer));
                System.out.flush();
            }
            return;
        }
        String body = args.length > 1 ? args[1] : readAll(in);
        ObjectNode request = body.isBlank() ? JSON.createObjectNode() : (ObjectNode) JSON.readTree(body);
        request.put("op", args[0]);
        ObjectNode answer = handle(JSON.writeValueAsString(request));
        System.out.println(JSON.writeValueAsString(answer));
        System.exit(answer.get("ok").asBoolean() ? 0 : 1);
    }

    static String readAll(BufferedReader in) throws Exception {
        StringBuilder all = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            all.append(line).append('\n');
        }
        return all.toString();
    }

    static ObjectNode handle(String line) {
        try {
            JsonNode request = JSON.readTree(line);
            ObjectNode answer = dispatch(request);
            answer.put("ok", true);
            return answer;
        } catch (Throwable t) {
            return error(t);
        }
    }

    static ObjectNode dispatch(JsonNode r) throws Exception {
        String op = r.path("op").asText();
        switch (op) {
            case "produce":
                return Produce.run(r);
            case "consume":
                return Consume.run(r);
            case "partitions_for":
                return Produce.partitionsFor(r);
            case "member_open":
            case "member_take":
            case "member_commit":
            case "member_close":
                return Group.run(op, r);
            case "txn_open":
            case "txn_begin":
            case "txn_send":
            case "txn_offsets":
            case "txn_commit":
            case "txn_abort":
            case "txn_close":
                return Txn.run(op, r);
            case "describe_group":
                return Admin.run(op, r);
            case "create_topic":
            case "describe_topic":
            case "topic_configs":
            case "alter_config":
            case "create_partitions":
            case "delete_topic":
            case "list_offset":
            case "delete_records":
                return Admin.run(op, r);
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    static ObjectNode error(Throwable t) {
        Throwable cause = t;
        while ((cause instanceof ExecutionException || cause instanceof org.apache.kafka.common.KafkaException)
                && cause.getCause() != null
                && cause.getCause() != cause) {
            if (cause instanceof org.apache.kafka.common.errors.ApiException) {
                break;
            }
            cause = cause.getCause();
        }
        ObjectNode answer = JSON.createObjectNode();
        answer.put("ok", false);
        ObjectNode err = answer.putObject("error");
        err.put("kind", kind(cause));
        err.put("message", cause.getClass().getName() + ": " + cause.getMessage());
        return answer;
    }

    static String kind(Throwable t) {
        if (t instanceof org.apache.kafka.clients.consumer.OffsetOutOfRangeException
                || t instanceof org.apache.kafka.clients.consumer.NoOffsetForPartitionException
                || t instanceof org.apache.kafka.common.errors.OffsetOutOfRangeException) {
            return "offset_out_of_range";
        }
        if (t instanceof org.apache.kafka.common.errors.RecordTooLargeException
                || t instanceof org.apache.kafka.common.errors.RecordBatchTooLargeException) {
            return "message_too_large";
        }
        if (t instanceof org.apache.kafka.common.errors.TopicExistsException) {
            return "topic_exists";
        }
        if (t instanceof org.apache.kafka.common.errors.UnknownTopicOrPartitionException) {
            return "unknown_topic";
        }
        if (t instanceof org.apache.kafka.common.errors.UnsupportedVersionException) {
            return "unsupported";
        }
        if (t instanceof org.apache.kafka.common.errors.ProducerFencedException
                || t instanceof org.apache.kafka.common.errors.InvalidProducerEpochException) {
            return "fenced";
        }
        if (t instanceof org.apache.kafka.common.errors.TimeoutException) {
            return "timeout";
        }
        if (t instanceof org.apache.kafka.common.errors.AuthenticationException) {
            return "authentication"; // SaslAuthenticationException, SslAuthenticationException
        }
        return "other";
    }

    static String b64(byte[] data) {
        return data == null ? null : Base64.getEncoder().encodeToString(data);
    }

    static byte[] unb64(JsonNode node) {
        return node == null || node.isNull() ? null : Base64.getDecoder().decode(node.asText());
    }

    static java.util.Properties base(JsonNode r) {
        java.util.Properties p = new java.util.Properties();
        p.put("bootstrap.servers", r.path("bootstrap").asText());
        p.put("client.id", "compat-java");
        security(r.path("security"), p);
        return p;
    }

    /** The optional "security" object of a command: protocol, mechanism, username, password, ca, cert, key (PEM files). */
    static void security(JsonNode s, java.util.Properties p) {
        if (s.isMissingNode() || s.isNull()) {
            return;
        }
        String protocol = s.path("protocol").asText("PLAINTEXT");
        p.put("security.protocol", protocol);
        if (protocol.contains("SSL")) {
            p.put("ssl.truststore.type", "PEM");
            p.put("ssl.truststore.location", s.path("ca").asText());
            if (s.hasNonNull("cert")) {
                p.put("ssl.keystore.type", "PEM");
                p.put("ssl.keystore.location", s.path("keystore").asText());
            }
        }
        if (protocol.startsWith("SASL")) {
            String mechanism = s.path("mechanism").asText();
            String module = mechanism.equals("PLAIN")
                ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
            p.put("sasl.mechanism", mechanism);
            p.put("sasl.jaas.config", module + " required username=\"" + s.path("username").asText()
                + "\" password=\"" + s.path("password").asText() + "\";");
        }
    }

    static List<Integer> ints(JsonNode array) {
        List<Integer> out = new ArrayList<>();
        for (JsonNode n : array) {
            out.add(n.asInt());
        }
        return out;
    }

    static ArrayNode intArray(ObjectNode parent, String name, Iterable<Integer> values) {
        ArrayNode array = parent.putArray(name);
        for (Integer v : values) {
            array.add(v);
        }
        return array;
    }

    static Map<String, String> stringMap(JsonNode object) {
        Map<String, String> out = new java.util.TreeMap<>();
        object.fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asText()));
        return out;
    }
}
