// kafkajs against a broker with faults (tests/faults/test_kafkajs.py adds them):
// one produce, retried through the injected errors, then the record read back.
// Prints one line: RESULT {"offset": ..., "values": [...]}.
"use strict";

const path = require("path");
const { Kafka, logLevel } = require(
  path.join(__dirname, "..", "clients", "js", "node_modules", "kafkajs"));

const [bootstrap, topic] = process.argv.slice(2);

const kafka = new Kafka({
  clientId: "kafka-net-kafkajs-faults",
  brokers: [bootstrap],
  logLevel: logLevel.NOTHING,
  connectionTimeout: 3000,
  requestTimeout: 10000,
  retry: { retries: 5, initialRetryTime: 50 },
});

async function main() {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const [meta] = await producer.send({ topic, acks: -1, messages: [{ partition: 0, value: "once" }] });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: "kafkajs-faults" });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const values = [];
  await new Promise((resolve, reject) => {
    const limit = setTimeout(() => reject(new Error("no record within 20 s")), 20000);
    consumer.run({ eachMessage: async ({ message }) => {
      values.push(message.value.toString());
      clearTimeout(limit);
      resolve();
    } });
  });
  await consumer.disconnect();
  process.stdout.write("RESULT " + JSON.stringify({ offset: meta.baseOffset, values }) + "\n");
}

main().catch((err) => { console.error(err); process.exit(1); });
