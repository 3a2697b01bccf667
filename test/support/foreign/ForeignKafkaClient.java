// A trading service written in Java, as small as one can be: the Apache Kafka Java client with its defaults (the
// default partitioner: murmur2 of the key), run as a single source file (`java -cp <kafka-clients and slf4j jars>
// ForeignKafkaClient.java ...`). `produce <brokers> <topic>` sends one record per stdin line `key|value` and prints
// `<partition>\t<offset>` for each; `consume <brokers> <topic>` prints every record of the topic (read_committed, from
// the beginning) as one JSON line with its partition, offset, key, headers and value, until stdin closes.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ForeignKafkaClient {
  public static void main(String[] args) throws Exception {
    if (args.length != 3) throw new IllegalArgumentException("usage: produce|consume <brokers> <topic>");
    if (args[0].equals("produce")) produce(args[1], args[2]);
    else consume(args[1], args[2]);
  }

  static void produce(String brokers, String topic) throws Exception {
    Properties props = new Properties();
    props.put("bootstrap.servers", brokers);
    props.put("acks", "all");
    props.put("key.serializer", StringSerializer.class.getName());
    props.put("value.serializer", StringSerializer.class.getName());
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        int bar = line.indexOf('|');
        RecordMetadata sent =
            producer.send(new ProducerRecord<>(topic, line.substring(0, bar), line.substring(bar + 1))).get();
        System.out.println(sent.partition() + "\t" + sent.offset());
        System.out.flush();
      }
    }
  }

  static void consume(String brokers, String topic) throws Exception {
    Properties props = new Properties();
    props.put("bootstrap.servers", brokers);
    props.put("isolation.level", "read_committed");
    props.put("enable.auto.commit", "false");
    props.put("key.deserializer", StringDeserializer.class.getName());
    props.put("value.deserializer", StringDeserializer.class.getName());
    Thread stdinWatch = new Thread(() -> {
      try {
        while (System.in.read() >= 0) {}
      } catch (Exception ignored) {
      }
      System.exit(0);
    });
    stdinWatch.setDaemon(true);
    stdinWatch.start();
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
      List<TopicPartition> partitions = new ArrayList<>();
      consumer.partitionsFor(topic).forEach(p -> partitions.add(new TopicPartition(topic, p.partition())));
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      System.out.println("{\"ready\":true}");
      System.out.flush();
      for (;;) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
          StringBuilder headers = new StringBuilder();
          for (Header h : r.headers()) {
            if (headers.length() > 0) headers.append(',');
            headers.append(json(h.key())).append(':').append(json(new String(h.value(), StandardCharsets.UTF_8)));
          }
          System.out.println("{\"partition\":" + r.partition() + ",\"offset\":" + r.offset() + ",\"key\":"
              + json(r.key()) + ",\"headers\":{" + headers + "},\"value\":" + json(r.value()) + "}");
        }
        System.out.flush();
      }
    }
  }

  static String json(String text) {
    if (text == null) return "null";
    StringBuilder out = new StringBuilder("\"");
    for (char c : text.toCharArray()) {
      if (c == '"' || c == '\\') out.append('\\').append(c);
      else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
      else out.append(c);
    }
    return out.append('"').toString();
  }
}
