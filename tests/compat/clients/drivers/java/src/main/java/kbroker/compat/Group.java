package kbroker.compat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.FutureTask;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Group members: each a subscribed consumer polling on a thread of its own, like a running application.
 * Records are buffered until member_take; commits and close run on the member's thread between polls.
 */
final class Group {
    static final Map<String, Member> MEMBERS = new ConcurrentHashMap<>();
    static final Map<String, String> ASSIGNORS = Map.of(
            "", "org.apache.kafka.clients.consumer.RangeAssignor,"
                    + "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
            "range", "org.apache.kafka.clients.consumer.RangeAssignor",
            "roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor",
            "cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");

    private Group() {}

    static ObjectNode run(String op, JsonNode r) throws Exception {
        String id = r.path("id").asText();
        ObjectNode answer = Driver.JSON.createObjectNode();
        switch (op) {
            case "member_open":
                Member opened = new Member(id, r);
                opened.start();
                MEMBERS.put(id, opened);
                return answer;
            case "member_take":
                return member(id).take();
            case "member_commit":
                Map<TopicPartition, OffsetAndMetadata> offsets = null;
                Member m = member(id);
                if (!r.path("offsets").isNull() && !r.path("offsets").isMissingNode()) {
                    offsets = new HashMap<>();
                    for (Map.Entry<String, JsonNode> e : iterable(r.path("offsets"))) {
                        offsets.put(new TopicPartition(m.topic, Integer.parseInt(e.getKey())),
                                new OffsetAndMetadata(e.getValue().asLong()));
                    }
                }
                Map<TopicPartition, OffsetAndMetadata> wanted = offsets;
                m.call(() -> {
                    if (wanted == null) {
                        m.consumer.commitSync();
                    } else {
                        m.consumer.commitSync(wanted);
                    }
                    return null;
                });
                return answer;
            case "member_close":
                MEMBERS.remove(id).close();
                return answer;
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    static Member member(String id) {
        Member m = MEMBERS.get(id);
        if (m == null) {
            throw new IllegalArgumentException("no member " + id);
        }
        return m;
    }

    static Iterable<Map.Entry<String, JsonNode>> iterable(JsonNode object) {
        return object::fields;
    }

    /** One member: the consumer is touched only by its own thread. */
    static final class Member implements Runnable {
        final String topic;
        final String regex; // null: subscribe to the topic by name
        final boolean consumerProtocol; // group.protocol=consumer (KIP-848): the broker assigns
        final Properties props = new Properties();
        final BlockingQueue<FutureTask<Object>> tasks = new LinkedBlockingQueue<>();
        final CompletableFuture<Void> opened = new CompletableFuture<>();
        final List<ObjectNode> buffer = new ArrayList<>();
        volatile Set<Integer> assignment = new TreeSet<>();
        volatile Throwable error;
        volatile boolean stopped;
        KafkaConsumer<byte[], byte[]> consumer;
        Thread thread;

        Member(String id, JsonNode r) {
            topic = r.path("topic").asText();
            regex = r.hasNonNull("topic_regex") ? r.path("topic_regex").asText() : null;
            consumerProtocol = r.path("protocol").asText("classic").equals("consumer");
            props.putAll(Driver.base(r));
            props.put("client.id", "compat-java-" + id);
            props.put("group.id", r.path("group").asText());
            props.put("enable.auto.commit", "false");
            props.put("auto.offset.reset", r.path("reset").asText("earliest"));
            if (consumerProtocol) {
                // the broker owns session, heartbeat and assignment: the client may only name a server assignor
                props.put("group.protocol", "consumer");
                if (!r.path("assignor").asText("").isEmpty()) {
                    props.put("group.remote.assignor", r.path("assignor").asText());
                }
            } else {
                props.put("session.timeout.ms", r.path("session_timeout_ms").asText());
                props.put("heartbeat.interval.ms", r.path("heartbeat_interval_ms").asText());
                props.put("partition.assignment.strategy", ASSIGNORS.get(r.path("assignor").asText("")));
            }
            props.put("isolation.level", r.path("isolation").asText("read_uncommitted"));
            props.put("fetch.max.wait.ms", "200");
            props.put("metadata.max.age.ms", "2000");
            if (r.hasNonNull("instance_id")) {
                props.put("group.instance.id", r.path("instance_id").asText());
            }
        }

        void start() throws Exception {
            thread = new Thread(this, "member-" + props.get("client.id"));
            thread.setDaemon(true);
            thread.start();
            opened.get(60, TimeUnit.SECONDS);
        }

        @Override
        public void run() {
            try {
                consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
                if (regex == null) {
                    consumer.subscribe(List.of(topic));
                } else if (consumerProtocol) {
                    subscribeOnBroker(consumer, regex);
                } else {
                    consumer.subscribe(java.util.regex.Pattern.compile(regex));
                }
            } catch (Throwable t) {
                opened.completeExceptionally(t);
                return;
            }
            opened.complete(null);
            while (!stopped) {
                runTasks();
                if (stopped) {
                    break;
                }
                try {
                    List<ObjectNode> got = new ArrayList<>();
                    for (ConsumerRecord<byte[], byte[]> rec : consumer.poll(Duration.ofMillis(200))) {
                        got.add(Consume.toJson(rec));
                    }
                    Set<Integer> now = new TreeSet<>();
                    for (TopicPartition tp : consumer.assignment()) {
                        if (tp.topic().equals(topic)) {
                            now.add(tp.partition());
                        }
                    }
                    synchronized (buffer) {
                        buffer.addAll(got);
                        assignment = now;
                    }
                } catch (Throwable t) {
                    error = t;
                    sleep(100);
                }
            }
            runTasks();
        }

        void runTasks() {
            FutureTask<Object> task;
            while ((task = tasks.poll()) != null) {
                task.run();
            }
        }

        Object call(Callable<Object> action) throws Exception {
            if (!thread.isAlive()) {
                throw new IllegalStateException("the member is closed");
            }
            FutureTask<Object> task = new FutureTask<>(action);
            tasks.add(task);
            return task.get(60, TimeUnit.SECONDS);
        }

        ObjectNode take() {
            ObjectNode answer = Driver.JSON.createObjectNode();
            Throwable failed = error;
            if (failed != null) {
                error = null;
                answer.set("error", Driver.error(failed).get("error"));
            }
            ArrayNode records = answer.putArray("records");
            synchronized (buffer) {
                records.addAll(buffer);
                buffer.clear();
                Driver.intArray(answer, "assignment", assignment);
            }
            return answer;
        }

        void close() throws Exception {
            try {
                call(() -> {
                    stopped = true;
                    consumer.close(Duration.ofSeconds(10));
                    return null;
                });
            } finally {
                stopped = true;
                thread.join(30000);
            }
        }

        /** subscribe(SubscriptionPattern): the regex goes to the broker (kafka-clients 4.x only, hence reflection). */
        static void subscribeOnBroker(KafkaConsumer<byte[], byte[]> consumer, String regex) throws Exception {
            Class<?> patternClass = Class.forName("org.apache.kafka.clients.consumer.SubscriptionPattern");
            Object pattern = patternClass.getConstructor(String.class).newInstance(regex);
            KafkaConsumer.class.getMethod("subscribe", patternClass).invoke(consumer, pattern);
        }

        static void sleep(long ms) {
            try {
                Thread.sleep(ms);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
