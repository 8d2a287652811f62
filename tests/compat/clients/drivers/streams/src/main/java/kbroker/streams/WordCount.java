package kbroker.streams;

import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Word count with a state store "counts" whose changelog is a compacted topic.
 *
 * <p>Arguments: bootstrap application-id state-dir input-topic output-topic [processing-guarantee]
 * (at_least_once by default, or exactly_once_v2: transactions). Runs until SIGTERM;
 * prints "RUNNING" once the instance reaches that state (after restoring its store). Internal
 * topics get short segments and a low dirty ratio so that the broker cleans them quickly.
 */
public final class WordCount {
  private WordCount() {}

  public static void main(String[] args) throws InterruptedException {
    Properties props = new Properties();
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
    props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
    props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
    props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    props.put(StreamsConfig.topicPrefix("segment.ms"), "500");
    props.put(StreamsConfig.topicPrefix("min.cleanable.dirty.ratio"), "0.01");
    props.put(StreamsConfig.consumerPrefix("session.timeout.ms"), "10000");
    if (args.length > 5) {
      props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[5]);
    }

    StreamsBuilder builder = new StreamsBuilder();
    builder.<String, String>stream(args[3])
        .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\s+")))
        .groupBy((key, word) -> word)
        .count(Materialized.as("counts"))
        .toStream()
        .to(args[4], Produced.with(Serdes.String(), Serdes.Long()));

    KafkaStreams streams = new KafkaStreams(builder.build(), props);
    CountDownLatch stopped = new CountDownLatch(1);
    streams.setStateListener(
        (now, before) -> {
          if (now == KafkaStreams.State.RUNNING) {
            System.out.println("RUNNING");
            System.out.flush();
          }
          if (now == KafkaStreams.State.ERROR) {
            System.out.println("ERROR");
            System.out.flush();
          }
        });
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  streams.close();
                  stopped.countDown();
                }));
    streams.start();
    stopped.await();
  }
}
